"""The rows of each granularity of a v2018 load (:mod:`schedlab.loaders.traces.alibaba2018`) and
their DAG edges.

:func:`granularity_rows` turns the parsed tasks into the rows handed to
:func:`~schedlab.loaders.traces.transform.finish`: one per task, one per instance (at most
``max_instances`` per task, :func:`_expand`) or one per job (:func:`_collapse`: critical path or
total work). :func:`parents_hook` is ``finish``'s hook that gives each kept row its ``parents``
within its jobset: job ids per task row, or parent task keys per instance row (linear in the
instances). The parsed table and the DAG are held in a ``box`` dict and popped when used, so
that ``finish`` holds the only reference and can free them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from schedlab.loaders.traces import alibaba_dag as dag_mod
from schedlab.loaders.traces.transform import Finalize

MAX_INSTANCE_JOBS = 100_000_000
"""Refuse ``granularity="instance"`` loads that would create more jobs than this."""


def granularity_rows(
    box: dict[str, Any],
    granularity: str,
    fixes: dict[str, int],
    max_instances: int,
    job_duration: str,
    source_ids: bool,
) -> pl.DataFrame:
    """The rows handed to ``finish`` (the parsed table is popped from ``box``, so that finish
    holds the only reference and can free it)."""
    good = box.pop("good")
    dag = box.pop("dag") if granularity == "job" else None
    if granularity == "task":
        keep = ["source_id"] if "source_id" in good.columns else []
        rows = good.select(
            "line", "arrival_s", "duration_s", "cpu", "mem", pl.col("job").alias("dag"), *keep
        ).rechunk()
        return rows.with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("_g"))
    if granularity == "instance":
        rows, capped = _expand(good, max_instances)
        if capped:
            fixes["instances_capped"] = capped
        return rows
    assert dag is not None  # granularity "job": popped above
    return _collapse(good, dag.critical_path, job_duration)


def parents_hook(box: dict[str, Any], n: int, granularity: str) -> Finalize | None:
    """``finish``'s hook for the granularity: DAG edges per task or per instance, or none."""
    if granularity == "task":
        return _task_parents_hook(box, n)
    if granularity == "instance":
        return _instance_parents_hook(box)
    return None


