"""The cluster over time: utilisation, queue, queued work and fragmentation, one line per policy.

Axes-level functions in seaborn's style over the step functions of
:mod:`schedlab.evaluation.timeline` (one row per event time; the value holds until the next
row) or their time averages (:func:`~schedlab.evaluation.timeline.binned`, drawn as steps over
their bins). Times are drawn on a :class:`~schedlab.reports.time_axis.TimeAxis`: the log's dates
where the trace gives its start, else hours or days, else steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import PowerNorm

from schedlab.evaluation.clock import Clock
from schedlab.evaluation.timeline import binned
from schedlab.reports.output import is_narrow, place_panel_legend
from schedlab.reports.palette import line_style
from schedlab.reports.time_axis import TimeAxis, nice_width

MAX_EXACT = 5_000
"""Event rows per policy drawn as they are; a longer schedule is drawn as time averages over
:data:`BINS` bins (exact integrals of the step functions: nothing a page could show is lost)."""
BINS = 200
LABELS = {
    "running": "Running jobs",
    "queue": "Waiting jobs",
    "fragmentation": "Fragmented",
}
SHARES = ("util_", "frag_")


def quantity_label(quantity: str, axis: TimeAxis | None = None) -> str:
    """The y label of a quantity of :func:`~schedlab.evaluation.timeline.timeline`."""
    if quantity in LABELS:
        return LABELS[quantity]
    if quantity == "queued_work":
        unit = "steps" if axis is None or axis.clock.step is None else "hours"
        return f"Queued work\n(cluster {unit})"
    name = quantity.split("_", 1)[-1]
    return f"{name} in use" if quantity.startswith("util_") else f"Fragmented {name}"


def plot_timeline(
    tl: pl.DataFrame,
    *,
    quantity: str,
    palette: Mapping[str, Any],
    axis: TimeAxis | None = None,
    log: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """One quantity of :func:`~schedlab.evaluation.timeline.timeline` (or its mean over jobsets,
    or its bins) over time, one line per policy.

    Parameters
    ----------
    tl
        Rows of one jobset (or of :func:`~schedlab.evaluation.timeline.mean_timeline` or
        :func:`~schedlab.evaluation.timeline.binned` for one condition): ``policy``, ``time``
        (steps) and ``quantity``.
    quantity
        ``"running"``, ``"queue"``, ``"queued_work"``, ``"util_<r>"``, ``"frag_<r>"`` or
        ``"fragmentation"``.
    palette
        Policy -> colour; also the legend order. Policies missing from it are not drawn.
    axis
        How to draw the times; default steps (:class:`~schedlab.reports.time_axis.TimeAxis` of
        a clock without seconds).
    log
        A symmetric log y axis (linear up to 1) for the counts and queued work, so that a
        policy whose queue runs away does not flatten the others.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    end = cast("float | None", tl.get_column("time").max()) or 1.0
    axis = axis or TimeAxis(Clock(step=None), float(end))
    scale = 3600.0 / axis.clock.step if quantity == "queued_work" and axis.clock.step else 1.0
    have = set(tl.get_column("policy").unique().to_list())
    for policy in (p for p in palette if p in have):
        r = tl.filter(pl.col("policy") == policy).sort("time")
        ax.step(
            axis.values(r.get_column("time").to_numpy()),
            r.get_column(quantity).to_numpy() / scale,
            where="post",
            color=palette[policy],
            label=policy,
            linestyle=line_style(palette, policy),
            linewidth=1.0,
        )
    if quantity.startswith("util_"):
        ax.set_ylim(-0.02, 1.02)
    else:
        ax.set_ylim(bottom=0)
    if log and not quantity.startswith(SHARES) and quantity != "fragmentation":
        ax.set_yscale("symlog", linthresh=1.0, linscale=0.5)
        ax.set_ylim(bottom=0)
    elif quantity in ("queue", "running"):
        ax.yaxis.set_major_locator(plt.MaxNLocator(4, integer=True))
    if quantity.startswith(SHARES) or quantity == "fragmentation":
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{100 * v:.0f}%"))
    else:
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.4g}"))
    ax.set_ylabel(quantity_label(quantity, axis))
    ax.margins(x=0)  # from the start to the last finish, like the Gantt charts
    axis.format(ax)
    return ax


