"""Liu's hybrid multi-cluster workload (ICPP'20, §3–§5): job model, load, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.generators.liu_multicluster import (
    CATEGORIES,
    LIU_CAPACITIES,
    LiuMultiClusterGenerator,
)
from schedlab.simulator.multicluster.jobs import most_likely


@pytest.fixture(scope="module")
def natural() -> JobSet:
    gen = LiuMultiClusterGenerator()
    return gen.generate_rates([gen.natural_rate()], n_jobsets=6, seed=3)


def test_episodes_are_n_jobs_at_the_patterns_own_intervals(natural: JobSet) -> None:
    per = natural.jobs.group_by("jobset").len()
    assert per.get_column("len").to_list() == [1000] * 6
    gaps = natural.jobs.select(pl.col("arrival").diff().over("jobset")).drop_nulls()
    g = gaps.get_column("arrival").to_numpy()
    assert g.min() >= 1
    assert g.max() <= 33
    assert g.mean() == pytest.approx(17, rel=0.03)
    assert LiuMultiClusterGenerator().natural_rate() == pytest.approx(1 / 17)


def test_job_columns_follow_the_documented_model(natural: JobSet) -> None:
    jobs = natural.jobs
    cat = jobs.get_column("category").to_numpy()
    assert set(cat) == set(CATEGORIES)
    shares = [np.mean(cat == c) for c in CATEGORIES]
    np.testing.assert_allclose(shares, [0.3, 0.3, 0.4], atol=0.03)
    runs = jobs.get_column("executions").to_numpy()
    assert set(np.unique(runs[cat == "streaming"])) <= set(range(10, 31))
    assert (runs[cat != "streaming"] == 1).all()
    std = jobs.get_column("standard_time").to_numpy()
    assert (jobs.get_column("duration").to_numpy() == std * runs).all()
    deadline = jobs.get_column("deadline")
    assert (deadline.is_null().to_numpy() == (cat == "general")).all()
    dl = deadline.to_numpy()[cat != "general"]
    assert (dl >= np.ceil(1.15 * std[cat != "general"]) - 1).all()
    requests = np.asarray(jobs.get_column("requests").to_numpy())
    assert requests.shape == (len(jobs), 5, 10)
    assert (requests >= 1).all()
    assert (requests <= np.asarray(LIU_CAPACITIES)[None, :, None]).all()
    usual = most_likely(requests)
    counts = (requests == usual[:, :, None]).sum(axis=2)
    assert (counts >= 6).all()  # at most 4 burst entries: the usual request is the mode
    steady = requests[cat != "streaming"]
    assert (steady == steady[:, :, :1]).all()  # one fixed request per cluster
    transfer = np.asarray(jobs.get_column("transfer").to_numpy())
    assert transfer.shape == (len(jobs), 5)
    assert (transfer >= 0).all()
    assert (transfer <= 0.15 * std[:, None]).all()
    np.testing.assert_allclose(jobs.get_column("executors").to_numpy(), requests.mean(axis=(1, 2)))
    h, sen = jobs.get_column("hetero").to_numpy(), jobs.get_column("sensitivity").to_numpy()
    assert h.min() >= 55
    assert h.max() <= 95
    assert sen.min() >= 1
    assert sen.max() <= 5


@pytest.mark.parametrize("pattern", ["uniform", "bernoulli", "beta"])
@pytest.mark.parametrize("load", [0.5, 0.9])
def test_realised_load_matches_the_target(pattern: str, load: float) -> None:
    gen = LiuMultiClusterGenerator(pattern=pattern, n_jobs=500)
    js = gen.generate(load, n_jobsets=24, seed=11)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.03)


def test_stress_falls_with_b_as_in_liu() -> None:
    loads = [LiuMultiClusterGenerator(b=b).natural_load() for b in (33, 36, 40)]
    assert loads == sorted(loads, reverse=True)
    assert loads[0] == pytest.approx(0.846, abs=0.01)
    assert loads[2] / loads[0] == pytest.approx(17 / 20.5)


def test_same_parameters_and_seed_give_the_same_jobset() -> None:
    gen = LiuMultiClusterGenerator(pattern="beta", n_jobs=50)
    a = gen.generate(0.7, n_jobsets=2, seed=4)
    b = gen.generate(0.7, n_jobsets=2, seed=4)
    assert a.jobs.equals(b.jobs)
    assert not a.jobs.equals(gen.generate(0.7, n_jobsets=2, seed=5).jobs)
    assert a.meta.provenance["params"]["pattern"] == "beta"


def test_jobsets_survive_parquet(tmp_path: Path) -> None:
    gen = LiuMultiClusterGenerator(n_jobs=20)
    js = gen.generate(0.8, n_jobsets=2, seed=0)
    js.write_parquet(tmp_path / "liu.parquet")
    back = JobSet.read_parquet(tmp_path / "liu.parquet")
    assert back.jobs.equals(js.jobs)
    assert back.jobs.schema["requests"] == pl.Array(pl.Int64, (5, 10))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pattern": "poisson"}, "pattern must be one of"),
        ({"category_probs": (0.5, 0.5, 0.5)}, "summing to 1"),
        ({"burst_entries": (0, 5)}, "burst_entries"),
        ({"request": ((0, 10), (1, 2), (1, 2))}, "1 <= low <= high"),
        ({"n_jobs": 0}, "n_jobs >= 1"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LiuMultiClusterGenerator(**kwargs).generate(0.5, n_jobsets=1, seed=0)
