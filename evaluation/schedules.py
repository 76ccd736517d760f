"""Per-job results with their jobs' demands: the schedules that views over time are drawn from.

The results table does not repeat the demands (the JobSet is their single source, and an
experiment directory keeps it in ``jobsets/<workload>.parquet``): :func:`schedules` joins them
on ``(jobset, job_id)``, or uses demand columns already in the table (e.g. an exported per-job
table). A **schedule** is one policy on one jobset (and workload, load, seed: :data:`GROUP`).
Views over time are in :mod:`schedlab.evaluation.timeline`; :func:`machine_utilisation` gives
the per-machine balance and :func:`representative_jobset` the jobset a report draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from schedlab.errors import ResultsError
from schedlab.evaluation.metrics import length_buckets
from schedlab.jobset import JobSet
from schedlab.results import Results

GROUP = ("policy", "workload", "load", "seed", "jobset")
"""Columns identifying one schedule; those present in a table are used."""


@dataclass(frozen=True, slots=True)
class Schedules:
    """Per-job results with the jobs' demands: what the views of a schedule are drawn from."""

    jobs: pl.DataFrame
    """The results columns (:data:`~schedlab.results.RESULT_COLUMNS`, ``workload`` and
    ``machine`` when present) plus one float64 demand column per resource (and the jobs'
    ``category`` when the JobSet has one)."""
    resources: tuple[str, ...]
    """Resource names (demand columns)."""
    capacity: tuple[float, ...]
    """Cluster capacity per resource (all machines together), in the units of the demands."""
    length_buckets: dict[str, tuple[float, float]]
    """Named inclusive duration ranges (steps) for colouring jobs by length
    (:func:`~schedlab.evaluation.metrics.length_buckets` of the whole results)."""

    def select(
        self,
        *,
        policies: list[str] | None = None,
        jobsets: list[int] | None = None,
        load: float | None = None,
    ) -> Schedules:
        """The schedules of some policies, jobsets and one offered load (None: all).

        Raises
        ------
        ResultsError
            If a requested policy or jobset, or the load, is not in the results.
        """
        df = self.jobs
        for col, wanted in (("policy", policies), ("jobset", jobsets)):
            if wanted is None:
                continue
            have = set(df.get_column(col).unique().to_list())
            missing = [w for w in wanted if w not in have]
            if missing:
                msg = f"{col} {missing} not in the results; they hold {sorted(have)[:20]}"
                raise ResultsError(msg)
            df = df.filter(pl.col(col).is_in(wanted))
        if load is not None:
            df = df.filter(pl.col("load").is_close(load))
            if df.height == 0:
                present = sorted(self.jobs.get_column("load").drop_nulls().unique().to_list())
                msg = f"no results at offered load {load}; loads present: {present}"
                raise ResultsError(msg)
        return replace(self, jobs=df)


def schedules(results: Results, jobs: JobSet | None = None) -> Schedules:
    """The per-job results of ``results`` with the demands of their jobs.

    Parameters
    ----------
    results
        Per-job results of one workload.
    jobs
        The JobSet the results were simulated on; not needed when the results table already
        holds a demand column per resource.

    Raises
    ------
    ResultsError
        If the demands are neither in the table nor given, or ``jobs`` does not match the
        results (a job missing, or another duration).
    """
    table = results.table
    meta = jobs.meta.to_json() if jobs is not None else results.meta.get("jobset", {})
    resources = tuple(meta.get("resources", ()))
    capacity = tuple(float(c) for c in meta.get("capacity", ()))
    if not resources:
        msg = "the results metadata names no resources; pass the JobSet they were simulated on"
        raise ResultsError(msg)
    if not all(r in table.columns for r in resources):
        if jobs is None:
            msg = (
                f"the results hold no demand columns {list(resources)}; pass the JobSet they "
                "were simulated on (an experiment directory keeps it in jobsets/)"
            )
            raise ResultsError(msg)
        table = _join_demands(table, jobs)
    table = table.with_columns(pl.col(r).cast(pl.Float64) for r in resources)
    return Schedules(table, resources, capacity, length_buckets(results))


