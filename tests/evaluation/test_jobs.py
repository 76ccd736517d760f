"""Jobs measured as jobs (evaluation/jobs.py): per-DAG-job JCT, critical path, job slowdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest

from schedlab import dag, dag_measures
from schedlab.evaluation.jobs import per_job, per_jobset_jobs
from schedlab.jobset import JobSet
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.loaders.traces.options import TraceOptions
from schedlab.results import Results
from schedlab.simulator.check import check_precedence
from tests.dag_helpers import earliest_finish, jobset, random_dag_jobs

if TYPE_CHECKING:
    from pathlib import Path


def _results(js: JobSet, policy: str, start: np.ndarray) -> Results:
    jobs = js.jobs
    table = jobs.select(
        pl.lit(policy).alias("policy"),
        "jobset",
        pl.lit(None, pl.Float64).alias("load"),
        pl.lit(None, pl.Int64).alias("seed"),
        "job_id",
        "arrival",
        pl.Series("start", start),
        (pl.Series("start", start) + pl.col("duration")).alias("finish"),
        "duration",
    ).with_columns((pl.col("finish") - pl.col("arrival")).alias("completion"))
    return Results(table, {"policies": {policy: {}}})


def _released(seed: int) -> JobSet:
    """Random DAG jobs, each arriving at its own step (all its tasks released then)."""
    jobs = random_dag_jobs(seed, instances=2, dags=5)
    arrival = (pl.col("dag") * 7 % 23).cast(pl.Int64)
    return jobset(jobs.with_columns(arrival.alias("arrival")))


@pytest.mark.parametrize("seed", range(6))
def test_unlimited_capacity_earliest_schedule_gives_jct_equal_to_critical_path(seed: int) -> None:
    js = _released(seed)
    jobs = js.jobs
    start = jobs["arrival"].to_numpy() + np.array(earliest_finish(jobs)) - jobs["duration"]
    table = per_job(_results(js, "asap", start), js)
    assert table.get_column("jct").to_list() == table.get_column("critical_path").to_list()
    assert table.get_column("job_slowdown").to_list() == [1.0] * table.height
    first = jobs.group_by("jobset", "dag").agg(pl.col("arrival").min(), pl.len().alias("n"))
    expected = first.sort("jobset", "dag")
    assert table.get_column("arrival").to_list() == expected.get_column("arrival").to_list()
    assert table.get_column("tasks").to_list() == expected.get_column("n").to_list()


def test_hand_computed_jobs_and_jobset_aggregates() -> None:
    # dag 0: 0 -> 1 (durations 2, 3; critical path 5); dag 1: job 2 alone (4), arriving at 1
    js = jobset(
        pl.DataFrame(
            {
                "jobset": [0, 0, 0],
                "job_id": [0, 1, 2],
                "arrival": [0, 0, 1],
                "duration": [2, 3, 4],
                "cpu": [1.0] * 3,
                "parents": [[], [0], []],
                "dag": [0, 0, 1],
            },
            schema_overrides={"parents": pl.List(pl.Int64)},
        )
    )
    a = _results(js, "a", np.array([0, 2, 1]))  # as soon as possible
    b = _results(js, "b", np.array([0, 0, 2]))  # DAG-blind: job 1 runs beside its parent
    both = Results(pl.concat([b.table, a.table]), {"policies": {"a": {}, "b": {}}})
    jobs = per_job(both, js)
    assert jobs.select("policy", "dag", "arrival", "finish", "jct", "critical_path").rows() == [
        ("a", 0, 0, 5, 5, 5),
        ("a", 1, 1, 5, 4, 4),
        ("b", 0, 0, 3, 3, 5),
        ("b", 1, 1, 6, 5, 4),
    ]
    assert jobs.get_column("job_slowdown").to_list() == [1.0, 1.0, 0.6, 1.25]  # 0.6: no wait
    agg = per_jobset_jobs(both, js)
    assert agg.get_column("policy").to_list() == ["a", "b"]
    assert agg.get_column("n_dags").to_list() == [2, 2]
    assert agg.get_column("jct").to_list() == [4.5, 4.0]
    assert agg.get_column("job_slowdown").to_list() == pytest.approx([1.0, 0.925])
    assert agg.get_column("max_job_slowdown").to_list() == [1.0, 1.25]


def test_needs_a_dag_workload() -> None:
    js = jobset(random_dag_jobs(0).drop("dag"))
    with pytest.raises(ValueError, match="need a DAG workload"):
        per_job(_results(js, "x", np.zeros(js.jobs.height, np.int64)), js)


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["task", "instance"])
def test_real_sample_with_unlimited_machines_jct_is_the_critical_path(
    v2018_dags: Path, granularity: str
) -> None:
    options = TraceOptions(time_step=10, jobset_window=3600)
    js = read_alibaba2018(v2018_dags, options=options, granularity=granularity).jobs
    jobs = js.jobs
    g = dag.graph(jobs)
    release = jobs.select(pl.col("arrival").min().over("jobset", "dag")).to_series().to_numpy()
    duration = jobs.get_column("duration").to_numpy()
    start = dag_measures.earliest_starts(g, release, duration)  # the dag release rule
    check_precedence(js, start, start + duration)
    table = per_job(_results(js, "unlimited", start), js)
    assert table.height == jobs.select("jobset", "dag").n_unique()
    assert (table.get_column("jct") == table.get_column("critical_path")).all()
