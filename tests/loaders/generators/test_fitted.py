"""The ``fitted`` generator: target load, determinism, demands by class, registry."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import WorkloadModelError
from schedlab.jobset import offered_load
from schedlab.loaders.generators.fitted import FittedGenerator
from schedlab.registry import generators
from tests.fit_helpers import known_model


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    known_model(kind="nhpp", batches=True).save(path)
    return path


def _n_jobsets(gen: FittedGenerator, load: float, jobs: int = 60_000) -> int:
    return math.ceil(jobs / (gen.arrival_window() * gen.rate_for_load(load)))


@pytest.mark.parametrize("load", [0.3, 0.9, 1.5])
def test_realised_load_matches_the_target(model_path: Path, load: float) -> None:
    gen = FittedGenerator(model=str(model_path))
    js = gen.generate(load, n_jobsets=_n_jobsets(gen, load), seed=3)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.03)


def test_realised_load_matches_with_window_to_window_modulation(tmp_path: Path) -> None:
    model = known_model(kind="nhpp", batches=True)
    arrivals = replace(model.arrivals, modulation=(0.2, 0.8, 2.0), modulation_window=200)
    path = tmp_path / "modulated.json"
    replace(model, arrivals=arrivals).save(path)
    gen = FittedGenerator(model=str(path))
    js = gen.generate(0.9, n_jobsets=_n_jobsets(gen, 0.9, 90_000), seed=4)
    assert offered_load(js)["load"].item() == pytest.approx(0.9, rel=0.03)
    per = offered_load(js, per_jobset=True)["load"].to_numpy()
    flat = FittedGenerator(model=str(path), modulate=False).generate(0.9, n_jobsets=300, seed=4)
    per_flat = offered_load(flat, per_jobset=True)["load"].to_numpy()
    assert np.std(per) > 1.5 * np.std(per_flat)  # jobsets differ like the trace's windows


def test_load_per_rate_is_the_mean_work_per_job(model_path: Path) -> None:
    gen = FittedGenerator(model=str(model_path), window=10_000)
    js = gen.generate_rates([0.5], n_jobsets=20, seed=5)
    jobs = js.jobs
    work = (jobs["duration"] * jobs["cpu"]).sum(), (jobs["duration"] * jobs["mem"]).sum()
    per_job = max(work) / 10.0 / len(js)
    assert gen.load_per_rate() == pytest.approx(per_job, rel=0.03)


def test_same_seed_same_jobsets_and_provenance(model_path: Path) -> None:
    gen = generators.make("fitted", model=str(model_path))
    a = gen.generate(0.7, n_jobsets=10, seed=1)
    b = gen.generate(0.7, n_jobsets=10, seed=1)
    c = gen.generate(0.7, n_jobsets=10, seed=2)
    assert a.jobs.equals(b.jobs)
    assert not a.jobs.equals(c.jobs)
    prov = a.meta.provenance
    assert prov["generator"] == "fitted"
    assert prov["params"]["model"] == str(model_path)
    assert len(prov["model_sha256"]) == 64
    assert a.meta.time_step_seconds == 60.0
    assert a.meta.units == ("core", "GB")
    assert a.meta.arrival_window == 200


def test_demands_follow_the_duration_class(model_path: Path) -> None:
    js = FittedGenerator(model=str(model_path)).generate(1.0, n_jobsets=100, seed=6)
    d = js.jobs["duration"].to_numpy()
    pairs = js.jobs.select("cpu", "mem").rows()
    short = {p for p, x in zip(pairs, d, strict=True) if x <= 10}
    long_ = {p for p, x in zip(pairs, d, strict=True) if x > 10}
    assert short == {(1.0, 2.0), (2.0, 1.0)}
    assert long_ == {(4.0, 4.0), (1.0, 1.0), (6.0, 2.0)}
    assert d.min() >= 1
    assert d.max() <= 2000


def test_batches_arrive_together(model_path: Path) -> None:
    js = FittedGenerator(model=str(model_path)).generate(0.5, n_jobsets=200, seed=7)
    per_step = js.jobs.group_by("jobset", "arrival").len()["len"].to_numpy()
    assert (per_step == 5).mean() > 0.05  # batches of 5 jobs (10% of batches)


def test_length_buckets_cover_every_duration(model_path: Path) -> None:
    buckets = FittedGenerator(model=str(model_path)).length_buckets()
    assert list(buckets) == ["short", "medium", "long"]
    assert buckets["short"][0] == 1
    assert buckets["long"][1] == 2000
    assert buckets["short"][1] + 1 == buckets["medium"][0]


def test_bad_model_path_and_window(tmp_path: Path, model_path: Path) -> None:
    with pytest.raises(WorkloadModelError, match="no such workload model file"):
        FittedGenerator(model=str(tmp_path / "missing.json")).generate(0.5, n_jobsets=1, seed=0)
    with pytest.raises(ValueError, match="window must be >= 1 step"):
        FittedGenerator(model=str(model_path), window=0).generate(0.5, n_jobsets=1, seed=0)
