"""Views of a schedule: Gantt charts, a schedule diff of two policies, and the cluster over time.

Axes-level functions in seaborn's style (``plot_*(..., ax=None) -> Axes``); they draw per-job
results (one policy on one jobset) and the tables of :mod:`schedlab.evaluation.timeline`.

**Gantt chart of a single pool** (:func:`plot_gantt`, ``layout="rows"``): one row per job in
arrival order, a thin grey line while it waits and a bar while it runs, coloured by
its length bucket. With 50–200 jobs this reads best: the waiting lines show at a glance what
slowdown is made of (slowdown = 1 + wait / duration), and because rows follow arrival order, not
start, the same job sits in the same row under every policy, so two charts side by side
(:func:`plot_schedule_diff`) compare job by job. ``layout="lanes"`` stacks the jobs in the
cluster instead: one lane per machine (the ``machine`` column of multi-machine results) or one
lane for the pool, a job a rectangle as tall as its share of one resource, placed at the lowest
free height (positions within a lane are for reading only: the simulator pools capacity).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from schedlab.evaluation.clock import Clock
from schedlab.evaluation.metrics import bucket_expr, length_column
from schedlab.reports.figures import bucket_label
from schedlab.reports.output import is_narrow
from schedlab.reports.time_axis import TimeAxis
from schedlab.results_check import REQUIRED

WAIT_COLOR = "0.6"
"""Colour of the waiting lines."""


def job_colors(
    jobs: pl.DataFrame,
    *,
    color_by: Literal["length", "category"] = "length",
    buckets: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """The colour group of each job and a colour per group (legend order).

    ``"length"`` groups jobs by the length buckets (light: short, dark: long; jobs in no bucket
    are ``"other"``, grey); ``"category"`` by the ``category`` column (a qualitative palette).
    """
    if color_by == "category":
        if "category" not in jobs.columns:
            msg = f"no 'category' column to colour by; columns: {jobs.columns}"
            raise ValueError(msg)
        groups = jobs.get_column("category").cast(pl.String).fill_null("none").to_list()
        names = sorted(set(groups))
        qualitative = sns.color_palette("Set2", len(names))
        return groups, {g: qualitative[i % len(qualitative)] for i, g in enumerate(names)}
    bounds = dict(buckets or {})
    label = {b: bucket_label(b, r) for b, r in bounds.items()}
    bucket = bucket_expr(bounds, length_column(jobs)).cast(pl.String)
    groups = jobs.select(bucket).to_series().to_list() if bounds else []
    groups = [label.get(g, "other") for g in groups] if bounds else ["all jobs"] * jobs.height
    palette = sns.color_palette("crest", max(len(bounds), 1))
    colors: dict[str, Any] = {label[b]: palette[i] for i, b in enumerate(bounds)}
    if "other" in groups or not bounds:
        colors["other" if bounds else "all jobs"] = palette[-1] if not bounds else "0.55"
    return groups, colors


def _one_schedule(jobs: pl.DataFrame) -> pl.DataFrame:
    """Check ``jobs`` holds one policy on one jobset; sorted in arrival order (a DAG task by
    its job's arrival, ``job_arrival``: its own, its ready time, depends on the policy)."""
    for col in ("policy", "jobset"):
        if col in jobs.columns and jobs.get_column(col).n_unique() > 1:
            have = jobs.get_column(col).unique().sort().to_list()
            msg = f"a Gantt chart draws one schedule; select one {col} of {have[:10]}"
            raise ValueError(msg)
    arrived = ["job_arrival", "arrival"] if "job_arrival" in jobs.columns else ["arrival"]
    return jobs.sort(pl.coalesce(arrived), "job_id")


def _stack(
    start: np.ndarray, finish: np.ndarray, height: np.ndarray, base: float
) -> list[np.ndarray]:
    """Outline of each job stacked in a lane: at every moment, the running jobs are stacked
    from ``base`` up in order of start (then job order), so the stack is exactly the lane's use.

    A job's bottom drops when a job below it finishes; its outline is a staircase polygon,
    returned as an array of shape ``(n_vertices, 2)`` (time, height) per job.
    """
    events = np.unique(np.concatenate([start, finish]))
    order = np.lexsort((np.arange(start.size), start))
    bottoms: list[list[tuple[float, float, float]]] = [[] for _ in range(start.size)]
    for t0, t1 in itertools.pairwise(events):
        level = base
        for j in order:
            if start[j] <= t0 < finish[j]:
                bottoms[j].append((t0, t1, level))
                level += height[j]
    polys = []
    for j, segs in enumerate(bottoms):
        top = [(x, b + height[j]) for x0, x1, b in segs for x in (x0, x1)]
        low = [(x, b) for x0, x1, b in reversed(segs) for x in (x1, x0)]
        polys.append(np.array(top + low, dtype=float))
    return polys


def plot_gantt(
    jobs: pl.DataFrame,
    *,
    layout: Literal["rows", "lanes"] | None = None,
    resource: str | None = None,
    capacity: float | None = None,
    color_by: Literal["length", "category"] = "length",
    buckets: Mapping[str, tuple[float, float]] | None = None,
    legend: bool = True,
    axis: TimeAxis | None = None,
    window: tuple[float, float] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Gantt chart of one schedule (one policy on one jobset).

    Parameters
    ----------
    jobs
        Per-job results of one policy on one jobset: ``job_id``, ``arrival``, ``start``,
        ``finish``, ``duration`` (steps); for ``layout="lanes"`` also the ``resource`` demand
        column, and ``machine`` for one lane per machine.
    layout
        ``"rows"``: one row per job in arrival order (top: first), waiting line and run bar.
        ``"lanes"``: jobs stacked by their demand of ``resource`` in one lane per machine (or
        one for the pool). Default: lanes when the jobs ran on several machines, else rows.
    resource
        Demand column that sets the jobs' heights in lanes; default the first resource-like
        column (not a results column).
    capacity
        Capacity of one lane in the units of ``resource`` (default the largest demand).
    color_by
        ``"length"`` (buckets of ``buckets``) or ``"category"``.
    buckets
        Length bucket name -> inclusive duration range (steps).
    legend
        Draw the colour legend.
    axis
        How to draw the times (dates, hours, steps); default steps.
    window
        Times to show (steps, from, to); default ``0`` to the last finish. Only the jobs that
        arrive in it get a row (``layout="rows"``).
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    df = _one_schedule(jobs)
    end = max(int(cast("int | None", df.get_column("finish").max()) or 1), 1)
    lo, hi = window if window is not None else (0.0, float(end))
    axis = axis or TimeAxis(Clock(step=None), hi - lo)
    if layout is None:
        layout = "lanes" if _machines(df) > 1 else "rows"
    if window is not None:  # rows: the jobs arriving in it; lanes: those running in it
        inside = (
            pl.col("arrival").is_between(lo, hi, closed="left")
            if layout == "rows"
            else (pl.col("start") < hi) & (pl.col("finish") > lo)
        )
        df = df.filter(inside)
    groups, colors = job_colors(df, color_by=color_by, buckets=buckets)
    start, finish = (df.get_column(c).to_numpy() for c in ("start", "finish"))
    arrival = df.get_column("arrival").to_numpy()
    if layout == "rows":
        y = np.arange(df.height)
        waits = start > arrival
        wait_x = (x_of(axis, arrival[waits]), x_of(axis, start[waits]))
        ax.hlines(y[waits], *wait_x, color=WAIT_COLOR, linewidth=0.6)
        _bars(ax, y, x_of(axis, start), x_of(axis, finish), groups, colors)
        ax.set_ylim(df.height - 0.4, -0.6)
        ax.yaxis.set_major_locator(plt.MaxNLocator(6, integer=True))
        ax.set_ylabel("Job (in order of arrival)")
    else:
        _lanes(ax, df, x_of(axis, start), x_of(axis, finish), groups, colors, resource, capacity)
    ax.set_xlim(*x_of(axis, np.array([lo, hi])))
    if axis.dated:
        ax.xaxis_date()
    axis.format(ax)
    ax.grid(axis="y", visible=False)
    if legend:
        handles = _handles(groups, colors, waiting=layout == "rows")
        title = "Job length" if color_by == "length" else "Category"
        if is_narrow(ax):
            ax.legend(
                handles=handles,
                title=title,
                loc="upper center",
                ncol=2,
                frameon=False,
                bbox_to_anchor=(0.5, -0.22),
            )
        else:
            ax.legend(
                handles=handles,
                title=title,
                loc="upper left",
                frameon=False,
                bbox_to_anchor=(1.01, 1.0),
            )
    return ax


def _handles(groups: Sequence[str], colors: Mapping[str, Any], *, waiting: bool) -> list[Any]:
    """Legend entries: one patch per colour group present, and the waiting line."""
    present = set(groups)
    out: list[Any] = [Patch(color=colors[g], label=g) for g in colors if g in present]
    return out + ([Line2D([], [], color=WAIT_COLOR, label="waiting")] if waiting else [])


def _bars(
    ax: Axes,
    y: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    groups: Sequence[str],
    colors: Mapping[str, Any],
) -> None:
    """One horizontal bar per job, centred on its row ``y``: one collection per colour group
    (thousands of bars draw as fast as one)."""
    g = np.asarray(groups)
    for name in colors:
        sel = g == name
        if sel.any():
            x0, x1, yy = start[sel], finish[sel], y[sel].astype(float)
            boxes = np.stack(
                [
                    np.column_stack([x0, yy - 0.4]),
                    np.column_stack([x1, yy - 0.4]),
                    np.column_stack([x1, yy + 0.4]),
                    np.column_stack([x0, yy + 0.4]),
                ],
                axis=1,
            )
            ax.add_collection(PolyCollection(list(boxes), facecolors=[colors[name]], linewidths=0))


def x_of(axis: TimeAxis, steps: np.ndarray) -> np.ndarray:
    """x coordinates (float64) of times in steps on ``axis`` (dates as matplotlib date numbers)."""
    values = axis.values(np.asarray(steps, dtype=np.float64))
    return mdates.date2num(values) if axis.dated else values


def _lanes(
    ax: Axes,
    df: pl.DataFrame,
    start: np.ndarray,
    finish: np.ndarray,
    groups: Sequence[str],
    colors: Mapping[str, Any],
    resource: str | None,
    capacity: float | None,
) -> None:
    """Jobs stacked by their demand of ``resource``, one lane per machine (or the pool)."""
    skip = {*REQUIRED, "workload", "load", "seed", "machine", "category"}  # not demands
    numeric = [c for c in df.columns if c not in skip and df.schema[c].is_numeric()]
    res = resource or (numeric[0] if numeric else None)
    if res is None or res not in df.columns:
        msg = f"layout='lanes' needs a demand column (resource={resource!r}); have {df.columns}"
        raise ValueError(msg)
    demand = df.get_column(res).to_numpy().astype(float)
    cap = float(capacity or demand.max(initial=1.0) or 1.0)
    several = _machines(df) > 1
    lanes = df.get_column("machine").to_numpy() if several else np.zeros(df.height)
    names = np.unique(lanes)
    polys: list[np.ndarray] = [np.zeros((0, 2))] * df.height
    for k, lane in enumerate(names):
        sel = np.flatnonzero(lanes == lane)
        for j, poly in zip(
            sel, _stack(start[sel], finish[sel], 0.9 * demand[sel] / cap, k), strict=True
        ):
            polys[j] = poly
    face = [colors[g] for g in groups]
    ax.add_collection(PolyCollection(polys, facecolors=face, edgecolors="white", linewidths=0.3))
    if several:
        ax.set_yticks(np.arange(names.size) + 0.45, [str(n) for n in names])
        ax.set_ylabel(f"Machine ({res} in use, stacked)")
    else:
        ax.set_yticks([0, 0.45, 0.9], ["0", "50%", "100%"])
        ax.set_ylabel(f"{res} in use (share of capacity)")
    ax.set_ylim(0, names.size - 0.1 + 0.02)


def _machines(df: pl.DataFrame) -> int:
    """Distinct machines jobs ran on (1 for a single pool or without a ``machine`` column)."""
    return df.get_column("machine").n_unique() if "machine" in df.columns else 1


def plot_schedule_diff(
    a: pl.DataFrame,
    b: pl.DataFrame,
    *,
    palette: Mapping[str, Any],
    buckets: Mapping[str, tuple[float, float]] | None = None,
    color_by: Literal["length", "category"] = "length",
    axis: TimeAxis | None = None,
    window: tuple[float, float] | None = None,
    axes: Sequence[Axes],
) -> Sequence[Axes]:
    """Two schedules of the same jobset side by side, and each job's change of finish time.

    Parameters
    ----------
    a, b
        Per-job results of two policies on the same jobset (one ``policy`` value each).
    palette
        Policy -> colour (the difference bars take the colour of the policy that finished the
        job sooner).
    buckets, color_by, axis, window
        As :func:`plot_gantt` (with a window, the jobs arriving in it).
    axes
        Three Axes sharing y: Gantt of ``a``, Gantt of ``b``, finish of ``b`` minus finish of
        ``a`` per job (in the unit of ``axis``; < 0: ``b`` finished it sooner).

    Raises
    ------
    ValueError
        If ``a`` and ``b`` do not hold the same jobs.
    """
    a, b = _one_schedule(a), _one_schedule(b)
    if a.get_column("job_id").to_list() != b.get_column("job_id").to_list():
        msg = "the two schedules hold different jobs; draw two policies on the same jobset"
        raise ValueError(msg)
    names = [str(x.get_column("policy")[0]) for x in (a, b)]
    end = float(max(a.get_column("finish").max(), b.get_column("finish").max()))  # type: ignore[type-var, arg-type]
    lo, hi = window if window is not None else (0.0, end)
    axis = axis or TimeAxis(Clock(step=None), hi - lo)
    for k, (df, ax) in enumerate(zip((a, b), axes[:2], strict=True)):
        plot_gantt(
            df,
            layout="rows",
            color_by=color_by,
            buckets=buckets,
            legend=False,
            axis=axis,
            window=(lo, hi),
            ax=ax,
        )
        sd = cast("float", df.get_column("slowdown").mean())  # a float column
        ax.set_title(f"{names[k]} (average slowdown {sd:,.2f})", color=palette.get(names[k]))
    axes[1].set_ylabel("")
    if window is not None:
        keep = a.get_column("arrival").is_between(lo, hi, closed="left")
        a, b = a.filter(keep), b.filter(keep)
    unit, length = axis.unit if not axis.dated else TimeAxis(axis.clock, hi - lo).unit
    delta = (b.get_column("finish") - a.get_column("finish")).to_numpy() / length
    y = np.arange(delta.size)
    sooner = [names[1] if d < 0 else names[0] for d in delta]
    _bars(axes[2], y, np.minimum(delta, 0.0), np.maximum(delta, 0.0), sooner, palette)
    span = float(np.abs(delta).max(initial=0.0)) or 1.0
    axes[2].set_xlim(-1.05 * span, 1.05 * span)
    axes[2].axvline(0, color="black", linewidth=0.8)
    axes[2].set_ylim(delta.size - 0.4, -0.6)
    axes[2].set_xlabel(f"Δ finish ({unit}),\n{names[1]} − {names[0]}")
    axes[2].set_title(f"{(delta < 0).sum()} sooner, {(delta > 0).sum()} later", fontsize="medium")
    axes[2].grid(axis="y", visible=False)
    groups, colors = job_colors(a, color_by=color_by, buckets=buckets)
    axes[0].figure.legend(
        handles=_handles(groups, colors, waiting=True),
        loc="outside lower center",
        ncol=4,
        frameon=False,
    )
    return axes