def _join_demands(table: pl.DataFrame, jobs: JobSet) -> pl.DataFrame:
    extra = [c for c in ("category",) if c in jobs.jobs.columns and c not in table.columns]
    killable = "killed" in table.columns and "estimate" in jobs.jobs.columns
    demands = jobs.jobs.select(
        "jobset",
        "job_id",
        pl.col("duration").alias("_duration"),
        *([pl.col("estimate").alias("_estimate")] if killable else []),
        *jobs.resources,
        *extra,
    )
    out = table.drop([r for r in jobs.resources if r in table.columns]).join(
        demands, on=["jobset", "job_id"], how="left"
    )
    if killable:  # a job killed at its request ran its estimate
        ran = pl.min_horizontal("_duration", "_estimate")
        out = out.with_columns(
            pl.when(pl.col("killed")).then(ran).otherwise("_duration").alias("_duration")
        ).drop("_estimate")
    bad = out.filter(
        pl.col("_duration").is_null() | (pl.col("_duration") != pl.col("duration"))
    ).head(1)
    if bad.height:
        r = bad.row(0, named=True)
        what = "is not in" if r["_duration"] is None else f"has duration {r['_duration']} in"
        msg = (
            f"job {r['job_id']} of jobset {r['jobset']} (duration {r['duration']} in the "
            f"results) {what} the JobSet: these results were not simulated on it"
        )
        raise ResultsError(msg)
    return out.drop("_duration")


def machine_utilisation(s: Schedules, machines: int) -> pl.DataFrame:
    """Utilisation of every machine of a cluster of ``machines`` identical machines.

    Per schedule and machine: for each resource ``r``, ``util_<r>`` = Σ demand_r · duration of
    the jobs that ran there over (one machine's capacity_r · makespan), where the makespan is the
    schedule's last finish; and ``jobs`` run there. A machine no job ran on has zeros.

    Returns
    -------
    polars.DataFrame
        The schedule columns, ``machine`` (int64), ``jobs`` (int64), ``util_<r>`` (float64).
    """
    if "machine" not in s.jobs.columns:
        msg = "the results have no machine column (simulate them again to place jobs on machines)"
        raise ResultsError(msg)
    group = [c for c in GROUP if c in s.jobs.columns]
    per_machine = [c / machines for c in s.capacity]
    span = s.jobs.group_by(group).agg(pl.col("finish").max().alias("_makespan"))
    grid = span.join(pl.DataFrame({"machine": np.arange(machines, dtype=np.int64)}), how="cross")
    work = s.jobs.group_by([*group, "machine"]).agg(
        pl.len().cast(pl.Int64).alias("jobs"),
        *((pl.col(r) * pl.col("duration")).sum().alias(f"_work_{r}") for r in s.resources),
    )
    out = grid.join(work, on=[*group, "machine"], how="left").fill_null(0)
    return out.select(
        *group,
        "machine",
        "jobs",
        *(
            (pl.col(f"_work_{r}") / (cap * pl.col("_makespan"))).alias(f"util_{r}")
            for r, cap in zip(s.resources, per_machine, strict=True)
        ),
    ).sort([*group, "machine"], nulls_last=True)


def representative_jobset(
    per_jobset: pl.DataFrame, *, reference: str, metric: str = "slowdown", load: float | None = None
) -> int:
    """The jobset whose ``metric`` under ``reference`` is the median over jobsets.

    With an even number of jobsets, the lower of the two middle ones; ties go to the lower id.

    Parameters
    ----------
    per_jobset
        :func:`~schedlab.evaluation.metrics.per_jobset` of one workload.
    reference
        Policy whose values rank the jobsets.
    metric
        Per-jobset metric to rank by.
    load
        Offered load to pick from (None: every jobset).

    Raises
    ------
    ResultsError
        If ``reference`` has no jobset (at that load).
    """
    rows = per_jobset.filter(pl.col("policy") == reference)
    if load is not None:
        rows = rows.filter(pl.col("load").is_close(load))
    if rows.height == 0:
        where = "" if load is None else f" at offered load {load}"
        msg = f"policy {reference!r} has no jobset{where} to pick a representative one from"
        raise ResultsError(msg)
    ranked = rows.sort(metric, "jobset")
    return int(ranked.get_column("jobset")[(ranked.height - 1) // 2])
