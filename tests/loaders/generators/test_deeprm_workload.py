"""DeepRM workload generator (design.md §3, §8)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator

SHORT = {1, 2, 3}
LONG = set(range(10, 16))


@pytest.fixture(scope="module")
def jobs07() -> JobSet:
    """About 19,000 jobs at load 0.7."""
    return DeepRMGenerator().generate(0.7, n_jobsets=1000, seed=20240601)


def _arrivals_per_step(js: JobSet) -> pl.Series:
    return js.jobs.group_by("jobset", "arrival").len().get_column("len")


@pytest.mark.parametrize(
    ("load", "n_jobsets", "arrivals"),
    [
        (0.3, 4000, "bernoulli"),
        (0.7, 2000, "bernoulli"),
        (1.3, 1000, "bernoulli"),
        (1.9, 1000, "bernoulli"),
        (0.3, 4000, "poisson"),
        (0.7, 2000, "poisson"),
        (1.9, 1000, "poisson"),
    ],
)
def test_realised_load_matches_target(load: float, n_jobsets: int, arrivals: str) -> None:
    gen = DeepRMGenerator(arrivals=arrivals)
    js = gen.generate(load, n_jobsets=n_jobsets, seed=7)
    realised = offered_load(js)["load"].item()
    assert realised == pytest.approx(load, rel=0.03)
    # ~30,000 jobs in every case: the expected count follows from the rate
    expected_jobs = n_jobsets * js.meta.arrival_window * gen.rate_for_load(load)
    assert len(js) == pytest.approx(expected_jobs, rel=0.03)


def test_bernoulli_arrivals_at_most_one_per_step_below_full_rate(jobs07: JobSet) -> None:
    assert _arrivals_per_step(jobs07).max() == 1


def test_high_load_has_several_arrivals_per_step() -> None:
    gen = DeepRMGenerator()
    assert gen.rate_for_load(1.9) > 1
    js = gen.generate(1.9, n_jobsets=50, seed=3)
    counts = _arrivals_per_step(js)
    assert counts.max() == 2  # binomial with n_max = ceil(rate) = 2
    assert (counts == 2).sum() > 100


def test_poisson_arrivals_can_exceed_one_per_step() -> None:
    js = DeepRMGenerator(arrivals="poisson").generate(0.7, n_jobsets=200, seed=3)
    assert _arrivals_per_step(js).max() >= 2


def test_duration_split(jobs07: JobSet) -> None:
    dur = jobs07.jobs.get_column("duration")
    short = dur.is_in(list(SHORT))
    assert short.mean() == pytest.approx(0.8, abs=0.02)
    assert set(dur.filter(short).unique().to_list()) == SHORT
    assert set(dur.filter(~short).unique().to_list()) == LONG


def test_demands_have_one_dominant_resource(jobs07: JobSet) -> None:
    d = jobs07.demands()
    assert jobs07.resources == ("cpu", "mem")
    assert np.array_equal(d, np.round(d))  # integer-valued slots
    dominant = d >= 5
    assert np.all(dominant.sum(axis=1) == 1)
    assert set(np.unique(d[dominant]).tolist()) == {5.0, 6.0, 7.0, 8.0, 9.0, 10.0}
    assert set(np.unique(d[~dominant]).tolist()) == {1.0, 2.0}
    assert dominant[:, 0].mean() == pytest.approx(0.5, abs=0.03)


def test_three_resources() -> None:
    gen = DeepRMGenerator(n_resources=3)
    js = gen.generate(0.5, n_jobsets=200, seed=5)
    assert js.resources == ("r0", "r1", "r2")
    assert js.meta.capacity == (10.0, 10.0, 10.0)
    d = js.demands()
    assert np.all((d >= 5).sum(axis=1) == 1)
    assert np.all((d >= 1) & (d <= 10))
    assert gen.load_per_rate() == pytest.approx(4.1 * (7.5 + 2 * 1.5) / 3 / 10)


def test_paper_variant() -> None:
    gen = DeepRMGenerator(variant="paper")
    assert gen.capacity() == (20.0, 20.0)
    assert gen.load_per_rate() == pytest.approx(0.9225)
    js = gen.generate(0.7, n_jobsets=1000, seed=11)
    assert js.meta.capacity == (20.0, 20.0)
    d = js.demands()
    assert d.min() == 1.0
    assert d.max() == 10.0  # same slots, twice the capacity: 0.25-0.5 r and 0.05-0.1 r
    assert offered_load(js)["load"].item() == pytest.approx(0.7, rel=0.03)


def test_res_slot_is_a_bigger_cluster_for_the_same_jobs() -> None:
    """Guo et al. 2021, Fig. 10: at the same rate and seed, res_slot only changes the capacity."""
    small = DeepRMGenerator(arrivals="poisson").generate_rates([0.7], n_jobsets=50, seed=3)
    for slots in (20, 40):
        gen = DeepRMGenerator(arrivals="poisson", res_slot=slots)
        assert gen.capacity() == (float(slots),) * 2
        assert gen.load_per_rate() == pytest.approx(1.845 * 10 / slots)
        big = gen.generate_rates([0.7], n_jobsets=50, seed=3)
        assert big.meta.capacity == (float(slots),) * 2
        assert big.jobs.drop("load").equals(small.jobs.drop("load"))
    assert DeepRMGenerator(variant="paper", res_slot=10).capacity() == (10.0, 10.0)


def test_load_rate_conversion() -> None:
    gen = DeepRMGenerator()
    assert gen.load_per_rate() == pytest.approx(1.845)
    assert gen.rate_for_load(1.845) == pytest.approx(1.0)
    for load in (0.1, 0.7, 1.9):
        assert gen.rate_for_load(load) * gen.load_per_rate() == pytest.approx(load)
    assert DeepRMGenerator(variant="paper").rate_for_load(0.9225) == pytest.approx(1.0)


@pytest.mark.parametrize("load", [0.0, -0.5, math.nan])
def test_non_positive_load_is_rejected(load: float) -> None:
    gen = DeepRMGenerator()
    with pytest.raises(ValueError, match=r"target load must be > 0, got"):
        gen.rate_for_load(load)
    with pytest.raises(ValueError, match=r"target load must be > 0"):
        gen.generate(load, n_jobsets=3, seed=0)


def test_metadata(jobs07: JobSet) -> None:
    meta = jobs07.meta
    assert meta.resources == ("cpu", "mem")
    assert meta.capacity == (10.0, 10.0)
    assert meta.units == ("slot", "slot")
    assert meta.arrival_window == 50
    assert meta.length_buckets == {"short": (1, 3), "long": (10, 15)}
    prov = meta.provenance
    assert prov["generator"] == "deeprm"
    assert prov["seed"] == 20240601
    assert prov["loads"] == [0.7]
    assert prov["rates"] == pytest.approx([0.7 / 1.845])
    assert prov["n_jobsets_per_load"] == 1000
    assert prov["params"]["arrivals"] == "bernoulli"
    assert prov["params"]["short_durations"] == [1, 3]
    present = set(jobs07.jobset_ids)
    assert meta.empty_jobsets == tuple(k for k in range(1000) if k not in present)


def test_jobs_table(jobs07: JobSet) -> None:
    jobs = jobs07.jobs
    assert jobs.get_column("load").unique().to_list() == [0.7]
    assert jobs.get_column("arrival").min() >= 0
    assert jobs.get_column("arrival").max() == 49
    assert set(jobs07.jobset_ids) <= set(range(1000))
    # job ids number the jobs of each jobset 0, 1, ... in arrival order
    ids = jobs.group_by("jobset").agg(
        pl.col("job_id").min().alias("lo"), pl.col("job_id").max().alias("hi"), pl.len()
    )
    assert (ids["lo"] == 0).all()
    assert (ids["hi"] == ids["len"] - 1).all()


def test_non_int_seed_is_rejected() -> None:
    with pytest.raises(TypeError, match="seed must be an int"):
        DeepRMGenerator().generate(1.0, n_jobsets=20, seed=np.random.default_rng(2))


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    gen = DeepRMGenerator()
    a = gen.generate(0.9, n_jobsets=100, seed=42)
    b = gen.generate(0.9, n_jobsets=100, seed=42)
    assert a.jobs.equals(b.jobs)
    assert a.meta == b.meta
    a.write_parquet(tmp_path / "a.parquet")
    b.write_parquet(tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_numpy_int_seed_is_the_int_seed() -> None:
    gen = DeepRMGenerator()
    a = gen.generate(0.9, n_jobsets=50, seed=42)
    b = gen.generate(0.9, n_jobsets=50, seed=np.int64(42))
    assert a.jobs.equals(b.jobs)
    assert b.meta.provenance["seed"] == 42


def test_different_seed_differs() -> None:
    gen = DeepRMGenerator()
    a = gen.generate(0.9, n_jobsets=100, seed=42)
    b = gen.generate(0.9, n_jobsets=100, seed=43)
    assert not a.jobs.equals(b.jobs)


def test_round_trip_keeps_metadata(tmp_path: Path, jobs07: JobSet) -> None:
    path = tmp_path / "deeprm.parquet"
    jobs07.write_parquet(path)
    back = JobSet.read_parquet(path)
    assert back.jobs.equals(jobs07.jobs)
    assert back.meta == jobs07.meta


def test_generate_sweep() -> None:
    gen = DeepRMGenerator()
    loads = [0.05, 0.9, 1.5]
    n = 60
    js = gen.generate_sweep(loads, n_jobsets=n, seed=11)
    per = js.jobs.group_by("jobset").agg(pl.col("load").unique()).sort("jobset")
    for jobset, load in per.iter_rows():
        assert load == [loads[jobset // n]]
    present = set(js.jobset_ids)
    assert present <= set(range(n * len(loads)))
    for i in (1, 2):  # high enough loads: every jobset of the block has jobs
        assert set(range(i * n, (i + 1) * n)) <= present
    prov = js.meta.provenance
    assert prov["loads"] == loads
    assert prov["rates"] == pytest.approx([x / 1.845 for x in loads])
    assert prov["seed"] == 11
    assert prov["n_jobsets_per_load"] == n
    assert js.meta.empty_jobsets == tuple(sorted(set(range(n * len(loads))) - present))
    assert len(js.meta.empty_jobsets) > 0  # at load 0.05 about a quarter are empty
    assert js.meta.length_buckets == {"short": (1, 3), "long": (10, 15)}
    assert js.jobs.schema["load"] == pl.Float64


def test_sweep_blocks_match_single_generations() -> None:
    gen = DeepRMGenerator()
    loads = [0.4, 1.2]
    js = gen.generate_sweep(loads, n_jobsets=30, seed=9)
    first = gen.generate(loads[0], n_jobsets=30, seed=9)  # child 0 of the same SeedSequence
    assert js.jobs.filter(pl.col("load") == loads[0]).equals(first.jobs)
    second = js.jobs.filter(pl.col("load") == loads[1])
    assert second.get_column("jobset").min() >= 30
    assert not second.drop("jobset", "load").equals(first.jobs.drop("jobset", "load"))


def test_registry_makes_the_generator() -> None:
    from schedlab.registry import generators

    gen = generators.make("deeprm", variant="paper")
    assert isinstance(gen, DeepRMGenerator)
    assert gen.capacity() == (20.0, 20.0)


def test_low_load_counts_empty_jobsets_in_the_span() -> None:
    js = DeepRMGenerator().generate(0.1, n_jobsets=3000, seed=5)
    assert len(js.meta.empty_jobsets) > 100  # ~6.5% of jobsets have no arrival at 10%
    assert offered_load(js)["load"].item() == pytest.approx(0.1, rel=0.03)
