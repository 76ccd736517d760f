"""``schedlab show``: the schedules of one jobset under some policies, as one figure file.

:func:`write_schedule_figure` draws, for the chosen jobset, one Gantt chart per policy side by
side (with the per-job change of finish time when there are two), and below them the cluster
over time: utilisation per resource, queue length and fragmentation, one line per policy. The
file type follows the suffix (``.pdf``, ``.svg`` or ``.png``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from schedlab.errors import ResultsError
from schedlab.evaluation import schedules as sch
from schedlab.evaluation import timeline as tl
from schedlab.evaluation.clock import clock
from schedlab.evaluation.metrics import length_buckets, per_jobset
from schedlab.jobset import JobSet
from schedlab.registry import parse_policy, parse_spec, policies, policy_name
from schedlab.reports.output import Plot, save
from schedlab.reports.palette import policy_palette
from schedlab.reports.schedule import plot_gantt, plot_schedule_diff
from schedlab.reports.time_axis import TimeAxis
from schedlab.reports.timeline_figures import plot_timelines, timeline_quantities
from schedlab.reports.views import busiest_window
from schedlab.results import Results


def resolve_policy(results: Results, wanted: str) -> str:
    """The name in ``results`` of the policy ``wanted``: a name, or the spec it was run with.

    A spec (``"deeprm:deeprm-1.3"``, ``"tetris:knob=0.3"``) matches the policies whose name is
    the spec's policy name (or starts with it) and whose recorded parameters include the spec's.

    Raises
    ------
    ResultsError
        If no policy, or more than one, matches.
    """
    params: Mapping[str, Mapping[str, Any]] = results.meta.get("policies", {})
    names = list(params) or results.table.get_column("policy").unique().sort().to_list()
    if wanted in names:
        return wanted
    try:
        name, kwargs = (
            parse_policy(wanted) if policy_name(wanted) in policies else parse_spec(wanted)
        )
    except ValueError as exc:
        msg = f"policy {wanted!r} is neither a policy of the results {names} nor a spec: {exc}"
        raise ResultsError(msg) from exc
    hits = [
        n
        for n in names
        if n.startswith(name)
        and all(str(params.get(n, {}).get(k)) == str(v) for k, v in kwargs.items())
    ]
    if len(hits) != 1:
        what = "no policy" if not hits else f"several policies ({hits})"
        msg = f"{what} of the results matches {wanted!r}; the results hold {names}"
        raise ResultsError(msg)
    return hits[0]


UNITS = {"s": 1.0, "min": 60.0, "h": 3_600.0, "d": 86_400.0}
"""Units of ``schedlab show --window`` and their seconds."""


def parse_window(text: str, step: float | None) -> tuple[float, float]:
    """``"36h:48h"`` as a window in steps of ``step`` seconds (plain numbers are steps).

    Raises
    ------
    ValueError
        If ``text`` is not ``FROM:TO`` with ``FROM < TO``, or uses a unit without a step length.
    """
    parts = text.split(":")
    if len(parts) != 2:
        msg = f"{text!r}: give FROM:TO, e.g. 36h:48h"
        raise ValueError(msg)
    ends = []
    for part in parts:
        match = re.fullmatch(r"\s*([0-9.]+)\s*(s|min|h|d)?\s*", part)
        if match is None:
            msg = f"{text!r}: {part!r} is not a time (a number, then s, min, h or d)"
            raise ValueError(msg)
        value, unit = float(match.group(1)), match.group(2)
        if unit is not None and not step:
            msg = f"{text!r}: this workload is defined in steps; give the window in steps"
            raise ValueError(msg)
        ends.append(value if unit is None else value * UNITS[unit] / float(step or 1.0))
    if not ends[0] < ends[1]:
        msg = f"{text!r}: FROM must come before TO"
        raise ValueError(msg)
    return ends[0], ends[1]


def schedule_plot(
    results: Results,
    *,
    jobset: int | None = None,
    policies: Sequence[str] = (),
    jobs: JobSet | None = None,
    window: tuple[float, float] | None = None,
) -> Plot:
    """The figure of :func:`write_schedule_figure` (arguments alike), not yet drawn."""
    names = [resolve_policy(results, p) for p in policies] or list(results.policies[:1])
    if jobset is None:
        pj = per_jobset(results)
        loads = pj.get_column("load").drop_nulls()
        load = float(loads.max()) if loads.len() else None  # type: ignore[arg-type]
        jobset = sch.representative_jobset(pj, reference=names[0], load=load)
    table = results.table.filter(pl.col("jobset") == jobset)
    if table.height == 0:
        have = results.table.get_column("jobset").unique().sort().to_list()
        msg = (
            f"jobset {jobset} is not in the results; they hold {have[:10]}{' …' * (len(have) > 10)}"
        )
        raise ResultsError(msg)
    try:
        s: sch.Schedules | None = sch.schedules(results, jobs).select(
            jobsets=[jobset], policies=names
        )
    except ResultsError:
        if jobs is not None:
            raise
        s = None
    parts = [(s.jobs if s is not None else table).filter(pl.col("policy") == p) for p in names]
    palette = policy_palette(names)
    buckets = length_buckets(results)
    resources = s.resources if s is not None else ()
    timeline = tl.timeline(s) if s is not None else None
    n_rows = len(timeline_quantities(resources))
    clk = clock(results.meta.get("jobset", {}), jobset)
    if window is None and timeline is not None:
        window = busiest_window(timeline.filter(pl.col("policy") == names[0]), parts[0].height, clk)
    end = float(max(int(df.get_column("finish").max()) for df in parts))  # type: ignore[arg-type]
    lo, hi = window if window is not None else (0.0, end)
    axis = TimeAxis(clk, hi - lo)

    def draw(fig: Any) -> None:
        top, bottom = (
            fig.subfigures(2, 1, height_ratios=[1.2, 1]) if timeline is not None else (fig, None)
        )
        ratios = [1.0] * len(parts) + ([0.45] if len(parts) == 2 else [])
        axes = top.subplots(
            1, len(ratios), sharey=True, squeeze=False, gridspec_kw={"width_ratios": ratios}
        )[0]
        if len(parts) == 2:
            plot_schedule_diff(
                *parts, palette=palette, buckets=buckets, axis=axis, window=(lo, hi), axes=axes
            )
        else:
            for k, (df, ax) in enumerate(zip(parts, axes, strict=True)):
                plot_gantt(
                    df,
                    buckets=buckets,
                    legend=k == len(parts) - 1,
                    axis=axis,
                    window=(lo, hi),
                    ax=ax,
                )
                sd = cast("float", df["slowdown"].mean())  # a float column
                ax.set_title(f"{names[k]} (average slowdown {sd:,.2f})")
                if k:
                    ax.set_ylabel("")
        top.suptitle(f"Jobset {jobset}")
        if bottom is not None and timeline is not None:
            rows = bottom.subplots(n_rows, 1, sharex=True, squeeze=False)[:, 0]
            whole = TimeAxis(clk, end)
            plot_timelines(timeline, resources=resources, palette=palette, axes=rows, axis=whole)

    width = 4.5 * len(parts) + (2 if len(parts) == 2 else 1.5)
    height = 5.5 + (1.5 * n_rows if timeline is not None else 0)
    return Plot(draw, (float(np.clip(width, 8, 20)), height), "page")


def write_schedule_figure(
    results: Results,
    out: str | os.PathLike[str],
    *,
    jobset: int | None = None,
    policies: Sequence[str] = (),
    jobs: JobSet | None = None,
    window: tuple[float, float] | None = None,
    dpi: int = 200,
    style: str = "screen",
) -> Path:
    """Draw the schedules of ``jobset`` under ``policies`` into the file ``out``.

    Parameters
    ----------
    results
        Per-job results.
    out
        Figure file; its suffix (``.pdf``, ``.svg``, ``.png``) sets the format.
    jobset
        Jobset id; default the median one by the first policy's average slowdown at the
        highest offered load.
    policies
        Policy names or the specs they were run with (``"deeprm:deeprm-1.3"``); default the
        first policy simulated. With two, the figure shows their difference job by job.
    jobs
        The JobSet of the results (its demands give utilisation, queue and fragmentation);
        without it, and without demand columns in the results, only the Gantt charts are drawn.
    window
        Times of the Gantt charts (steps, from, to); default the whole jobset, or with more
        than 600 jobs the window where the first policy's queued work is largest
        (:func:`~schedlab.reports.views.busiest_window`).
    dpi
        Resolution of a PNG.
    style
        ``"screen"`` or ``"paper"``.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    ResultsError
        If a policy or the jobset is not in the results, or ``jobs`` does not match them.
    ValueError
        If the suffix is not a figure format.
    """
    plot = schedule_plot(results, jobset=jobset, policies=policies, jobs=jobs, window=window)
    return save(plot, out, dpi=dpi, style=style)
