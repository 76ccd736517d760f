"""The schedule over time: utilisation per resource, queue length and fragmentation (tidy tables).

Computed from the per-job results (``arrival``, ``start``, ``finish``, in steps) and the jobs'
demands; drawn by :mod:`schedlab.reports.schedule`. The results table does not repeat the
demands (the JobSet is their single source, and an experiment directory keeps it in
``jobsets/<workload>.parquet``): :func:`schedules` joins them on ``(jobset, job_id)``, or uses
demand columns already in the table (e.g. an exported per-job table).

Definitions, for one **schedule** (one policy on one jobset) at every time step
``t = 0, 1, ..., makespan − 1``, counted from the jobset's start (``makespan`` = the last
finish); a job waits during steps ``arrival .. start − 1`` and runs during ``start .. finish − 1``:

``running``
    Jobs running at ``t``.
``queue``
    Jobs waiting at ``t``: arrived and not started, in the visible slots and the backlog alike.
``util_<r>``
    Demand of resource ``r`` of the running jobs over the capacity of ``r``, in [0, 1].
``frag_<r>``
    **Fragmentation**: free capacity of ``r`` that no waiting job can use, as a fraction of the
    capacity. It is the free share ``1 − util_<r>`` at steps where at least one job waits and no
    waiting job fits into the free capacity (demand ≤ free capacity in every resource), and 0
    otherwise: with no job waiting, idle capacity is lack of work, not fragmentation; with a
    waiting job that fits, the capacity is usable now (a policy that leaves it idle withholds
    the job). The cluster is treated as one pool of ``capacity`` (a job fits if it fits into
    the pool's free capacity).
``fragmentation``
    Mean of ``frag_<r>`` over resources: the share of the cluster left idle by the shape of
    the waiting demands.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numba
import numpy as np
import polars as pl

from schedlab import sizes
from schedlab.errors import ResultsError
from schedlab.evaluation.metrics import length_buckets
from schedlab.jobset import JobSet
from schedlab.results import Results

GROUP = ("policy", "workload", "load", "seed", "jobset")
"""Columns identifying one schedule; those present in a table are used."""

QUANTITIES = ("running", "queue")
"""Per-step counts of :func:`timeline`; then ``util_<r>``, ``frag_<r>`` and ``fragmentation``."""


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
        "jobset", "job_id", pl.col("duration").alias("_duration"),
        *([pl.col("estimate").alias("_estimate")] if killable else []), *jobs.resources, *extra,
    )  # fmt: skip
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


@numba.njit(cache=True)
def _kernel(
    bounds: np.ndarray,
    offsets: np.ndarray,
    arrival: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-step running, queue, used capacity and fragmented capacity of every schedule.

    Jobs of schedule ``g`` are rows ``bounds[g]:bounds[g+1]``, sorted by arrival; its steps are
    rows ``offsets[g]:offsets[g+1]`` of the outputs.
    """
    total, d = offsets[-1], demand.shape[1]
    running = np.zeros(total, np.int64)
    queue = np.zeros(total, np.int64)
    used = np.zeros((total, d))
    frag = np.zeros((total, d))
    tol = 1e-9 * capacity
    for g in range(bounds.size - 1):
        lo, hi, off, end = bounds[g], bounds[g + 1], offsets[g], offsets[g + 1]
        for j in range(lo, hi):
            running[off + start[j]] += 1
            queue[off + arrival[j]] += 1
            queue[off + start[j]] -= 1
            used[off + start[j]] += demand[j]
            if off + finish[j] < end:
                running[off + finish[j]] -= 1
                used[off + finish[j]] -= demand[j]
        for t in range(off + 1, end):
            running[t] += running[t - 1]
            queue[t] += queue[t - 1]
            used[t] += used[t - 1]
        waiting = np.empty(hi - lo, np.int64)
        n_wait, nxt = 0, lo
        for t in range(end - off):
            while nxt < hi and arrival[nxt] <= t:
                waiting[n_wait] = nxt
                n_wait += 1
                nxt += 1
            kept = 0
            for i in range(n_wait):
                if start[waiting[i]] > t:
                    waiting[kept] = waiting[i]
                    kept += 1
            n_wait = kept
            if n_wait == 0:
                continue
            free = capacity - used[off + t]
            fits = False
            for i in range(n_wait):
                if np.all(demand[waiting[i]] <= free + tol):
                    fits = True
                    break
            if not fits:
                frag[off + t] = np.maximum(free, 0.0) / capacity
    return running, queue, used, frag


def _group_columns(df: pl.DataFrame) -> list[str]:
    return [c for c in GROUP if c in df.columns]