def _instance_parents_hook(box: dict[str, Any]) -> Finalize:
    """``finish`` hook at instance granularity: every instance row gets ``task`` (its task's
    DAG row) and ``parents``, the parent tasks with an instance in the same jobset (linear in
    the instances: a task's list is repeated per instance, never expanded per parent
    instance)."""

    def finalize(jobs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
        jobs, lost = _joined_parents(jobs, box.pop("dag"), "_g")
        jobs = jobs.rename({"_g": "task"})
        return jobs, ({"parent_outside_jobset_removed": lost} if lost else {})

    return finalize


def _joined_parents(jobs: pl.DataFrame, dag: dag_mod.Dag, value: str) -> tuple[pl.DataFrame, int]:
    """``parents`` by joins on (jobset, DAG row): the ``value`` column (``job_id`` or ``_g``) of
    each parent with a row in the child's jobset, for rows that repeat a DAG row (instances,
    overlapping windows); also how many (jobset, DAG row) pairs lost an edge."""
    ok = dag.code == dag_mod.OK
    child = np.repeat(np.arange(dag.offsets.size - 1, dtype=np.int64), np.diff(dag.offsets))[ok]
    edges = pl.DataFrame({"_g": child, "_p": dag.parent[ok].astype(np.int64)})
    del dag, child, ok
    jobs = jobs.with_columns(pl.col("_g").cast(pl.Int64))
    nodes = jobs.select("jobset", "_g", pl.col(value).alias("_v")).unique(["jobset", "_g"])
    named = nodes.select("jobset", "_g").join(edges, on="_g")
    kept = named.join(nodes.rename({"_g": "_p"}), on=["jobset", "_p"])
    lost = named.join(kept, on=["jobset", "_g", "_p"], how="anti").select("jobset", "_g")
    lists = kept.sort("jobset", "_g", "_v").group_by("jobset", "_g").agg(pl.col("_v"))
    jobs = (
        jobs.join(lists, on=["jobset", "_g"], how="left", maintain_order="left")
        .with_columns(pl.col("_v").fill_null(pl.lit([], pl.List(pl.Int64))).alias("parents"))
        .drop("_v")
    )
    return jobs, lost.unique().height


def _task_parents_hook(box: dict[str, Any], n: int) -> Finalize:
    """``finish`` hook: parent rows -> ``parents`` job ids within the same jobset (the DAG is
    popped from ``box`` and freed once used). Rows are usually distinct DAG rows (a compiled
    pass); windows that overlap repeat rows in several jobsets (joins per jobset)."""

    def finalize(jobs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
        dag = box.pop("dag")
        g = jobs.get_column("_g").to_numpy()
        if np.bincount(g, minlength=n).max(initial=0) > 1:  # overlapping windows repeat rows
            jobs, lost = _joined_parents(jobs, dag, "job_id")
            return jobs.drop("_g"), ({"parent_outside_jobset_removed": lost} if lost else {})
        job_id = np.full(n, -1, dtype=np.int64)
        job_id[g] = jobs.get_column("job_id").to_numpy()
        jobset = np.full(n, -1, dtype=np.int32)
        jobset[g] = jobs.get_column("jobset").to_numpy()
        counts, values, lost = dag_mod.parent_lists(dag, g, job_id, jobset)
        del job_id, jobset, dag, g
        lists = dag_mod.list_column(counts, values)
        del counts, values
        jobs = jobs.drop("_g").with_columns(lists.alias("parents"))
        return jobs, ({"parent_outside_jobset_removed": lost} if lost else {})

    return finalize


def _expand(good: pl.DataFrame, cap: int) -> tuple[pl.DataFrame, int]:
    """One row per instance (at most ``cap`` per task); weight 1 on each task's first copy."""
    inst = good.get_column("inst").to_numpy()
    copies = np.minimum(inst, cap).astype(np.int64)
    total = int(copies.sum())
    if total > MAX_INSTANCE_JOBS:
        msg = (
            f"granularity='instance' would create {total:,} jobs (more than "
            f"{MAX_INSTANCE_JOBS:,}); lower max_instances or select fewer tasks"
        )
        raise ValueError(msg)
    take = np.repeat(np.arange(good.height), copies)
    first = np.ones(total, dtype=np.int64)
    first[1:][take[1:] == take[:-1]] = 0
    duration = pl.col("inst_duration_s").fill_null(pl.col("duration_s"))
    rows = good.select(
        "line",
        "arrival_s",
        "cpu",
        "mem",
        *(["source_id"] if "source_id" in good.columns else []),
        (duration if "inst_duration_s" in good.columns else pl.col("duration_s")).alias(
            "duration_s"
        ),
        pl.col("job").alias("dag"),
        pl.int_range(pl.len(), dtype=pl.Int32).alias("_g"),
    )
    rows = rows[take].with_columns(pl.Series("weight", first))
    return rows, int((inst > cap).sum())


def _collapse(good: pl.DataFrame, critical_path: np.ndarray, how: str) -> pl.DataFrame:
    """One row per job: arrival = first start; duration and demand per ``how``."""
    work = pl.col("duration_s") * pl.col("inst")
    if how == "critical_path":
        aggs = [
            pl.col("_cp").max().alias("duration_s"),
            pl.col("cpu").max(),
            pl.col("mem").max(),
        ]
    else:
        total = work.sum()
        aggs = [total.alias("duration_s")] + [
            pl.when(total > 0)
            .then((pl.col(r) * work).sum() / total)
            .otherwise(pl.col(r).mean())
            .alias(r)
            for r in ("cpu", "mem")
        ]
    jobs = (
        good.with_columns(pl.Series("_cp", critical_path))
        .group_by("job")
        .agg(
            pl.col("line").min(),
            pl.len().cast(pl.Int64).alias("weight"),
            pl.col("arrival_s").min(),
            *aggs,
        )
        .sort("line")
    )
    key = pl.col("job")
    return jobs.with_columns(
        pl.when(key >= 0).then(pl.format("j_{}", key)).alias("source_id")
    ).drop("job")
