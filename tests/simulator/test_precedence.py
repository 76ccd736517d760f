"""Precedence of DAG workloads in schedules: check_precedence and the violation counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.registry import make_policy
from schedlab.simulator.check import (
    InvalidScheduleError,
    check_precedence,
    check_schedule,
    precedence_table,
    precedence_violations,
)
from schedlab.simulator.cluster.precedence import Precedence
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy, simulate
from tests.dag_helpers import earliest_finish, jobset, random_dag_jobs


def _diamond(**columns: list) -> pl.DataFrame:
    """0 -> (1, 2) -> 3, durations 1, 2, 3, 1."""
    base = {"jobset": [0] * 4, "job_id": [0, 1, 2, 3], "arrival": [0] * 4,
            "duration": [1, 2, 3, 1], "cpu": [1.0] * 4, "parents": [[], [0], [0], [1, 2]],
            "dag": [0] * 4}  # fmt: skip
    base.update(columns)
    return pl.DataFrame(base, schema_overrides={"parents": pl.List(pl.Int64)})


def test_earliest_schedule_keeps_precedence() -> None:
    js = jobset(_diamond())
    start, finish = [0, 1, 1, 4], [1, 3, 4, 5]
    check_precedence(js, start, finish)
    v = precedence_violations(js, start, finish)
    assert (v.edges, v.violated_edges, v.jobs_with_parents, v.violating_jobs) == (4, 0, 3, 0)
    assert v.first is None


def test_violation_names_the_earliest_job_and_counts() -> None:
    js = jobset(_diamond())
    start, finish = [0, 0, 1, 3], [1, 2, 4, 4]  # job 1 starts with its parent; 3 before 2 ends
    v = precedence_violations(js, start, finish)
    assert (v.violated_edges, v.violating_jobs) == (2, 2)
    assert v.first == (1, 0, 0, 1)
    with pytest.raises(
        InvalidScheduleError,
        match=r"jobset 0, job_id 1 started at step 0 before its parent job_id 0 finished at step "
        r"1: 2 of 4 edges violated, by 2 of the 3 jobs with parents",
    ):
        check_precedence(js, start, finish)


def test_an_instance_waits_for_every_instance_of_its_parent_task() -> None:
    js = jobset(_diamond(task=[8, 8, 9, 9], parents=[[], [], [8], [8]], duration=[1, 4, 1, 1]))
    order = js.jobs.get_column("job_id").to_list()
    assert order == [0, 1, 2, 3]
    v = precedence_violations(js, [0, 0, 2, 4], [1, 4, 3, 5])  # row 2 starts before row 1 ends
    assert (v.edges, v.violated_edges, v.violating_jobs) == (2, 1, 1)
    assert v.first == (2, 2, 1, 4)


def test_no_parents_nothing_to_violate() -> None:
    js = jobset(_diamond().drop("parents"))
    v = precedence_violations(js, [0] * 4, [1, 2, 3, 1])
    assert (v.edges, v.violated_edges, v.jobs_with_parents) == (0, 0, 0)


@pytest.mark.parametrize("seed", range(4))
def test_earliest_schedules_of_random_dags_pass(seed: int) -> None:
    js = jobset(random_dag_jobs(seed, instances=2))
    finish = earliest_finish(js.jobs)
    start = [f - d for f, d in zip(finish, js.jobs["duration"], strict=True)]
    check_precedence(js, start, finish)
    late = [s + 1 if p else s for s, p in zip(start, js.jobs["parents"].to_list(), strict=True)]
    check_precedence(js, late, [s + d for s, d in zip(late, js.jobs["duration"], strict=True)])


def test_precedence_table_per_policy() -> None:
    js = jobset(_diamond())
    table = pl.DataFrame({"policy": ["a"] * 4 + ["b"] * 4, "jobset": [0] * 8,
                          "job_id": [3, 2, 1, 0] * 2, "start": [4, 1, 1, 0, 3, 1, 0, 0],
                          "finish": [5, 4, 3, 1, 4, 4, 2, 1]})  # fmt: skip
    out = precedence_table(js, table)
    assert out.rows() == [("a", 4, 0, 3, 0), ("b", 4, 2, 3, 2)]
    with pytest.raises(InvalidScheduleError, match="policy 'a': results do not hold every job"):
        precedence_table(js, table.head(3))


# -- the engines enforce precedence ------------------------------------------------------------


def busy_dags(seed: int, *, instances: int, spread: int) -> JobSet:
    """:func:`random_dag_jobs` whose DAG jobs arrive ``k · s`` steps apart (``s`` seeded in
    ``spread .. 3``) and whose rows demand 1-3 of 4 cores, sorted as a JobSet."""
    frame = random_dag_jobs(seed, instances=instances)
    rng = np.random.default_rng(seed)
    arrival = pl.col("dag").rank("dense").cast(pl.Int64) * int(rng.integers(spread, 4))
    frame = frame.with_columns(
        arrival.alias("arrival"), pl.Series("cpu", rng.integers(1, 4, frame.height) * 1.0)
    )
    return jobset(frame.sort("jobset", "arrival", "job_id"))


@pytest.mark.parametrize(
    ("capacity", "rule", "policy", "starts"),
    [
        (4.0, "dag", "fcfs", [0, 1, 1, 4]),  # room for all: the earliest schedule
        (1.0, "dag", "sjf", [0, 1, 3, 6]),  # one at a time: task 1 (2 steps) before 2 (3)
        (1.0, "dag", "fcfs", [0, 1, 3, 6]),
        (4.0, "trace", "fcfs", [0, 1, 1, 10]),  # task 3 is released at its own arrival
    ],
)
def test_engine_starts_a_task_once_its_parents_finish(
    capacity: float, rule: str, policy: str, starts: list[int]
) -> None:
    js = JobSet.create(_diamond(arrival=[0, 0, 0, 10]),
                       JobSetMeta(resources=("cpu",), capacity=(capacity,)))  # fmt: skip
    s = run_policy(js, make_policy(policy), ClusterConfig(slots=None, release=rule))
    assert s.start.tolist() == starts
    finish = s.start + js.jobs["duration"].to_numpy()
    check_precedence(js, s.start, finish)
    res = simulate(js, [make_policy(policy)], {"slots": None, "release": rule})
    assert (res.table["wait"] >= 0).all()  # a task's wait counts from when it was ready


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("slots", [None, 3])
def test_random_dags_keep_precedence_and_capacity(seed: int, slots: int | None) -> None:
    js = busy_dags(seed, instances=1 + seed % 3, spread=0)
    for rule in ("dag", "trace"):
        for name in ("fcfs", "sjf", "hrrn", "random", "tetris+bestfit"):
            config = ClusterConfig(slots=slots, release=rule, machines=1 + seed % 2)
            s = run_policy(js, make_policy(name), config)
            finish = s.start + js.jobs["duration"].to_numpy()
            check_schedule(js, s.start, s.machine, machines=config.machines, release=rule)
            check_precedence(js, s.start, finish)
            assert s.ready is not None
            assert (s.start >= s.ready).all()
            release = Precedence.of(js, rule).release
            assert (s.ready >= release).all()


def test_unlimited_capacity_gives_every_job_its_critical_path(v2018_dags: Path) -> None:
    """On the real sample with room for every task, each job's completion time is its critical
    path under the ``dag`` release (and no shorter under ``trace``)."""
    from schedlab.evaluation.jobs import per_job
    from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
    from schedlab.loaders.traces.options import TraceOptions

    js = read_alibaba2018(v2018_dags, options=TraceOptions(time_step=10)).jobs
    for rule, exact in (("dag", True), ("trace", False)):
        res = simulate(js, [make_policy("sjf")], {"slots": None, "release": rule})
        jobs = per_job(res, js)
        assert (jobs["jct"] >= jobs["critical_path"]).all()
        assert (jobs["jct"] == jobs["critical_path"]).all() == exact
        assert precedence_table(js, res.table)["violated_edges"].to_list() == [0]


@pytest.mark.parametrize("seed", range(3))
def test_disciplines_keep_precedence_and_engines_agree(seed: int) -> None:
    """Strict, EASY and conservative on DAG workloads: compiled and readable agree, every task
    starts after its parents, with every order (DAG ones included)."""
    js = busy_dags(seed, instances=1 + seed % 2, spread=1)
    for rule in ("dag", "trace"):
        config = ClusterConfig(slots=None, release=rule)
        for discipline in ("strict", "easy", "conservative"):
            for order in ("fcfs", "sjf", "hrrn", "cpf"):
                policy = make_policy(f"{order}+{discipline}")
                fast = run_policy(js, policy, config)
                step = run_policy(js, policy, config, engine="step")
                for name in ("start", "machine", "reserved", "ready"):
                    np.testing.assert_array_equal(
                        getattr(fast, name),
                        getattr(step, name),
                        err_msg=f"{rule} {policy.name} {name}",
                    )
                check_schedule(js, fast.start, fast.machine, release=rule)


def test_check_schedule_holds_tasks_to_their_release_and_parents() -> None:
    js = jobset(_diamond(arrival=[0, 0, 0, 10]))
    check_schedule(js, [0, 1, 1, 4], release="dag")  # its DAG job arrived at 0
    with pytest.raises(InvalidScheduleError, match="before it was released"):
        check_schedule(js, [0, 1, 1, 4], release="trace")  # task 3 arrives at 10
    with pytest.raises(InvalidScheduleError, match="before its parent"):
        check_schedule(js, [0, 1, 1, 3])  # task 3 starts as task 2 still runs


@pytest.mark.parametrize(
    ("policy", "starts"),
    [("cpf", [0, 1, 4, 2]), ("srjf", [2, 3, 4, 0]), ("sjf", [0, 1, 2, 3])],
)
def test_dag_orders_rank_by_remaining_critical_path(policy: str, starts: list[int]) -> None:
    """A chain 0 -> 1 -> 2 (1 step each, remaining paths 3, 2, 1) and a lone 2-step task 3, one
    processor: CPF starts the longest remaining path first, SRJF the shortest."""
    jobs = pl.DataFrame(
        {"jobset": [0] * 4, "job_id": [0, 1, 2, 3], "arrival": [0] * 4, "duration": [1, 1, 1, 2],
         "cpu": [1.0] * 4, "parents": [[], [0], [1], []], "dag": [0, 0, 0, 1]},
        schema_overrides={"parents": pl.List(pl.Int64)},
    )  # fmt: skip
    js = JobSet.create(jobs, JobSetMeta(resources=("cpu",), capacity=(1.0,)))
    s = run_policy(js, make_policy(policy), ClusterConfig(slots=None))
    assert s.start.tolist() == starts


def test_jobs_are_measured_as_jobs() -> None:
    """Per-jobset job metrics: the diamond on room for all finishes in its critical path (job
    slowdown 1); on one processor it takes 7 steps for a critical path of 5."""
    from schedlab.evaluation.metrics import per_jobset

    for capacity, jct in ((4.0, 5.0), (1.0, 7.0)):
        js = JobSet.create(_diamond(), JobSetMeta(resources=("cpu",), capacity=(capacity,)))
        res = simulate(js, [make_policy("sjf")], {"slots": None})
        assert res.table["critical_path"].to_list() == [5] * 4
        row = per_jobset(res).row(0, named=True)
        assert row["jct"] == jct
        assert row["job_slowdown"] == jct / 5


@pytest.mark.parametrize("seed", range(4))
def test_fast_and_batched_engines_agree_on_dags(seed: int) -> None:
    """The compiled list scheduler, the batched engine and the readable step engine give the
    same schedule of a DAG workload (slots and backlog, both release rules, static and dynamic
    orders)."""
    js = busy_dags(seed, instances=1 + seed % 2, spread=1)
    for rule in ("dag", "trace"):
        for name in ("fcfs", "sjf", "hrrn", "cpf", "srjf"):
            config = ClusterConfig(slots=3, release=rule)
            fast = run_policy(js, make_policy(name), config, engine="fast")
            for engine in ("batched", "step"):
                other = run_policy(js, make_policy(name), config, engine=engine)
                np.testing.assert_array_equal(fast.start, other.start, err_msg=f"{rule} {name}")
                np.testing.assert_array_equal(fast.ready, other.ready)


def test_per_length_breakdown_of_dag_jobs_is_by_critical_path() -> None:
    """A DAG workload's per-length breakdown counts jobs, bucketed by critical path."""
    from schedlab.evaluation.jobs import per_job
    from schedlab.evaluation.metrics import length_buckets, length_units, per_length

    js = busy_dags(0, instances=1, spread=1)
    res = simulate(js, [make_policy("sjf")], {"slots": None})
    jobs = per_job(res)
    pln = per_length(res)
    assert pln["n_jobs"].sum() == jobs.height  # every DAG job once, not every task
    buckets = length_buckets(length_units(res))
    lo, hi = min(b[0] for b in buckets.values()), max(b[1] for b in buckets.values())
    assert (lo, hi) == (jobs["critical_path"].min(), jobs["critical_path"].max())
    short = pln.filter(pl.col("bucket") == "short")
    assert short["slowdown"].to_list() == pytest.approx(
        jobs.filter(pl.col("critical_path") <= buckets["short"][1])
        .group_by("jobset", maintain_order=True).agg(pl.col("job_slowdown").mean())
        .sort("jobset")["job_slowdown"].to_list()
    )  # fmt: skip


