"""The tables and text of the schedule section (:mod:`schedlab.reports.views`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import cast

import polars as pl

from schedlab.evaluation.settings import StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.reports.content import Block, Table
from schedlab.reports.figures import fmt_load
from schedlab.reports.output import Plot
from schedlab.reports.tables import ci, num
from schedlab.reports.time_axis import TimeAxis
from schedlab.reports.views import ScheduleViews, mean_slowdown

VIEW_RESAMPLES = 1000
"""Bootstrap resamples of the time-averages table (fewer than the comparison's: descriptive)."""


def machine_table(util: pl.DataFrame, resources: tuple[str, ...]) -> Table:
    """Per policy and resource: how evenly the machines were used (means over jobsets of each
    schedule's per-machine utilisation: mean, least and most used machine, in %)."""
    rows = []
    for p in util.get_column("policy").unique(maintain_order=True).to_list():
        part = util.filter(pl.col("policy") == p)
        cells = [p]
        for r in resources:
            per = part.group_by("jobset").agg(
                pl.col(f"util_{r}").mean().alias("mean"),
                pl.col(f"util_{r}").min().alias("min"),
                pl.col(f"util_{r}").max().alias("max"),
            )
            means = (cast("float", per.get_column(c).mean()) for c in ("mean", "min", "max"))
            mean, lo, hi = (100 * m for m in means)
            cells.append(f"{mean:.1f} ({lo:.1f}–{hi:.1f})")
        rows.append(cells)
    header = ["policy", *(f"{r} in use per machine, % mean (least–most)" for r in resources)]
    return Table(header, rows)


def summary_table(v: ScheduleViews, order: list[str], *, settings: StatsSettings) -> Table | None:
    """Per policy: time averages over a schedule (one row per schedule in ``v.summary``), as
    mean [CI] over jobsets (the seed and confidence of ``settings``, :data:`VIEW_RESAMPLES`
    resamples), or the values themselves when each policy has one schedule (a whole log)."""
    if v.summary is None:
        return None
    end = float(v.summary.get_column("makespan").max() or 1)  # type: ignore[arg-type]
    unit, length = TimeAxis(replace(v.clock, origin=None), end).unit
    hours = 3600.0 / v.clock.step if v.clock.step else 1.0
    work_unit = "h" if v.clock.step else "steps"
    metrics = [
        "makespan",
        *(f"mean_util_{r}" for r in v.resources),
        "mean_queue",
        "mean_queued_work",
        "mean_fragmentation",
    ]
    shares = [m for m in metrics if m.startswith(("mean_util_", "mean_frag"))]
    scaled = v.summary.with_columns(
        pl.col(shares) * 100,
        pl.col("makespan") / length,
        pl.col("mean_queued_work") / hours,
    )
    label = {
        "makespan": f"makespan ({unit})",
        "mean_queue": "waiting jobs",
        "mean_queued_work": f"queued work ({work_unit} of the cluster)",
        "mean_fragmentation": "fragmented (%)",
        **{f"mean_util_{r}": f"{r} in use (%)" for r in v.resources},
    }
    if v.whole:
        cells = {(r["policy"], m): num(r[m]) for r in scaled.iter_rows(named=True) for m in metrics}
    else:
        quick = replace(settings, n_resamples=VIEW_RESAMPLES)
        s = summarize(scaled, metrics=metrics, by=("policy",), settings=quick)
        cells = {
            (p, m): ci(a, lo, hi)
            for p, m, a, lo, hi in s.select("policy", "metric", "mean", "ci_low", "ci_high").rows()
        }
    rows = [
        [p, *(cells.get((p, m), "–") for m in metrics)] for p in order if (p, metrics[0]) in cells
    ]
    return Table(["policy", *(label[m] for m in metrics)], rows)


def blocks(
    v: ScheduleViews,
    images: Mapping[str, tuple[Plot, str]],
    table: Table | None,
    *,
    metric: str,
    confidence: float,
    value: str | None = None,
) -> list[Block]:
    """The report section: which jobset and why, the figures, the time averages; ``value`` is
    the jobset's ``metric`` under the reference, as shown (``"1.21 h"``), when known."""
    ref = v.policies[0]
    where = "" if v.load is None else f" at offered load {fmt_load(v.load)}"
    figures = [
        ("figure", (n, images[n][1]))
        for n in ("timeline.png", "queue_heatmap.png", "timeline_mean.png")
        if n in images
    ]
    closeup = [
        ("figure", (n, images[n][1]))
        for n in ("schedule_diff.png", "allocation.png")
        if n in images
    ]
    if v.whole:
        out: list[Block] = [
            ("h2", "The cluster over the whole log"),
            (
                "p",
                f"Every policy replayed the whole log once (jobset {v.jobset}); the views are "
                "exact time averages of each schedule between its events.",
            ),
            *figures,
        ]
    else:
        out = [
            ("h2", f"The schedule of a representative jobset{where}"),
            (
                "p",
                f"Jobset {v.jobset}: the median jobset by {ref}'s {metric} ("
                + (f"{value}; " if value else "")
                + f"its average slowdown: {mean_slowdown(v):,.2f}). It shows how the policies "
                "differ on one typical jobset; the statistics above are over all jobsets.",
            ),
        ]
    if v.timeline is None:
        note = (
            "Utilisation, queue length and fragmentation over time need the jobs' demands: "
            "pass the JobSet the results were simulated on (--jobs with a results file; an "
            "experiment directory keeps it in jobsets/)."
        )
        return [*out, *closeup, ("note", note)]
    if v.whole:
        out += [("h3", f"Up close: {ref} and {v.policies[-1]}"), *closeup]
    else:
        out += [*closeup, *figures]
    if v.machine_util is not None:
        n = int(v.machine_util.get_column("machine").n_unique())
        out += [
            ("table", machine_table(v.machine_util, v.resources)),
            (
                "p",
                f"Utilisation of each of the {n} machines over the makespan (work placed on it "
                "over its capacity × makespan), averaged over jobsets: the mean machine, and the "
                "least and most used; a wide range is an unbalanced placement.",
            ),
        ]
    if table is not None:
        over = (
            "each policy's schedule of the whole log"
            if v.whole
            else f"mean over jobsets{where} [{100 * confidence:g}% bootstrap CI]"
        )
        out += [
            ("table", table),
            (
                "p",
                "Per schedule: makespan (last finish), and time averages over the makespan of "
                "the share of each resource in use, of the jobs waiting, of the queued work and "
                f"of the fragmented share; {over}. Fragmented: free capacity while jobs wait "
                "and none fits into it.",
            ),
        ]
    return out
