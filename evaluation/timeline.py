"""The schedule over time: utilisation per resource, queue, queued work and fragmentation.

Computed from the per-job results (``arrival``, ``start``, ``finish``, in steps) and the jobs'
demands (:func:`~schedlab.evaluation.schedules.schedules`); drawn by
:mod:`schedlab.reports.schedule`. A schedule changes only at its events (an arrival, a start, a
finish), so every quantity is a **step function** kept as one row per distinct event time: the
value holds from that row's ``time`` until the next row's. A schedule of ``n`` jobs has at most
``3 n + 1`` rows, computed in ``O(n log n)`` (:mod:`schedlab.evaluation.events`), whatever the
time step or the makespan: a 28,000-job log replayed at 1 s steps is ~85,000 rows per policy.

Definitions, for one **schedule** (one policy on one jobset) at time ``t`` (steps from the
jobset's start; a job waits during ``[arrival, start)`` and runs during ``[start, finish)``):

``running``
    Jobs running at ``t``.
``queue``
    Jobs waiting at ``t``: arrived and not started, in the visible slots and the backlog alike.
``queued_work``
    Work of the waiting jobs: Σ share of the first resource × run time (steps), i.e. how long
    the whole cluster would need to run them.
``util_<r>``
    Demand of resource ``r`` of the running jobs over the capacity of ``r``, in [0, 1].
``frag_<r>``
    **Fragmentation**: free capacity of ``r`` that no waiting job can use, as a fraction of the
    capacity. It is the free share ``1 − util_<r>`` while at least one job waits and no
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

import numpy as np
import polars as pl

from schedlab.evaluation.events import schedule_events
from schedlab.evaluation.schedules import GROUP, Schedules

QUANTITIES = ("running", "queue", "queued_work")
"""Quantities of :func:`timeline` besides ``util_<r>``, ``frag_<r>`` and ``fragmentation``."""


def _group_columns(df: pl.DataFrame) -> list[str]:
    return [c for c in GROUP if c in df.columns]


def timeline(s: Schedules) -> pl.DataFrame:
    """Running jobs, queue, queued work, utilisation and fragmentation of every schedule, at
    each of its event times.

    Returns
    -------
    polars.DataFrame
        One row per schedule and distinct event time: the schedule's columns of
        :data:`~schedlab.evaluation.schedules.GROUP` that the results have, ``time`` (int64,
        steps from the jobset's start: the value holds from here to the schedule's next row),
        ``running`` and ``queue`` (int64, jobs), ``queued_work`` (float64, steps of the whole
        cluster), ``util_<r>`` and ``frag_<r>`` per resource and ``fragmentation`` (float64,
        fractions of capacity; definitions in the module docstring). Each schedule starts at
        time 0 and ends with an all-zero row at its makespan (its last finish). Sorted by the
        schedule columns and time.
    """
    group = _group_columns(s.jobs)
    df = s.jobs.sort(*group, "arrival", "job_id", nulls_last=True)
    keys = (
        df.select(group)
        .with_row_index("_i")
        .group_by(group, maintain_order=True)
        .agg(pl.col("_i").first().alias("_lo"))
    )
    bounds = np.append(keys.get_column("_lo").to_numpy(), df.height).astype(np.int64)
    cap = np.asarray(s.capacity, dtype=np.float64)
    # a writable C-order copy whatever polars gives (F order for several columns, read-only
    # for one): one compiled signature, the one ``schedlab compile`` made
    demand = np.array(df.select(s.resources).to_numpy(), dtype=np.float64, order="C")
    demand = demand.reshape(df.height, -1)
    duration = (df.get_column("finish") - df.get_column("start")).to_numpy().astype(np.float64)
    work = demand[:, 0] / cap[0] * duration if demand.shape[1] else np.zeros(df.height)
    arrival, start, finish = (
        df.get_column(c).to_numpy().astype(np.int64) for c in ("arrival", "start", "finish")
    )
    index, time, running, queue, used, frag, queued = schedule_events(
        bounds, (arrival, start, finish), demand, cap, work
    )
    util = np.clip(used / cap, 0.0, 1.0)
    cols = {
        "time": time,
        "running": running,
        "queue": queue,
        "queued_work": queued,
        **{f"util_{r}": util[:, i] for i, r in enumerate(s.resources)},
        **{f"frag_{r}": frag[:, i] for i, r in enumerate(s.resources)},
        "fragmentation": frag.mean(axis=1) if len(s.resources) else np.zeros(time.size),
    }
    return keys.select(pl.col(group).gather(index)).hstack(pl.DataFrame(cols))


def value_columns(tl: pl.DataFrame) -> list[str]:
    """The quantities of a :func:`timeline` table (its columns other than keys and time)."""
    return [
        c
        for c in tl.columns
        if c in QUANTITIES or c.startswith(("util_", "frag_")) or c == "fragmentation"
    ]


def _lengths(tl: pl.DataFrame, group: list[str]) -> pl.Expr:
    """How long each row's values hold: to the next row of its schedule (0 for the last)."""
    return (pl.col("time").shift(-1).over(group) - pl.col("time")).fill_null(0)