def test_compare_uses_job_metrics_for_dag_workloads() -> None:
    from schedlab import compare

    js = busy_dags(1, instances=1, spread=1)
    res = simulate(js, [make_policy("sjf"), make_policy("fcfs")], {"slots": None})
    assert compare(res).computed.comp.cfg.primary == "job_slowdown"
    assert compare(res, primary="wait").computed.comp.cfg.primary == "wait"


def test_a_report_of_a_dag_workload_leads_with_its_jobs(tmp_path: Path) -> None:
    """schedlab report, as schedlab.compare: a DAG workload's rows are tasks, so the report
    compares DAG jobs (job slowdown, then JCT) unless metrics are given."""
    from schedlab.reports.render import write_report

    js = busy_dags(1, instances=1, spread=1)
    res = simulate(js, [make_policy("sjf"), make_policy("fcfs")], {"slots": None})
    md = write_report(res, tmp_path / "r", jobs=js, n_resamples=100, dpi=40)["md"].read_text()
    assert "average DAG job slowdown (completion / critical path)" in md.split("\n## ")[1]
    plain = write_report(res, tmp_path / "p", primary="wait", n_resamples=100, dpi=40)["md"]
    assert "average DAG job slowdown" not in plain.read_text().split("\n## ")[1]


def test_a_dag_workload_without_edges_is_released_by_its_dag_in_every_engine() -> None:
    """A sample of a DAG trace may keep no edge: its tasks are still released with their DAG
    job's first task (``release="dag"``), by every engine, and their results' arrival is that
    release, never after their start."""
    jobs = _diamond(parents=[[], [], [], []], arrival=[0, 3, 5, 6], dag=[0, 0, 1, 1])
    js = jobset(jobs)
    for name in ("fcfs", "sjf"):
        runs = {e: run_policy(js, make_policy(name), ClusterConfig(slots=3), engine=e)
                for e in ("fast", "batched", "step")}  # fmt: skip
        for engine, run in runs.items():
            assert run.ready is not None, engine
            np.testing.assert_array_equal(run.ready, [0, 0, 5, 5], err_msg=engine)
            np.testing.assert_array_equal(run.start, runs["fast"].start, err_msg=engine)
        res = simulate(js, [make_policy(name)], ClusterConfig(slots=3))
        assert (res.table["start"] >= res.table["arrival"]).all()
