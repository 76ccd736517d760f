"""DeepRM_Plus Poisson workload generator (Guo et al. 2021, §V-B, design.md §3)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.loaders.generators.poisson import PoissonGenerator
from tests.loader_helpers import assert_seed_reproducible


def _n_jobsets(gen: PoissonGenerator, load: float, jobs: int = 60_000) -> int:
    """Jobsets holding about ``jobs`` jobs: enough for a realised load within ~0.6% (1 sd)."""
    return math.ceil(jobs / (gen.window * gen.rate_for_load(load)))


def _counts_per_step(js: JobSet, n_jobsets: int) -> np.ndarray:
    """Arrivals at every (jobset, step), zeros included, shape ``(n_jobsets, window)``."""
    w = js.meta.arrival_window
    jobs = js.jobs
    key = jobs.get_column("jobset").to_numpy() * w + jobs.get_column("arrival").to_numpy()
    return np.bincount(key, minlength=n_jobsets * w).reshape(n_jobsets, w)


@pytest.mark.parametrize("load", [0.3, 0.7, 1.3, 1.9])
def test_realised_load_matches_target(load: float) -> None:
    gen = PoissonGenerator()
    n = _n_jobsets(gen, load)
    js = gen.generate(load, n_jobsets=n, seed=17)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.03)
    assert len(js) == pytest.approx(n * 50 * load / 1.845, rel=0.03)


@pytest.mark.parametrize("rate", [0.3, 0.7, 1.2])
def test_counts_per_step_are_poisson(rate: float) -> None:
    gen = PoissonGenerator()
    n = 1000
    counts = _counts_per_step(gen.generate_rates([rate], n_jobsets=n, seed=5), n)
    assert counts.mean() == pytest.approx(rate, rel=0.02)
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.04)  # index of dispersion
    assert (counts == 0).mean() == pytest.approx(math.exp(-rate), abs=0.01)
    # independent across steps: neighbouring steps are uncorrelated
    lag1 = np.corrcoef(counts[:, :-1].ravel(), counts[:, 1:].ravel())[0, 1]
    assert abs(lag1) < 0.02


def test_job_model_is_deeprm_plus() -> None:
    js = PoissonGenerator().generate(1.0, n_jobsets=500, seed=3)
    assert js.resources == ("cpu", "mem")
    assert js.meta.capacity == (10.0, 10.0)  # r = 10
    dur = js.jobs.get_column("duration").to_numpy()
    short = dur <= 3
    assert short.mean() == pytest.approx(0.8, abs=0.02)
    assert set(np.unique(dur[short])) == {1, 2, 3}
    assert set(np.unique(dur[~short])) == set(range(10, 16))
    d = js.demands() / 10.0  # in units of r
    primary = d >= 0.5
    assert np.all(primary.sum(axis=1) == 1)
    assert set(np.unique(d[primary])) == {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}  # 0.5r-1r
    assert set(np.unique(d[~primary])) == {0.1, 0.2}  # 0.1r-0.2r
    assert primary[:, 0].mean() == pytest.approx(0.5, abs=0.03)


def test_is_deeprm_with_poisson_arrivals() -> None:
    """The job model is DeepRM's (shared code): same seed, same jobs."""
    a = PoissonGenerator().generate(0.8, n_jobsets=40, seed=9)
    b = DeepRMGenerator(arrivals="poisson").generate(0.8, n_jobsets=40, seed=9)
    assert a.jobs.equals(b.jobs)
    assert a.meta.provenance["generator"] == "poisson"
    assert b.meta.provenance["generator"] == "deeprm"


def test_arrivals_are_fixed_to_poisson() -> None:
    with pytest.raises(TypeError, match="arrivals"):
        PoissonGenerator(arrivals="bernoulli")
    assert PoissonGenerator().arrivals == "poisson"


def test_rate_and_load_conversions() -> None:
    gen = PoissonGenerator()
    assert gen.load_per_rate() == pytest.approx(1.845)
    assert gen.load_for_rate(0.7) == pytest.approx(1.2915)  # the paper's "140% load"
    assert gen.rate_for_load(1.4) == pytest.approx(1.4 / 1.845)
    for rate in (0.05, 0.7, 1.5):
        assert gen.rate_for_load(gen.load_for_rate(rate)) == pytest.approx(rate)


@pytest.mark.parametrize("rate", [0.0, -1.0, math.nan])
def test_non_positive_rate_is_rejected(rate: float) -> None:
    with pytest.raises(ValueError, match=r"arrival rate must be > 0 jobs per step, got"):
        PoissonGenerator().load_for_rate(rate)


def test_generate_rates_records_load_and_rate() -> None:
    gen = PoissonGenerator()
    js = gen.generate_rates([0.7, 0.2], n_jobsets=400, seed=2)
    prov = js.meta.provenance
    assert prov["generator"] == "poisson"
    assert prov["rates"] == pytest.approx([0.7, 0.2])
    assert prov["loads"] == pytest.approx([1.2915, 0.369])
    assert prov["params"]["arrivals"] == "poisson"
    assert prov["params"]["window"] == 50
    assert prov["seed"] == 2
    first = js.jobs.filter(js.jobs["jobset"] < 400)
    assert first.height / (400 * 50) == pytest.approx(0.7, rel=0.03)
    assert first.get_column("load").unique().to_list() == [pytest.approx(1.2915)]
    # the same jobs as asking for the load directly
    loads = [round(gen.load_for_rate(r), 12) for r in (0.7, 0.2)]  # rounded as recorded
    same = gen.generate_sweep(loads, n_jobsets=400, seed=2)
    assert same.jobs.equals(js.jobs)


def test_window_sets_jobs_per_jobset() -> None:
    """DeepRM_Plus's 5-50 jobs per jobset: 50·λ on average over the default 50-step window."""
    js = PoissonGenerator().generate_rates([0.1, 0.95], n_jobsets=200, seed=4)
    sizes = js.jobs.group_by("jobset").len()
    low = sizes.filter(sizes["jobset"] < 200).get_column("len").to_numpy()
    high = sizes.filter(sizes["jobset"] >= 200).get_column("len").to_numpy()
    assert low.sum() / 200 == pytest.approx(5, rel=0.1)
    assert high.mean() == pytest.approx(47.5, rel=0.05)
    assert js.meta.arrival_window == 50
    assert js.jobs.get_column("arrival").max() == 49
    wide = PoissonGenerator(window=20).generate(1.0, n_jobsets=50, seed=4)
    assert wide.meta.arrival_window == 20
    assert wide.jobs.get_column("arrival").max() == 19


def test_same_seed_same_jobset_different_seed_differs() -> None:
    assert_seed_reproducible(PoissonGenerator(), 1.1, n_jobsets=50)


def test_registry_makes_the_generator() -> None:
    from schedlab.registry import generators

    gen = generators.make("poisson")
    assert isinstance(gen, PoissonGenerator)
    assert gen == PoissonGenerator()
    assert generators.make("Poisson", window=30).window == 30


def test_cli_generates_poisson(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    args = ["generate", "poisson", "--load", "1.4", "--jobsets", "5", "--seed", "1"]
    result = CliRunner().invoke(main, [*args, "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    js = JobSet.read_parquet(out)
    assert set(js.jobset_ids) | set(js.meta.empty_jobsets) == set(range(5))
    prov = js.meta.provenance
    assert prov["generator"] == "poisson"
    assert prov["loads"] == [1.4]
    assert prov["rates"] == pytest.approx([1.4 / 1.845])
    assert prov["seed"] == 1
    assert js.jobs.equals(PoissonGenerator().generate(1.4, n_jobsets=5, seed=1).jobs)
