"""Metrics in seconds on a trace's real times, whatever the time step (issue 25): the same SWF
rows loaded at 1 s and 60 s steps, hand-computed waits, zero-length jobs, synthetic results."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from schedlab.errors import JobSetError
from schedlab.evaluation.metrics import per_jobset, per_length, time_unit
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.results import RESULT_COLUMNS, SECONDS_RESULT_COLUMNS, Results
from schedlab.simulator.run import simulate

HEADER = "; Version: 2.2\n; MaxProcs: 4\n"
MINUTES = [(0, 120, 4), (60, 60, 2), (60, 0, 1), (180, 600, 1)]
"""(submit s, run s, procs) on minute bounds: the same schedule at 1 s and 60 s steps."""
UNALIGNED = [(0, 100, 4), (30, 50, 2), (40, 0, 1)]
"""(submit s, run s, procs): at 60 s steps job 0 lasts 120 s, so jobs 1 and 2 start later."""


def write_swf(path: Path, jobs: list[tuple[int, int, int]]) -> Path:
    lines = [
        f"{i + 1} {submit} -1 {run} {procs} -1 -1 {procs} {run + 60} -1 1 1 1 -1 -1 -1 -1 -1"
        for i, (submit, run, procs) in enumerate(jobs)
    ]
    path.write_text(HEADER + "\n".join(lines) + "\n")
    return path


def fcfs(path: Path, step: float) -> Results:
    jobs = read_swf(path, options=TraceOptions(time_step=step)).jobs
    return simulate(jobs, [make_policy("fcfs")], {"slots": None})


def test_same_rows_same_metrics_at_1_and_60_s_steps(tmp_path: Path) -> None:
    path = write_swf(tmp_path / "minutes.swf", MINUTES)
    one, sixty = (per_jobset(fcfs(path, step)) for step in (1, 60))
    assert_frame_equal(one, sixty)
    row = one.row(0, named=True)
    # waits 0, 60, 60, 0 s; turnarounds 120, 120, 60, 600 s; the 0 s job counts 1 s
    assert row["wait"] == pytest.approx(30.0)
    assert row["completion"] == pytest.approx(225.0)
    assert row["slowdown"] == pytest.approx((1 + 2 + 61 + 1) / 4)
    # τ = 10 s: 120/120, 120/60, 60/max(0, 10), 600/600
    assert row["bounded_slowdown"] == pytest.approx((1 + 2 + 6 + 1) / 4)


def test_hand_computed_waits_and_utilisation(tmp_path: Path) -> None:
    path = write_swf(tmp_path / "jobs.swf", UNALIGNED)
    res = fcfs(path, 1)
    assert time_unit(res.table) == "s"
    assert res.table.get_column("wait_s").to_list() == [0.0, 70.0, 60.0]
    row = per_jobset(res).row(0, named=True)
    assert row["slowdown"] == pytest.approx((1 + 2.4 + 61) / 3)
    assert row["bounded_slowdown"] == pytest.approx((1 + 2.4 + 6) / 3)  # 60 s / τ = 6
    # waits [0, 60, 70]: p95 at 1.9 -> 60 + 0.9·10, p99 at 1.98 -> 60 + 0.98·10
    assert (row["max_wait"], row["p95_wait"], row["p99_wait"]) == pytest.approx((70, 69, 69.8))
    # busy 4/4·100 + 2/4·50 + 1/4·0 = 125 share-seconds over 0 .. 150 s
    assert row["utilisation"] == pytest.approx(125 / 150)
    # at 60 s steps job 0 holds the machine 2 steps (120 s): waits 90 and 80 s, same definitions
    coarse = per_jobset(fcfs(path, 60)).row(0, named=True)
    assert coarse["wait"] == pytest.approx((0 + 90 + 80) / 3)
    assert coarse["bounded_slowdown"] == pytest.approx((1 + 140 / 50 + 8) / 3)
    buckets = per_length(res).get_column("bucket").cast(pl.String).to_list()
    assert buckets == ["short", "medium", "long"]  # run-time terciles 0, 50, 100 s


def test_zero_length_jobs_and_load_note(tmp_path: Path) -> None:
    loaded = read_swf(
        write_swf(tmp_path / "jobs.swf", UNALIGNED), options=TraceOptions(time_step=60)
    )
    jobs = loaded.jobs.jobs
    assert jobs.get_column("duration").to_list() == [2, 1, 1]
    assert jobs.get_column("duration_s").to_list() == [100.0, 50.0, 0.0]
    assert jobs.get_column("arrival_s").to_list() == [0.0, 30.0, 40.0]
    assert loaded.report.fixed["zero_duration_as_one_step"] == 1
    note = next(n for n in loaded.report.notes if n.startswith("time step 60 s"))
    assert "2 durations rounded up" in note
    assert "1 zero-length" in note
    assert "may change the schedule" in note


def test_seconds_survive_jobsets_and_parquet(tmp_path: Path) -> None:
    path = write_swf(tmp_path / "jobs.swf", [*MINUTES, (700, 30, 1), (745, 10, 2)])
    jobs = read_swf(path, options=TraceOptions(time_step=60, jobset_size=4)).jobs
    second = jobs.jobs.filter(jobset=1)
    assert second.get_column("arrival").to_list() == [0, 1]  # origin: its first step, 660 s
    assert second.get_column("arrival_s").to_list() == [40.0, 85.0]
    jobs.write_parquet(tmp_path / "j.parquet")
    back = JobSet.read_parquet(tmp_path / "j.parquet")
    assert back.jobs.equals(jobs.jobs)


def test_seconds_columns_are_validated(tmp_path: Path) -> None:
    jobs = read_swf(write_swf(tmp_path / "j.swf", UNALIGNED), options=TraceOptions(time_step=60))
    js = jobs.jobs
    with pytest.raises(JobSetError, match=r"'arrival_s' value -1.0 .* must be finite and >= 0"):
        JobSet.create(js.jobs.with_columns(pl.lit(-1.0).alias("arrival_s")), js.meta)
    with pytest.raises(JobSetError, match=r"'arrival_s' value 90.0 .* not in \[arrival"):
        JobSet.create(js.jobs.with_columns(pl.lit(90.0).alias("arrival_s")), js.meta)
    with pytest.raises(JobSetError, match=r"'duration_s' value 1000.0 .* exceeds duration"):
        JobSet.create(js.jobs.with_columns(pl.lit(1000.0).alias("duration_s")), js.meta)
    with pytest.raises(JobSetError, match="need the metadata's time_step_seconds"):
        JobSet.create(js.jobs, replace(js.meta, time_step_seconds=None))


def test_synthetic_results_stay_in_steps() -> None:
    js = DeepRMGenerator().generate(0.9, n_jobsets=2, seed=3)
    res = simulate(js, [make_policy("sjf")])
    assert res.table.columns == [*RESULT_COLUMNS, "killed"]
    assert time_unit(res.table) == "steps"
    out = per_jobset(res)
    assert not set(SECONDS_RESULT_COLUMNS) & set(out.columns)
    assert "utilisation" not in out.columns
    t = res.table
    tau = pl.max_horizontal(pl.col("duration"), pl.lit(10)).cast(pl.Float64)
    bsld = t.group_by("jobset").agg(
        pl.max_horizontal(1.0, pl.col("completion") / tau).mean().alias("b")
    )
    assert out.sort("jobset").get_column("bounded_slowdown").to_list() == pytest.approx(
        bsld.sort("jobset").get_column("b").to_list()
    )
    assert out.get_column("slowdown").to_list() == pytest.approx(
        t.group_by("jobset").agg(pl.col("slowdown").mean()).sort("jobset")["slowdown"].to_list()
    )
