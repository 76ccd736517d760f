"""Heuristics see estimates, jobs run their durations (or are killed at their estimate): every
engine agrees, and the results say which jobs were killed."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.jobset import JobSet
from schedlab.registry import make_policy
from schedlab.simulator.check import InvalidScheduleError, check_results, check_schedule
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.run import run_policy, simulate
from tests.strategies import jobsets

ORDERS = ["fcfs", "sjf", "hrrn", "tetris", "packer", "wfp3", "unicep", "f1"]


def with_estimates(js: JobSet, offsets: list[int]) -> JobSet:
    """``js`` with ``estimate = max(1, duration + offset)`` (offsets cycled over the rows)."""
    n = len(js)
    off = np.resize(np.asarray(offsets, dtype=np.int64), n)
    duration = js.jobs.get_column("duration").to_numpy()
    estimate = np.maximum(duration + off, 1)
    return JobSet.create(js.jobs.with_columns(pl.Series("estimate", estimate)), js.meta)


@settings(max_examples=40, deadline=None)
@given(
    js=jobsets(max_jobsets=2, max_jobs=10, integer=True),
    offsets=st.lists(st.integers(-4, 6), min_size=1, max_size=7),
    order=st.sampled_from(ORDERS),
    overrun=st.sampled_from(["kill", "extend"]),
    machines=st.integers(1, 2),
)
def test_engines_agree_with_estimates(js, offsets, order, overrun, machines) -> None:
    js = with_estimates(js, offsets)
    config = ClusterConfig(slots=3, machines=machines, overrun=overrun)
    policy = make_policy(order)
    fast = run_policy(js, policy, config, engine="fast")
    for engine in ("batched", "step"):
        other = run_policy(js, policy, config, engine=engine)
        assert other.start.tolist() == fast.start.tolist(), engine
        assert other.machine.tolist() == fast.machine.tolist(), engine
    check_schedule(js, fast.start, fast.machine, machines=machines, overrun=overrun)


def _three_jobs() -> JobSet:
    """One pool of 10: a full machine until 10, then two jobs whose estimates invert their run
    times (job 1 runs 5, requests 2; job 2 runs 3, requests 50)."""
    from schedlab.jobset import JobSetMeta

    frame = pl.DataFrame(
        {"jobset": [0, 0, 0], "job_id": [0, 1, 2], "arrival": [0, 1, 2],
         "duration": [10, 5, 3], "procs": [10.0, 10.0, 10.0], "estimate": [10, 2, 50]},
        schema_overrides={"jobset": pl.Int32},
    )  # fmt: skip
    return JobSet.create(frame, JobSetMeta(resources=("procs",), capacity=(10.0,)))


@pytest.mark.parametrize("engine", ["fast", "batched", "step"])
def test_sjf_orders_by_the_estimate_unless_clairvoyant(engine: str) -> None:
    js = _three_jobs()
    extend = ClusterConfig(slots=5, overrun="extend")
    assert run_policy(js, make_policy("sjf"), extend, engine=engine).start.tolist() == [0, 10, 15]
    seer = make_policy("sjf:clairvoyant=true")
    assert run_policy(js, seer, extend, engine=engine).start.tolist() == [0, 13, 10]
    kill = ClusterConfig(slots=5)  # job 1 is killed at 2 steps
    assert run_policy(js, make_policy("sjf"), kill, engine=engine).start.tolist() == [0, 10, 12]


def test_job_times() -> None:
    js = _three_jobs()
    runtime, seen = job_times(js, "kill")
    assert runtime.tolist() == [10, 2, 3]
    assert seen.tolist() == [10, 2, 50]
    runtime, seen = job_times(js, "extend", clairvoyant=True)
    assert runtime.tolist() == [10, 5, 3]
    assert seen.tolist() == [10, 5, 3]
    plain = JobSet.create(js.jobs.drop("estimate"), js.meta)
    assert job_times(plain, "kill")[0].tolist() == [10, 5, 3]


def test_results_mark_killed_jobs_and_finish_when_killed() -> None:
    js = _three_jobs()
    killed = simulate(js, [make_policy("fcfs")], {"slots": None})
    table = killed.table
    assert table.get_column("killed").to_list() == [False, True, False]
    assert table.get_column("duration").to_list() == [10, 2, 3]  # steps run
    assert table.get_column("finish").to_list() == [10, 12, 15]
    assert killed.meta["killed_jobs"] == 1
    check_results(js, table)
    with pytest.raises(InvalidScheduleError, match="run time"):
        check_results(js, table, overrun="extend")
    extended = simulate(js, [make_policy("fcfs")], {"slots": None, "overrun": "extend"}).table
    assert not extended.get_column("killed").any()
    assert extended.get_column("finish").to_list() == [10, 15, 18]
    check_results(js, extended, overrun="extend")


def test_check_schedule_uses_the_run_times_for_capacity() -> None:
    js = _three_jobs()
    # job 2 starts when killed job 1 ends (12): feasible under kill, overlapping under extend
    check_schedule(js, [0, 10, 12], overrun="kill")
    with pytest.raises(InvalidScheduleError, match="over capacity"):
        check_schedule(js, [0, 10, 12], overrun="extend")


def test_overrun_is_a_cluster_config_field() -> None:
    with pytest.raises(ValueError, match="overrun"):
        simulate(_three_jobs(), [make_policy("fcfs")], {"slots": None, "overrun": "stop"})
