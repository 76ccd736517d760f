"""Utilisation, queue length and fragmentation over time, from per-job results and demands."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.errors import ResultsError
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.schedules import Schedules, representative_jobset, schedules
from schedlab.evaluation.timeline import binned, mean_timeline, timeline, timeline_summary
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.policies.heuristics import FCFS, SJF
from schedlab.results import Results
from schedlab.simulator.run import simulate
from tests.strategies import jobs_frame

META = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 10.0))


def hand_schedule() -> Schedules:
    """One policy, one jobset, capacity (10, 10):

    job 0: arrives 0, runs 0..3 (steps 0, 1, 2), demands (6, 1)
    job 1: arrives 0, runs 3..4 (step 3), demands (8, 2): waits at 0..2, never fits (2 free)
    job 2: arrives 1, runs 1..2 (step 1), demands (2, 2): runs beside job 0
    job 3: arrives 2, runs 5..6 (step 5), demands (1, 1): waits at 2..4; fits at 2 and 4
    """
    table = jobs_frame(
        arrival=[0, 0, 1, 2],
        start=[0, 3, 1, 5],
        finish=[3, 4, 2, 6],
        duration=[3, 1, 1, 1],
        cpu=[6.0, 8.0, 2.0, 1.0],
        mem=[1.0, 2.0, 2.0, 1.0],
    ).insert_column(0, pl.Series("policy", ["p"] * 4))
    return Schedules(table, ("cpu", "mem"), (10.0, 10.0), {})


def test_timeline_matches_a_hand_computed_schedule() -> None:
    tl = timeline(hand_schedule())
    assert tl.get_column("time").to_list() == [0, 1, 2, 3, 4, 5, 6]  # every step is an event
    assert tl.get_column("running").to_list() == [1, 2, 1, 1, 0, 1, 0]
    assert tl.get_column("queue").to_list() == [1, 1, 2, 1, 1, 0, 0]
    assert tl.get_column("util_cpu").to_list() == pytest.approx([0.6, 0.8, 0.6, 0.8, 0, 0.1, 0])
    assert tl.get_column("util_mem").to_list() == pytest.approx([0.1, 0.3, 0.1, 0.2, 0, 0.1, 0])
    # queued work: waiting jobs' cpu share x run time (job 1: 0.8 x 1, job 3: 0.1 x 1)
    assert tl.get_column("queued_work").to_list() == pytest.approx([0.8, 0.8, 0.9, 0.1, 0.1, 0, 0])
    # t=0: job 1 (8 cpu) waits, 4 cpu free: stranded. t=1: 2 cpu free, still stranded.
    # t=2: job 3 (1, 1) fits into (4, 9): not fragmentation. t=3: job 3 fits (2, 8): none.
    # t=4: nothing runs, job 3 waits and fits: none. t=5: nobody waits.
    assert tl.get_column("frag_cpu").to_list() == pytest.approx([0.4, 0.2, 0, 0, 0, 0, 0])
    assert tl.get_column("frag_mem").to_list() == pytest.approx([0.9, 0.7, 0, 0, 0, 0, 0])
    assert tl.get_column("fragmentation").to_list() == pytest.approx([0.65, 0.45, 0, 0, 0, 0, 0])


def test_timeline_summary_averages_over_the_makespan() -> None:
    s = timeline_summary(timeline(hand_schedule())).row(0, named=True)
    assert s["makespan"] == 6
    assert s["mean_queue"] == pytest.approx(6 / 6)
    assert s["max_queue"] == 2
    assert s["mean_util_cpu"] == pytest.approx((0.6 + 0.8 + 0.6 + 0.8 + 0.1) / 6)
    assert s["mean_fragmentation"] == pytest.approx((0.65 + 0.45) / 6)


def test_mean_timeline_pads_finished_jobsets_with_zeros() -> None:
    one = hand_schedule().jobs
    short = one.filter(pl.col("job_id") == 2).with_columns(jobset=pl.lit(1, pl.Int32))
    s = Schedules(pl.concat([one, short]), ("cpu", "mem"), (10.0, 10.0), {})
    m = mean_timeline(timeline(s))
    assert m.get_column("n_jobsets").unique().to_list() == [2]
    assert m.get_column("time").to_list() == [0, 1, 2, 3, 4, 5, 6]
    # jobset 1: job 2 arrives at 1 and runs at 1; makespan 2 (steps 0, 1)
    assert m.get_column("active").to_list() == pytest.approx([1, 1, 0.5, 0.5, 0.5, 0.5, 0])
    assert m.get_column("running").to_list() == pytest.approx([0.5, 1.5, 0.5, 0.5, 0, 0.5, 0])
    assert m.get_column("util_cpu")[5] == pytest.approx(0.05)


@pytest.fixture(scope="module")
def sim() -> tuple[JobSet, Results]:
    js = DeepRMGenerator().generate_sweep([0.7, 1.5], n_jobsets=6, seed=11)
    return js, simulate(js, [SJF(), FCFS()])


def test_timeline_conserves_work_waiting_and_capacity(sim: tuple[JobSet, Results]) -> None:
    js, res = sim
    s = schedules(res, js)
    tl = timeline(s)
    held = (pl.col("time").shift(-1).over("policy", "jobset") - pl.col("time")).fill_null(0)
    per = (
        tl.with_columns(held.alias("held"))
        .group_by("policy", "jobset")
        .agg(
            (pl.col("running") * pl.col("held")).sum(),
            (pl.col("queue") * pl.col("held")).sum(),
            (pl.col("util_cpu") * pl.col("held")).sum(),
            pl.col("time").max().alias("span"),
        )
    )
    jobs = s.jobs.group_by("policy", "jobset").agg(
        pl.col("duration").sum().alias("work"),
        pl.col("wait").sum().alias("waited"),
        (pl.col("cpu") * pl.col("duration")).sum().alias("cpu_work"),
        pl.col("finish").max().alias("makespan"),
    )
    both = per.join(jobs, on=["policy", "jobset"])
    assert both.height == res.table.select("policy", "jobset").unique().height
    assert (both["running"] == both["work"]).all()  # every job runs for its duration
    assert (both["queue"] == both["waited"]).all()  # and waits from arrival to start
    assert (both["span"] == both["makespan"]).all()
    np.testing.assert_allclose(both["util_cpu"] * 10.0, both["cpu_work"])
    for col in ("util_cpu", "util_mem", "frag_cpu", "frag_mem", "fragmentation"):
        assert tl.get_column(col).is_between(0.0, 1.0).all(), col
    # fragmented capacity is free capacity: never more than what is not in use
    assert (tl["frag_cpu"] <= 1 - tl["util_cpu"] + 1e-12).all()


def test_schedules_join_demands_and_check_the_jobset(sim: tuple[JobSet, Results]) -> None:
    js, res = sim
    s = schedules(res, js)
    assert s.resources == ("cpu", "mem")
    assert s.capacity == (10.0, 10.0)
    assert s.length_buckets == {"short": (1, 3), "long": (10, 15)}
    assert s.jobs.height == res.table.height
    joined = s.jobs.join(js.jobs, on=["jobset", "job_id"], suffix="_js")
    assert (joined["cpu"] == joined["cpu_js"]).all()
    with pytest.raises(ResultsError, match="pass the JobSet"):
        schedules(res)
    again = schedules(Results(s.jobs, res.meta))  # demand columns already in the table
    assert again.jobs.equals(s.jobs)
    other = DeepRMGenerator().generate_sweep([0.7, 1.5], n_jobsets=6, seed=12)
    with pytest.raises(ResultsError, match="not simulated on it"):
        schedules(res, other)


def test_select_names_what_is_missing(sim: tuple[JobSet, Results]) -> None:
    js, res = sim
    s = schedules(res, js)
    k = s.jobs.get_column("jobset")[0]
    one = s.select(policies=["sjf"], jobsets=[k])
    assert set(one.jobs.get_column("policy")) == {"sjf"}
    assert set(one.jobs.get_column("jobset")) == {k}
    assert set(s.select(load=1.5).jobs.get_column("load")) == {1.5}
    with pytest.raises(ResultsError, match=r"policy \['hrrn'\] not in the results"):
        s.select(policies=["hrrn"])
    with pytest.raises(ResultsError, match=r"jobset \[9999\]"):
        s.select(jobsets=[9999])
    with pytest.raises(ResultsError, match=r"no results at offered load 0\.9"):
        s.select(load=0.9)


def test_representative_jobset_is_the_median_of_the_reference() -> None:
    pj = pl.DataFrame(
        {
            "policy": ["a"] * 4 + ["b"] * 4,
            "load": [1.0] * 8,
            "jobset": [10, 11, 12, 13] * 2,
            "slowdown": [4.0, 1.0, 3.0, 2.0, 9.0, 9.0, 9.0, 1.0],
        }
    )
    assert representative_jobset(pj, reference="a") == 13  # sorted 1, 2, 3, 4: lower middle
    assert representative_jobset(pj, reference="b") == 10  # ties at 9 go to the lower id
    assert representative_jobset(pj.head(3), reference="a", load=1.0) == 12
    with pytest.raises(ResultsError, match=r"policy 'c' has no jobset at offered load 2\.0"):
        representative_jobset(pj, reference="c", load=2.0)


def test_representative_jobset_of_simulated_results(sim: tuple[JobSet, Results]) -> None:
    _, res = sim
    pj = per_jobset(res)
    k = representative_jobset(pj, reference="sjf", load=1.5)
    rows = pj.filter((pl.col("policy") == "sjf") & (pl.col("load") == 1.5))
    value = rows.filter(pl.col("jobset") == k).get_column("slowdown").item()
    below = (rows["slowdown"] < value).sum()
    assert below == (rows.height - 1) // 2


def test_machine_utilisation_accounts_for_the_work_on_each_machine() -> None:
    from schedlab.evaluation import schedules as tl
    from schedlab.registry import generators, make_policy
    from schedlab.simulator.config import ClusterConfig

    js = generators.make("deeprm", machines=3).generate(0.9, n_jobsets=4, seed=2)
    res = simulate(js, [make_policy("sjf+worstfit")], ClusterConfig())
    s = tl.schedules(res, js)
    util = tl.machine_utilisation(s, 3)
    assert util.height == 4 * 3  # every (jobset, machine), also one no job ran on
    assert util.get_column("jobs").sum() == len(js)
    table = s.jobs.with_columns(work=pl.col("cpu") * pl.col("duration"))
    span = table.group_by("jobset").agg(pl.col("finish").max().alias("makespan"))
    work = table.group_by("jobset", "machine").agg(pl.col("work").sum())
    expected = work.join(span, on="jobset").with_columns(
        util=pl.col("work") / (10.0 * pl.col("makespan"))  # one machine: 10 cpu slots
    )
    got = util.join(expected, on=["jobset", "machine"])
    np.testing.assert_allclose(got["util_cpu"].to_numpy(), got["util"].to_numpy())
    assert ((util["util_cpu"] >= 0) & (util["util_cpu"] <= 1)).all()


def test_schedules_of_jobs_killed_at_their_request() -> None:
    """A job killed at its estimate ran the estimate: its results match the JobSet."""
    jobs = jobs_frame(arrival=[0, 1], duration=[10, 4], estimate=[6, 4], cpu=[5.0, 6.0])
    js = JobSet.create(jobs, JobSetMeta(resources=("cpu",), capacity=(10.0,)))
    res = simulate(js, [FCFS()], {"slots": None})
    assert res.table.get_column("killed").to_list() == [True, False]
    s = schedules(Results(res.table.drop("cpu", strict=False), res.meta), js)
    assert s.jobs.get_column("duration").to_list() == [6, 4]
    assert s.jobs.get_column("finish").to_list() == [6, 10]


def _dense(s: Schedules) -> dict[str, np.ndarray]:
    """The quantities at every step, by the definitions (the reference the events must match)."""
    jobs = s.jobs
    end = int(jobs["finish"].max())  # type: ignore[arg-type]
    t = np.arange(end)[:, None]
    a, st, f = (jobs[c].to_numpy()[None, :] for c in ("arrival", "start", "finish"))
    demand = jobs.select(s.resources).to_numpy()
    cap = np.asarray(s.capacity)
    runs, waits = (st <= t) & (t < f), (a <= t) & (t < st)
    used = runs.astype(float) @ demand
    free = cap - used
    fits = (demand[None, :, :] <= free[:, None, :] + 1e-9).all(axis=2) & waits
    stranded = waits.any(axis=1) & ~fits.any(axis=1)
    frag = np.where(stranded[:, None], np.maximum(free, 0) / cap, 0.0)
    work = demand[:, 0] / cap[0] * (f - st)[0]
    return {
        "running": runs.sum(axis=1),
        "queue": waits.sum(axis=1),
        "queued_work": waits.astype(float) @ work,
        **{f"util_{r}": np.clip(used[:, i] / cap[i], 0, 1) for i, r in enumerate(s.resources)},
        **{f"frag_{r}": frag[:, i] for i, r in enumerate(s.resources)},
    }


@pytest.mark.parametrize("d", [1, 2, 3])
def test_events_match_the_step_by_step_definition(d: int) -> None:
    rng = np.random.default_rng(d)
    n = 60
    arrival = np.sort(rng.integers(0, 40, n))
    start = arrival + rng.integers(0, 15, n)
    duration = rng.integers(1, 8, n)
    names = ("cpu", "mem", "gpu")[:d]
    table = pl.DataFrame(
        {
            "policy": ["p"] * n,
            "jobset": pl.Series([0] * n, dtype=pl.Int32),
            "job_id": np.arange(n),
            "arrival": arrival,
            "start": start,
            "finish": start + duration,
            "duration": duration,
            **{r: rng.integers(1, 6, n).astype(float) for r in names},
        }
    )
    s = Schedules(table, names, (12.0,) * d, {})
    tl = timeline(s)
    dense = _dense(s)
    steps = np.arange(len(dense["running"]))
    row = np.searchsorted(tl["time"].to_numpy(), steps, side="right") - 1
    for col, want in dense.items():
        np.testing.assert_allclose(tl[col].to_numpy()[row], want, atol=1e-12, err_msg=col)
    assert tl["time"].n_unique() == tl.height <= 3 * n + 1


def test_timeline_cost_does_not_depend_on_the_makespan() -> None:
    """Two jobs a trillion steps apart: a handful of rows, not a dense array."""
    table = pl.DataFrame(
        {
            "policy": ["p", "p"],
            "jobset": pl.Series([0, 0], dtype=pl.Int32),
            "job_id": [0, 1],
            "arrival": [0, 10**12],
            "start": [5, 10**12],
            "finish": [10, 10**12 + 3],
            "duration": [5, 3],
            "cpu": [1.0, 2.0],
        }
    )
    tl = timeline(Schedules(table, ("cpu",), (4.0,), {}))
    assert tl["time"].to_list() == [0, 5, 10, 10**12, 10**12 + 3]
    assert tl["queue"].to_list() == [1, 0, 0, 0, 0]
    s = timeline_summary(tl).row(0, named=True)
    assert s["mean_util_cpu"] == pytest.approx((5 * 0.25 + 3 * 0.5) / (10**12 + 3))


def test_binned_integrates_the_step_functions_exactly() -> None:
    tl = timeline(hand_schedule())
    b = binned(tl, 2)
    assert b["time"].to_list() == [0, 2, 4]
    assert b["running"].to_list() == pytest.approx([1.5, 1.0, 0.5])  # (1+2)/2, (1+1)/2, (0+1)/2
    assert b["queue"].to_list() == pytest.approx([1.0, 1.5, 0.5])
    with pytest.raises(ValueError, match="bin width must be > 0"):
        binned(tl, 0)
