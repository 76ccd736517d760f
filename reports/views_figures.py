"""The figures of the schedule section (:mod:`schedlab.reports.views`): the cluster over time,
a queue heat map of every policy, the Gantt charts and the processor allocation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from schedlab.reports.allocation_figures import legend_handles, plot_allocation
from schedlab.reports.figures import fmt_load
from schedlab.reports.output import Plot, panels
from schedlab.reports.schedule import plot_schedule_diff
from schedlab.reports.time_axis import TimeAxis
from schedlab.reports.timeline_figures import (
    plot_queue_heatmap,
    plot_timelines,
    timeline_quantities,
)
from schedlab.reports.views import ScheduleViews, jobs_in_window

PANEL_HEIGHT = 1.45
"""Height of one panel of the timeline figures, inches."""


def _where(v: ScheduleViews) -> str:
    return f"jobset {v.jobset}" + ("" if v.load is None else f" at {fmt_load(v.load)}")


def _axis(v: ScheduleViews) -> TimeAxis:
    end = float(v.jobs.get_column("finish").max() or 1)  # type: ignore[arg-type]
    return TimeAxis(v.clock, end)


def _window_axis(v: ScheduleViews) -> TimeAxis:
    if v.window is None:
        return _axis(v)
    return TimeAxis(v.clock, v.window[1] - v.window[0])


def _window_text(v: ScheduleViews) -> str:
    if v.window is None:
        return f"{_where(v)}, all {jobs_in_window(v):,} jobs"
    axis = _window_axis(v)
    lo, hi = v.window
    if axis.dated:
        first = axis.values(np.array([lo]))[0]
        when = f"from {str(first)[:16].replace('T', ' ')} ({axis.clock.zone or 'UTC'})"
    else:
        when = f"from {_axis(v).span_text(lo)} after the start"
    return (
        f"the {axis.span_text(hi - lo)} {when} where {v.policies[0]}'s queued work is "
        f"largest ({jobs_in_window(v):,} jobs arrive in it)"
    )


def gantt_figures(v: ScheduleViews, palette: Mapping[str, Any]) -> dict[str, tuple[Plot, str]]:
    """The Gantt diff of the pair and, with demands, their processor allocation."""
    parts = [v.jobs.filter(pl.col("policy") == p) for p in v.policies]
    out: dict[str, tuple[Plot, str]] = {}
    axis = _window_axis(v)
    if len(parts) == 2:
        draw = lambda axes: plot_schedule_diff(  # noqa: E731
            *parts, palette=palette, buckets=v.buckets, axis=axis, window=v.window, axes=axes[0]
        )
        grid = {"width_ratios": [1, 1, 0.45]}
        out["schedule_diff.png"] = (
            panels(draw, (12, 5.5), ncols=3, sharey=True, gridspec_kw=grid),
            f"Schedules of {_window_text(v)}, under {v.policies[0]} and {v.policies[1]}: one "
            "row per job in arrival order, grey while it waits, a bar while it runs (colour: "
            f"length). Right: finish time under {v.policies[1]} minus under {v.policies[0]}, "
            "in the colour of the policy that finished the job sooner.",
        )
    if not v.resources:
        return out
    res, cap = v.resources[0], v.capacity[0]

    def draw_alloc(axes: Any) -> None:
        for part, ax in zip(parts, axes[:, 0], strict=True):
            plot_allocation(
                part,
                resource=res,
                capacity=cap,
                machines=v.machines,
                buckets=v.buckets,
                axis=axis,
                window=v.window,
                ax=ax,
            )
            ax.set_title(str(part.get_column("policy")[0]), loc="left", fontsize="medium")
        for ax in axes[:-1, 0]:
            ax.set_xlabel("")
        axes[0, 0].legend(
            handles=legend_handles(parts[0], v.buckets),
            title="Job length",
            frameon=False,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )

    out["allocation.png"] = (
        panels(draw_alloc, (11, 2.6 * len(parts) + 0.6), nrows=len(parts), sharex=True),
        f"Which {res} each job held ({_window_text(v)}): one rectangle per job over its units, "
        f"from start to finish (colour: length). The simulator pools the {cap:,g} {res}; the "
        "units are numbered by giving each starting job the lowest-numbered free ones.",
    )
    return out


def timeline_figures(v: ScheduleViews, palette: Mapping[str, Any]) -> dict[str, tuple[Plot, str]]:
    """The cluster over time: of every policy over the whole log (bins and a heat map), or of
    the pair on the jobset and of every policy averaged over jobsets."""
    out: dict[str, tuple[Plot, str]] = {}
    if v.timeline is None:
        return out
    n = len(timeline_quantities(v.resources))
    axis = _axis(v)
    size = (10, PANEL_HEIGHT * n + 1)
    what = (
        "share of each resource in use, jobs waiting, queued work (the waiting jobs' run "
        "time × share of the first resource: how long the whole cluster would need to run "
        "them) and fragmented capacity (free capacity no waiting job fits into, mean over "
        "resources)"
    )
    binned = v.binned
    if v.whole and binned is not None:
        width = axis.span_text(v.bin_width)
        draw = lambda axes: plot_timelines(  # noqa: E731
            binned,
            resources=v.resources,
            palette=palette,
            axes=axes[:, 0],
            axis=axis,
            log=True,
        )
        out["timeline.png"] = (
            panels(draw, size, nrows=n, sharex=True),
            f"The cluster over the whole log under every policy, means over bins of {width}: "
            f"{what}. Waiting jobs and queued work on a log scale (linear below 1).",
        )
        order = [p for p in palette if p in set(binned.get_column("policy").to_list())]
        out["queue_heatmap.png"] = (
            panels(
                lambda axes: plot_queue_heatmap(
                    binned, order=order, axis=axis, quantity="queued_work", ax=axes[0, 0]
                ),
                (10, 0.9 + 0.32 * len(order)),
            ),
            f"Queued work of every policy over the log (mean over bins of {width}; colour on a "
            "square-root scale): where the policies' queues build up, and how far.",
        )
        return out
    n_jobsets = (
        v.summary.filter(pl.col("policy") == v.policies[0]).height if v.summary is not None else 0
    )
    at = "" if v.load is None else f" at {fmt_load(v.load)}"
    for name, data, whom in (
        ("timeline.png", v.timeline, f"on {_where(v)}"),
        ("timeline_mean.png", v.mean_timeline, f"averaged over the {n_jobsets} jobsets{at}"),
    ):
        if data is None:
            continue
        draw_data = lambda axes, d=data: plot_timelines(  # noqa: E731
            d, resources=v.resources, palette=palette, axes=axes[:, 0], axis=axis
        )
        out[name] = (
            panels(draw_data, size, nrows=n, sharex=True),
            f"The cluster over time {whom}: {what}.",
        )
    return out


def figures(v: ScheduleViews, palette: Mapping[str, Any]) -> dict[str, tuple[Plot, str]]:
    """Every figure of the section, by PNG file name."""
    return gantt_figures(v, palette) | timeline_figures(v, palette)