def timeline(s: Schedules) -> pl.DataFrame:
    """Running jobs, queue length, utilisation and fragmentation at every step of every schedule.

    Returns
    -------
    polars.DataFrame
        One row per schedule and step: the schedule's columns of :data:`GROUP` that the results
        have, ``time`` (int64, steps from the jobset's start, ``0 .. makespan − 1``),
        ``running`` and ``queue`` (int64, jobs), ``util_<r>`` and ``frag_<r>`` per resource and
        ``fragmentation`` (float64, fractions of capacity; definitions in the module
        docstring). Sorted by the schedule columns and time.
    """
    group = _group_columns(s.jobs)
    df = s.jobs.sort(*group, "arrival", "job_id", nulls_last=True)
    keys = (
        df.select(group)
        .with_row_index("_i")
        .group_by(group, maintain_order=True)
        .agg(pl.col("_i").first().alias("_lo"), pl.col("_i").last().alias("_hi"))
    )
    bounds = np.append(keys.get_column("_lo").to_numpy(), df.height).astype(np.int64)
    finish = df.get_column("finish").to_numpy().astype(np.int64)
    spans = np.maximum.reduceat(finish, bounds[:-1]) if df.height else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(spans)]).astype(np.int64)
    d = len(s.resources)
    sizes.check(
        f"a timeline of {int(offsets[-1]):,} steps ({keys.height:,} schedules x makespan)",
        8.0 * float(offsets[-1]) * (24 + 8 * d),  # kernel arrays, columns, polars copies
        "draw the views of fewer or shorter jobsets (a coarser time step)",
    )  # fmt: skip
    running, queue, used, frag = _kernel(
        bounds,
        offsets,
        df.get_column("arrival").to_numpy().astype(np.int64),
        df.get_column("start").to_numpy().astype(np.int64),
        finish,
        df.select(s.resources).to_numpy().astype(np.float64).reshape(df.height, -1),
        np.asarray(s.capacity, dtype=np.float64),
    )
    cap = np.asarray(s.capacity, dtype=np.float64)
    util = np.clip(used / cap, 0.0, 1.0)
    index = np.repeat(np.arange(keys.height), spans)
    time = np.arange(offsets[-1]) - np.repeat(offsets[:-1], spans)
    cols = {
        "time": time.astype(np.int64),
        "running": running,
        "queue": queue,
        **{f"util_{r}": util[:, i] for i, r in enumerate(s.resources)},
        **{f"frag_{r}": frag[:, i] for i, r in enumerate(s.resources)},
        "fragmentation": frag.mean(axis=1) if len(s.resources) else np.zeros(offsets[-1]),
    }
    return keys.select(pl.col(group).gather(index)).hstack(pl.DataFrame(cols))


def _value_columns(tl: pl.DataFrame) -> list[str]:
    return [c for c in tl.columns if c in QUANTITIES or c.startswith(("util_", "frag_"))] + [
        "fragmentation"
    ]


def mean_timeline(tl: pl.DataFrame) -> pl.DataFrame:
    """:func:`timeline` averaged over the jobsets of each policy (and workload and load).

    A jobset that has finished contributes zeros (an idle cluster, an empty queue) until the
    last jobset of its group finishes, so each value is the mean over all the group's jobsets
    at that step from their start.

    Returns
    -------
    polars.DataFrame
        The group columns without ``seed``/``jobset``, ``time``, the quantities of
        :func:`timeline` (float64 means), ``active`` (fraction of the jobsets not finished yet)
        and ``n_jobsets``.
    """
    by = [c for c in ("policy", "workload", "load") if c in tl.columns]
    values = _value_columns(tl)
    ids = [c for c in ("seed", "jobset") if c in tl.columns]
    n = tl.group_by(by).agg(pl.struct(ids).n_unique().alias("n_jobsets"))
    sums = tl.group_by(*by, "time").agg(
        *(pl.col(c).sum().cast(pl.Float64) for c in values), pl.len().alias("active")
    )
    out = sums.join(n, on=by, how="left", nulls_equal=True).with_columns(
        (pl.col(c) / pl.col("n_jobsets")) for c in [*values, "active"]
    )
    return out.sort(*by, "time", nulls_last=True, maintain_order=True)


def timeline_summary(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per schedule: makespan and time averages of :func:`timeline` over it.

    Returns
    -------
    polars.DataFrame
        The schedule columns, ``makespan`` (int64 steps), ``mean_queue`` and ``max_queue``
        (jobs), ``mean_util_<r>`` and ``mean_fragmentation`` (fractions of capacity, averaged
        over the steps ``0 .. makespan − 1``).
    """
    group = _group_columns(tl)
    util = [c for c in tl.columns if c.startswith("util_")]
    return tl.group_by(group, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("makespan"),
        pl.col("queue").mean().alias("mean_queue"),
        pl.col("queue").max().alias("max_queue"),
        *(pl.col(c).mean().alias(f"mean_{c}") for c in util),
        pl.col("fragmentation").mean().alias("mean_fragmentation"),
    )


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