def mean_timeline(tl: pl.DataFrame) -> pl.DataFrame:
    """:func:`timeline` averaged over the jobsets of each policy (and workload and load).

    A jobset that has finished contributes zeros (an idle cluster, an empty queue) until the
    last jobset of its group finishes, so each value is the mean over all the group's jobsets
    at that time from their start. The result is again a step function: one row per distinct
    event time of any of the group's jobsets.

    Returns
    -------
    polars.DataFrame
        The group columns without ``seed``/``jobset``, ``time``, the quantities of
        :func:`timeline` (float64 means), ``active`` (fraction of the jobsets not finished yet)
        and ``n_jobsets``.
    """
    by = [c for c in ("policy", "workload", "load") if c in tl.columns]
    group = _group_columns(tl)
    values = value_columns(tl)
    ids = [c for c in ("seed", "jobset") if c in tl.columns]
    n = tl.group_by(by).agg(pl.struct(ids).n_unique().alias("n_jobsets"))
    last = pl.int_range(pl.len()).over(group) == pl.len().over(group) - 1
    deltas = tl.sort(*group, "time", nulls_last=True).select(
        *by,
        "time",
        *(pl.col(c).cast(pl.Float64).diff().over(group).fill_null(pl.col(c)) for c in values),
        pl.when(last).then(-1.0).when(pl.col("time") == 0).then(1.0).otherwise(0.0).alias("active"),
    )
    summed = deltas.group_by(*by, "time").agg(pl.col([*values, "active"]).sum())
    out = (
        summed.sort(*by, "time", nulls_last=True)
        .with_columns(pl.col([*values, "active"]).cum_sum().over(by))
        .join(n, on=by, how="left", nulls_equal=True)
        .with_columns((pl.col(c) / pl.col("n_jobsets")) for c in [*values, "active"])
    )
    return out.with_columns(
        pl.col(c).clip(lower_bound=0.0) for c in [*values, "active"]
    )  # rounding residue of the sums


def timeline_summary(tl: pl.DataFrame) -> pl.DataFrame:
    """One row per schedule: makespan and time averages of :func:`timeline` over it.

    Returns
    -------
    polars.DataFrame
        The schedule columns, ``makespan`` (int64 steps), ``mean_queue`` and ``max_queue``
        (jobs), ``mean_queued_work`` (steps of the whole cluster), ``mean_util_<r>`` and
        ``mean_fragmentation`` (fractions of capacity, averaged over ``[0, makespan)``).
    """
    group = _group_columns(tl)
    util = [c for c in tl.columns if c.startswith("util_")]
    span = pl.col("time").max()

    def mean(c: str) -> pl.Expr:
        return (pl.col(c) * pl.col("_len")).sum() / span

    return (
        tl.with_columns(_lengths(tl, group).alias("_len"))
        .group_by(group, maintain_order=True)
        .agg(
            span.cast(pl.Int64).alias("makespan"),
            mean("queue").alias("mean_queue"),
            pl.col("queue").max().alias("max_queue"),
            mean("queued_work").alias("mean_queued_work"),
            *(mean(c).alias(f"mean_{c}") for c in util),
            mean("fragmentation").alias("mean_fragmentation"),
        )
    )


def binned(tl: pl.DataFrame, width: float, *, end: float | None = None) -> pl.DataFrame:
    """Time averages of every quantity over consecutive bins of ``width`` steps, per schedule.

    The step functions are integrated exactly (``O(rows + bins)`` per schedule), so a long log
    can be drawn as, e.g., daily means without sampling.

    Parameters
    ----------
    tl
        :func:`timeline` (or :func:`mean_timeline`) rows.
    width
        Bin width, steps (> 0).
    end
        Time to cover to (steps); default each schedule's last row.

    Returns
    -------
    polars.DataFrame
        The schedule columns, ``time`` (float64, the bin's start, steps) and each quantity's
        mean over the bin (float64).
    """
    if not width > 0:
        msg = f"bin width must be > 0 steps, got {width}"
        raise ValueError(msg)
    group = _group_columns(tl)
    values = value_columns(tl)
    frames = []
    for part in tl.sort("time").partition_by(group, maintain_order=True):
        t = part.get_column("time").to_numpy().astype(np.float64)
        stop = float(end if end is not None else t[-1])
        edges = np.arange(0.0, max(stop, width) + width, width)
        cols: dict[str, np.ndarray] = {"time": edges[:-1]}
        i = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, t.size - 1)
        for c in values:
            v = part.get_column(c).to_numpy().astype(np.float64)
            area = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t))])
            at = area[i] + v[i] * np.clip(edges - t[i], 0.0, None)
            cols[c] = np.diff(np.where(edges >= t[-1], area[-1], at)) / width
        keys = part.select(pl.col(group).gather(np.zeros(edges.size - 1, np.int64)))
        frames.append(keys.hstack(pl.DataFrame(cols)))
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