def timeline_quantities(resources: Sequence[str]) -> list[str]:
    """The panels of :func:`plot_timelines`, top to bottom."""
    return [f"util_{r}" for r in resources] + ["queue", "queued_work", "fragmentation"]


def plot_timelines(
    tl: pl.DataFrame,
    *,
    resources: Sequence[str],
    palette: Mapping[str, Any],
    axes: Sequence[Axes],
    axis: TimeAxis | None = None,
    log: bool = False,
) -> Sequence[Axes]:
    """Utilisation of each resource, queue length, queued work and fragmentation, one Axes each
    (sharing x).

    ``axes`` holds ``len(resources) + 3`` Axes (:func:`timeline_quantities`), top to bottom;
    the legend goes to the right of the figure (below it on a narrow one); ``log`` as
    :func:`plot_timeline`.
    """
    quantities = timeline_quantities(resources)
    per_policy = tl.height / max(tl.get_column("policy").n_unique(), 1)
    if per_policy > MAX_EXACT:
        end = cast("float | None", tl.get_column("time").max()) or 1.0
        axis = axis or TimeAxis(Clock(step=None), float(end))
        tl = binned(tl, nice_width(axis.span / BINS, axis.clock))  # what a page can show
    for k, (q, ax) in enumerate(zip(quantities, axes, strict=True)):
        plot_timeline(tl, quantity=q, palette=palette, axis=axis, log=log, ax=ax)
        if k < len(quantities) - 1:
            ax.set_xlabel("")
    for ax in axes:
        ax.yaxis.label.set_fontsize("small")
    handles, labels = axes[0].get_legend_handles_labels()
    if is_narrow(axes[0]):
        place_panel_legend(axes)
    elif handles:
        axes[0].figure.legend(
            handles, labels, title="Policy", loc="outside right upper", frameon=False
        )
    return axes


def plot_queue_heatmap(
    binned: pl.DataFrame,
    *,
    order: Sequence[str],
    axis: TimeAxis,
    quantity: str = "queue",
    ax: Axes | None = None,
) -> Axes:
    """One row per policy, one column per time bin, coloured by the bin's mean of ``quantity``
    (:func:`~schedlab.evaluation.timeline.binned`): many policies over a long log at a glance.

    Parameters
    ----------
    binned
        ``policy``, ``time`` (the bins' starts, steps, the same bins for every policy) and
        ``quantity``.
    order
        Policies, top to bottom (those without rows are skipped).
    axis
        How to draw the times.
    quantity
        The column to colour by.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    have = set(binned.get_column("policy").to_list())
    rows = [p for p in order if p in have]
    hours = 3600.0 / axis.clock.step if quantity == "queued_work" and axis.clock.step else 1.0
    times = np.sort(binned.get_column("time").unique().to_numpy())
    grid = np.zeros((len(rows), times.size))
    for i, p in enumerate(rows):
        part = binned.filter(pl.col("policy") == p).sort("time")
        idx = np.searchsorted(times, part.get_column("time").to_numpy())
        grid[i, idx] = part.get_column(quantity).to_numpy() / hours
    width = float(times[1] - times[0]) if times.size > 1 else 1.0
    edges = np.append(times, times[-1] + width) if times.size else np.array([0.0, 1.0])
    x = axis.values(edges)
    if axis.dated:
        import matplotlib.dates as mdates

        x = mdates.date2num(x)
    norm = PowerNorm(0.5, vmin=0.0, vmax=max(float(grid.max(initial=0.0)), 1e-12))
    mesh = ax.pcolormesh(
        x, np.arange(len(rows) + 1), grid, cmap="rocket_r", norm=norm, shading="flat"
    )
    ax.set_yticks(np.arange(len(rows)) + 0.5, rows)
    ax.set_ylim(len(rows), 0)
    ax.grid(False)
    if axis.dated:
        ax.xaxis_date()
    axis.format(ax)
    bar = ax.figure.colorbar(mesh, ax=ax, pad=0.01, aspect=30)
    bar.ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.4g}"))
    bar.set_label(quantity_label(quantity, axis).replace("\n", " "), fontsize="small")
    return ax
