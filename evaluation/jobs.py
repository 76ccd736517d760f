"""Jobs measured as jobs: per-DAG-job completion times and slowdowns from per-task results.

A DAG workload's job (a ``dag`` of the JobSet, :mod:`schedlab.dag`) is what a cluster operator
is judged on: it *arrives* with its first task, *finishes* with its last one, and its **job
completion time** (JCT) is the difference. Its **job slowdown** is the JCT over its **critical
path**: the job's length with unlimited machines (the longest chain of task durations through
its DAG). When precedence is enforced JCT >= critical path, with equality under unlimited
capacity when every task starts as soon as its parents have finished; a schedule that ignores
precedence can run a job's chain in parallel and show a job slowdown below 1.

As in :mod:`schedlab.evaluation.metrics`, the statistical unit is the **jobset**:
:func:`per_jobset_jobs` reduces the jobs of one (policy, jobset) to one row (times in steps);
:func:`~schedlab.evaluation.metrics.per_jobset` adds its means to every metric of a DAG
workload (``jct`` in the results' time unit).
"""

from __future__ import annotations

import polars as pl

from schedlab.dag_measures import critical_paths
from schedlab.evaluation.keys import keys, policy_order, sort_runs
from schedlab.jobset import JobSet
from schedlab.results import DAG_RESULT_COLUMNS, Results


def per_job(results: Results, jobset: JobSet | None = None) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset, dag): the DAG job's times.

    Parameters
    ----------
    results
        Per-task results (with a ``workload`` column, that is a key too); a simulation of a DAG
        workload carries each task's job (:data:`~schedlab.results.DAG_RESULT_COLUMNS`).
    jobset
        The simulated JobSet, with ``dag`` (and ``parents``): needed only for results without
        those columns (e.g. a schedule built elsewhere).

    Returns
    -------
    polars.DataFrame
        The keys of :func:`~schedlab.evaluation.keys.keys`, ``dag`` (int64), ``tasks``
        (uint32, its rows), ``arrival`` (int64, its first task's arrival), ``finish`` (int64,
        its last task's finish), ``jct`` (int64, ``finish − arrival``), ``critical_path``
        (int64) and ``job_slowdown`` (float64, ``jct / critical_path``), all in steps. Sorted
        by policy (simulation order), the other keys and dag.

    Raises
    ------
    ValueError
        If neither the results nor the JobSet say which job a task belongs to, or a result
        names no job of the JobSet.
    """
    table = results.table
    if not set(DAG_RESULT_COLUMNS) <= set(table.columns):
        table = _with_jobs(table, jobset)
    out = (
        table.group_by(*keys(table), "dag")
        .agg(
            pl.len().alias("tasks"),
            pl.col("job_arrival").first().alias("arrival"),
            pl.col("finish").max(),
            pl.col("critical_path").first(),
        )
        .with_columns((pl.col("finish") - pl.col("arrival")).alias("jct"))
        .with_columns((pl.col("jct") / pl.col("critical_path")).alias("job_slowdown"))
        .select(
            *keys(table),
            "dag",
            "tasks",
            "arrival",
            "finish",
            "jct",
            "critical_path",
            "job_slowdown",
        )
    )
    return sort_runs(out, policy_order(results), ("dag",))


def _with_jobs(table: pl.DataFrame, jobset: JobSet | None) -> pl.DataFrame:
    """``table`` with :data:`~schedlab.results.DAG_RESULT_COLUMNS` from ``jobset``."""
    if jobset is None or "dag" not in jobset.jobs.columns:
        msg = "per-job metrics need a DAG workload: results of one, or its JobSet (a dag column)"
        raise ValueError(msg)
    jobs = jobset.jobs.select(
        "jobset",
        "job_id",
        "dag",
        pl.col("arrival").min().over("jobset", "dag").alias("job_arrival"),
    )
    rows = table.join(jobs, on=["jobset", "job_id"], how="left")
    if rows.get_column("dag").null_count():
        bad = rows.filter(pl.col("dag").is_null()).row(0, named=True)
        msg = f"result of jobset {bad['jobset']}, job_id {bad['job_id']} is no job of the JobSet"
        raise ValueError(msg)
    paths = critical_paths(jobset.jobs).select("jobset", "dag", "critical_path")
    return rows.join(paths, on=["jobset", "dag"], how="left")


def per_jobset_jobs(results: Results, jobset: JobSet | None = None) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset): averages over its DAG jobs (:func:`per_job`).

    Returns
    -------
    polars.DataFrame
        The keys, ``n_dags`` (uint32), ``jct`` (float64, mean job completion time, steps),
        ``job_slowdown`` (float64, mean), ``p95_job_slowdown`` (float64, 95th percentile over
        the jobset's jobs, linear interpolation) and ``max_job_slowdown`` (float64). Sorted by
        policy (simulation order) and the other keys.
    """
    jobs = per_job(results, jobset)
    slowdown = pl.col("job_slowdown")
    out = jobs.group_by(keys(jobs)).agg(
        pl.len().alias("n_dags"),
        pl.col("jct").mean().cast(pl.Float64),
        slowdown.mean(),
        slowdown.quantile(0.95, interpolation="linear").alias("p95_job_slowdown"),
        slowdown.max().alias("max_job_slowdown"),
    )
    return sort_runs(out, policy_order(results))
