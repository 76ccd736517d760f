"""Times at the edge of the one validated range (issue 36, :mod:`schedlab.timebounds`): every
compiled engine and queue discipline, on jobs whose arrivals, durations and estimates reach
2^59 steps, gives a schedule within capacity that keeps its run times; a value past the range is
refused where it enters, naming the column and row."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.errors import JobSetError
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.registry import make_policy
from schedlab.simulator.check import check_results
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate
from schedlab.timebounds import MAX_TIME
from tests.strategies import jobs_frame

POLICIES = [
    "fcfs",
    "sjf+bestfit",
    "fcfs+strict",
    "fcfs+easy",
    "sjf+easy+worstfit",
    "fcfs+conservative",
    "wfp3+conservative",
    "sjf+conservative+bestfit",
    "unicep+easy",
]
"""Every compiled rule: greedy (the whole-queue tree and the scan), strict, EASY, conservative
under a static and a dynamic order, first fit and the other placements."""
META = JobSetMeta(resources=("cpu", "mem"), capacity=(20.0, 20.0), machines=2)


@st.composite
def edge_jobsets(draw: st.DrawFn, overrun: str) -> pl.DataFrame:
    """Up to 6 jobs whose times are tiny or near the range's edge, within the span. Under
    ``extend`` a job runs at most 1,000 steps past its estimate: conservative backfilling takes
    one decision per step while a job is past its estimate (a cost, not an overflow)."""
    n = draw(st.integers(1, 6))
    share = MAX_TIME // (2 * n + 2)  # so that last arrival + Σ max(d, e) stays in range
    time = st.one_of(st.integers(1, 5), st.integers(share - 5, share), st.integers(1, share))
    arrival = st.one_of(st.integers(0, 3), st.integers(MAX_TIME // 2 - 3, MAX_TIME // 2))
    demand = st.sampled_from([0.0, 1.0, 4.5, 10.0])
    rows = []
    for _ in range(n):
        duration, estimate = draw(time), draw(time)
        if overrun == "extend":
            duration = min(duration, estimate + draw(st.integers(0, 1000)))
        rows.append((draw(arrival), duration, estimate, draw(demand), draw(demand)))
    arrivals, durations, estimates, cpu, mem = map(list, zip(*rows, strict=True))
    return pl.DataFrame(
        {
            "jobset": [0] * n,
            "job_id": list(range(n)),
            "arrival": arrivals,
            "duration": durations,
            "estimate": estimates,
            "cpu": cpu,
            "mem": mem,
        },
    )


@pytest.mark.parametrize("overrun", ["kill", "extend"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_extreme_times_never_exceed_capacity(data: st.DataObject, overrun: str) -> None:
    js = JobSet.create(data.draw(edge_jobsets(overrun)), META)
    config = ClusterConfig(overrun=overrun)  # type: ignore[arg-type]
    for spec in POLICIES:
        results = simulate(js, [make_policy(spec)], config)
        check_results(js, results.table, overrun=overrun)  # type: ignore[arg-type]
        assert (results.table.get_column("start") >= 0).all()


def _two_jobs(estimate: pl.Series | None = None) -> pl.DataFrame:
    """Jobs 1 and 2 of jobset 0 with estimates 5 and 6 (or ``estimate``)."""
    estimate = [5, 6] if estimate is None else estimate
    return jobs_frame(
        first_id=1,
        arrival=[0, 1],
        duration=[3, 4],
        estimate=estimate,
        cpu=[1.0, 2.0],
        mem=[1.0, 1.0],
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("estimate", 2**63 - 1), ("estimate", 2**61), ("duration", MAX_TIME + 1), ("arrival", 2**62)],
)
def test_a_time_past_the_range_is_refused_naming_column_and_row(column: str, value: int) -> None:
    jobs = _two_jobs().with_columns(pl.Series(column, [1, value], dtype=pl.Int64))
    with pytest.raises(
        JobSetError, match=rf"column '{column}' value {value} at row 1 .*exceeds 2\^59"
    ):
        JobSet.create(jobs, META)


def test_the_span_counts_estimates() -> None:
    big = MAX_TIME // 3
    jobs = jobs_frame(
        first_id=1,
        arrival=[0] * 4,
        duration=[1] * 4,
        estimate=[big] * 4,
        cpu=[1.0] * 4,
        mem=[1.0] * 4,
    )
    with pytest.raises(JobSetError, match=r"jobset 0: .*max\(duration, estimate\).*'estimate'"):
        JobSet.create(jobs, META)
    fine = JobSet.create(jobs.head(2), META)
    for spec in ("fcfs+conservative", "wfp3+conservative", "fcfs+easy"):
        res = simulate(fine, [make_policy(spec)], ClusterConfig())
        check_results(fine, res.table)


def test_a_null_estimate_is_refused_naming_its_row() -> None:
    jobs = _two_jobs(estimate=pl.Series([5, None], dtype=pl.Int64))
    with pytest.raises(JobSetError, match=r"column 'estimate' has a missing value at row 1"):
        JobSet.create(jobs, META)


def test_the_bound_leaves_room_below_never() -> None:
    from schedlab.simulator.cluster.core import NEVER

    # a reservation end is at most span + jobs + horizon; two such times still add below NEVER
    assert 2 * (MAX_TIME + 2**40) < NEVER
    assert np.iinfo(np.int64).max // 4 == NEVER
