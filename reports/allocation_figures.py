"""Processor allocation charts (evalys style): each job a rectangle over the units it held.

The y axis is the cluster's units of the first resource (processors of an SWF log, slots of a
synthetic workload), numbered by :func:`~schedlab.evaluation.allocation.allocate`; a job is a
rectangle from its start to its finish over each range of units it held, coloured by its length.
Where the demands are not whole units (Alibaba's fractions of cores), the chart falls back to
stacked lanes (:func:`~schedlab.reports.schedule.plot_gantt` with ``layout="lanes"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection

from schedlab.errors import ResultsError
from schedlab.evaluation.allocation import allocate
from schedlab.evaluation.clock import Clock
from schedlab.reports.schedule import job_colors, plot_gantt, x_of
from schedlab.reports.time_axis import TimeAxis


def plot_allocation(
    jobs: pl.DataFrame,
    *,
    resource: str,
    capacity: float,
    machines: int = 1,
    buckets: Mapping[str, tuple[float, float]] | None = None,
    axis: TimeAxis | None = None,
    window: tuple[float, float] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Which units of ``resource`` each job of one schedule held, over time.

    Parameters
    ----------
    jobs
        Every job of one schedule (one policy on one jobset): ``start``, ``finish`` (steps),
        ``duration`` and the demand column ``resource`` (and ``machine`` on several machines).
        The allocation depends on the whole history, so pass every job, then a ``window``.
    resource
        The demand column drawn (the first resource).
    capacity
        The cluster's capacity of ``resource`` (all machines).
    machines
        Identical machines sharing the capacity (drawn as bands separated by lines).
    buckets
        Length buckets for the colours (:func:`~schedlab.reports.schedule.job_colors`).
    axis
        How to draw the times; default steps.
    window
        Times to show (steps, from, to); default the whole schedule.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    jobs = jobs.sort("arrival", "job_id")
    end = float(jobs.get_column("finish").max() or 1)  # type: ignore[arg-type]
    lo, hi = window if window is not None else (0.0, end)
    axis = axis or TimeAxis(Clock(step=None), hi - lo)
    try:
        ranges = allocate(jobs, resource, capacity, machines)
    except ResultsError:
        return plot_gantt(
            jobs,
            layout="lanes",
            resource=resource,
            capacity=capacity / machines,
            buckets=buckets,
            axis=axis,
            window=(lo, hi),
            ax=ax,
        )
    rows = ranges.get_column("row").to_numpy()
    start = jobs.get_column("start").to_numpy()[rows]
    finish = jobs.get_column("finish").to_numpy()[rows]
    shown = (start < hi) & (finish > lo)
    groups, colors = job_colors(jobs, buckets=buckets)
    group = np.asarray(groups)[rows]
    first = ranges.get_column("first").to_numpy().astype(float)
    last = ranges.get_column("last").to_numpy().astype(float) + 1.0
    x0, x1 = x_of(axis, start), x_of(axis, finish)
    for name, color in colors.items():
        sel = shown & (group == name)
        if not sel.any():
            continue
        boxes = np.stack(
            [
                np.column_stack([x0[sel], first[sel]]),
                np.column_stack([x1[sel], first[sel]]),
                np.column_stack([x1[sel], last[sel]]),
                np.column_stack([x0[sel], last[sel]]),
            ],
            axis=1,
        )
        ax.add_collection(
            PolyCollection(list(boxes), facecolors=[color], edgecolors="white", linewidths=0.3)
        )
    for m in range(1, machines):
        ax.axhline(m * capacity / machines, color="0.3", linewidth=0.5)
    ax.set_xlim(*x_of(axis, np.array([lo, hi])))
    ax.set_ylim(0, capacity)
    if axis.dated:
        ax.xaxis_date()
    axis.format(ax)
    ax.set_ylabel(f"{resource} (unit number)")
    ax.grid(False)
    return ax


def legend_handles(
    jobs: pl.DataFrame, buckets: Mapping[str, tuple[float, float]] | None
) -> list[Any]:
    """Legend patches of the length colours of :func:`plot_allocation`."""
    from matplotlib.patches import Patch

    groups, colors = job_colors(jobs, buckets=buckets)
    present = set(groups)
    return [Patch(color=c, label=g) for g, c in colors.items() if g in present]
