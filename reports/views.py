"""The schedule section of a report: one representative jobset, and the cluster over time.

The representative jobset is the median one by the reference policy's primary metric at the
focus load (:func:`~schedlab.evaluation.timeline.representative_jobset`): its schedule under the
reference and under the best other policy is drawn side by side (:func:`plot_schedule_diff
<schedlab.reports.schedule.plot_schedule_diff>`), with utilisation, queue length and
fragmentation over time on that jobset and averaged over every jobset at that load. The views
over time need the jobs' demands (the JobSet); without it the section shows the Gantt charts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import polars as pl

from schedlab.errors import ResultsError, SizeError
from schedlab.evaluation import timeline as tl
from schedlab.evaluation.metrics import length_buckets
from schedlab.evaluation.settings import StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.jobset import JobSet
from schedlab.reports.markup import Block, Table
from schedlab.reports.output import Plot, panels
from schedlab.reports.schedule import plot_schedule_diff, plot_timelines
from schedlab.reports.tables import ci, fmt_load
from schedlab.results import Results


@dataclass(frozen=True, kw_only=True, slots=True)
class ScheduleViews:
    """What the schedule section shows."""

    jobset: int
    """The representative jobset."""
    load: float | None
    """Its offered load (the focus load)."""
    policies: list[str]
    """The policies drawn side by side: the reference, then the best other one."""
    jobs: pl.DataFrame
    """Per-job results of those policies on the jobset."""
    buckets: dict[str, tuple[float, float]]
    """Length buckets (job colours)."""
    resources: tuple[str, ...]
    """Resource names (empty: no demands, no views over time)."""
    timeline: pl.DataFrame | None
    """:func:`~schedlab.evaluation.timeline.timeline` of the jobset under ``policies``."""
    mean_timeline: pl.DataFrame | None
    """:func:`~schedlab.evaluation.timeline.mean_timeline` of every policy at the load."""
    summary: pl.DataFrame | None
    """:func:`~schedlab.evaluation.timeline.timeline_summary` of every jobset at the load."""
    machines: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.timeline.machine_utilisation` of every jobset at the load,
    when the jobs ran on several machines."""


def compute(
    results: Results,
    per_jobset: pl.DataFrame,
    ranked: list[str],
    *,
    reference: str,
    metric: str,
    load: float | None,
    jobs: JobSet | None,
) -> ScheduleViews | None:
    """The schedule views of ``results`` (None when the reference has no jobset to show).

    ``ranked`` lists the policies best first at the focus load; the second policy drawn is the
    best one other than ``reference``.

    Raises
    ------
    ResultsError
        If ``jobs`` is given and does not match the results.
    """
    try:
        k = tl.representative_jobset(per_jobset, reference=reference, metric=metric, load=load)
    except ResultsError:
        return None
    pair = [reference, *[p for p in ranked if p != reference][:1]]
    rows = results.table.filter((pl.col("jobset") == k) & pl.col("policy").is_in(pair))
    try:
        s = tl.schedules(results, jobs)
        at_load = s.select(load=load) if load is not None else s
        full = tl.timeline(at_load)
    except (ResultsError, SizeError) as exc:
        if jobs is not None and isinstance(exc, ResultsError):  # a JobSet that does not match
            raise
        if isinstance(exc, SizeError):  # e.g. a whole trace replayed as one jobset
            warnings.warn(f"schedule views over time left out: {exc}", stacklevel=2)
        buckets = length_buckets(results)
        return ScheduleViews(
            jobset=k,
            load=load,
            policies=pair,
            jobs=rows,
            buckets=buckets,
            resources=(),
            timeline=None,
            mean_timeline=None,
            summary=None,
        )
    m = int((results.meta.get("config") or {}).get("machines") or 1)
    return ScheduleViews(
        jobset=k,
        load=load,
        policies=pair,
        jobs=s.select(jobsets=[k], policies=pair).jobs,
        buckets=s.length_buckets,
        resources=s.resources,
        timeline=full.filter((pl.col("jobset") == k) & pl.col("policy").is_in(pair)),
        mean_timeline=tl.mean_timeline(full),
        summary=tl.timeline_summary(full),
        machines=tl.machine_utilisation(at_load, m) if m > 1 else None,
    )


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


def figures(v: ScheduleViews, palette: Mapping[str, Any]) -> dict[str, tuple[Plot, str]]:
    """The Gantt diff (or one Gantt chart) and the two timeline figures."""
    where = f"jobset {v.jobset}" + ("" if v.load is None else f" at {fmt_load(v.load)}")
    parts = [v.jobs.filter(pl.col("policy") == p) for p in v.policies]
    out: dict[str, tuple[Plot, str]] = {}
    if len(parts) == 2:
        draw = lambda axes: plot_schedule_diff(  # noqa: E731
            *parts, palette=palette, buckets=v.buckets, axes=axes[0]
        )
        grid = {"width_ratios": [1, 1, 0.45]}
        out["schedule_diff.png"] = (
            panels(draw, (12, 5.5), ncols=3, sharey=True, gridspec_kw=grid),
            f"Schedules of {where} under {v.policies[0]} and {v.policies[1]}: one row per job "
            "in arrival order, grey while it waits, a bar while it runs (colour: length). "
            f"Right: finish time under {v.policies[1]} minus under {v.policies[0]}, in the "
            "colour of the policy that finished the job sooner.",
        )
    if v.timeline is None or v.mean_timeline is None:
        return out
    n = len(v.resources) + 2
    n_jobsets = (
        v.summary.filter(pl.col("policy") == v.policies[0]).height if v.summary is not None else 0
    )
    at = "" if v.load is None else f" at {fmt_load(v.load)}"
    for name, data, what in (
        ("timeline.png", v.timeline, f"on {where}"),
        ("timeline_mean.png", v.mean_timeline, f"averaged over the {n_jobsets} jobsets{at}"),
    ):
        draw_data = lambda axes, d=data: plot_timelines(  # noqa: E731
            d, resources=v.resources, palette=palette, axes=axes[:, 0]
        )
        out[name] = (
            panels(draw_data, (9, 1.5 * n + 1), nrows=n, sharex=True, span="column"),
            f"Cluster over time {what}: share of each resource in use, jobs waiting, and "
            "fragmented capacity (free capacity no waiting job fits into, mean over "
            "resources).",
        )
    return out


VIEW_RESAMPLES = 1000
"""Bootstrap resamples of the time-averages table (fewer than the comparison's: descriptive)."""

SUMMARY_LABELS = {
    "makespan": "makespan (steps)",
    "mean_queue": "waiting jobs",
    "mean_fragmentation": "fragmented (%)",
}


def summary_table(
    summary: pl.DataFrame,
    resources: tuple[str, ...],
    order: list[str],
    *,
    settings: StatsSettings,
) -> Table:
    """Per policy: time averages over a schedule (``summary``: one row per schedule, from
    :func:`~schedlab.evaluation.timeline.timeline_summary`), mean [CI] over jobsets (the seed
    and confidence of ``settings``, :data:`VIEW_RESAMPLES` resamples)."""
    metrics = [
        "makespan",
        *(f"mean_util_{r}" for r in resources),
        "mean_queue",
        "mean_fragmentation",
    ]
    shares = [m for m in metrics if m.startswith(("mean_util_", "mean_frag"))]
    percent = summary.with_columns(pl.col(shares) * 100)
    quick = replace(settings, n_resamples=VIEW_RESAMPLES)
    s = summarize(percent, metrics=metrics, by=("policy",), settings=quick)
    cells = {
        (p, m): ci(a, lo, hi)
        for p, m, a, lo, hi in s.select("policy", "metric", "mean", "ci_low", "ci_high").rows()
    }
    label = {**SUMMARY_LABELS, **{f"mean_util_{r}": f"{r} in use (%)" for r in resources}}
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
) -> list[Block]:
    """The report section: which jobset and why, the figures, the time averages."""
    ref = v.policies[0]
    value = cast("float", v.jobs.filter(pl.col("policy") == ref).get_column("slowdown").mean())
    where = "" if v.load is None else f" at offered load {fmt_load(v.load)}"
    out: list[Block] = [
        ("h2", f"The schedule of a representative jobset{where}"),
        (
            "p",
            f"Jobset {v.jobset}: the median jobset by {ref}'s average {metric} "
            f"({value:.2f}). It shows how the policies differ on one typical jobset; the "
            "statistics above are over all jobsets.",
        ),
    ]
    out += [
        ("figure", (n, images[n][1])) for n in ("schedule_diff.png", "timeline.png") if n in images
    ]
    if v.timeline is None:
        note = (
            "Utilisation, queue length and fragmentation over time need the jobs' demands: "
            "pass the JobSet the results were simulated on (--jobs)."
        )
        return [*out, ("note", note)]
    if "timeline_mean.png" in images:
        out.append(("figure", ("timeline_mean.png", images["timeline_mean.png"][1])))
    if v.machines is not None:
        n = int(v.machines.get_column("machine").n_unique())
        out += [
            ("table", machine_table(v.machines, v.resources)),
            (
                "p",
                f"Utilisation of each of the {n} machines over the makespan (work placed on it "
                "over its capacity × makespan), averaged over jobsets: the mean machine, and the "
                "least and most used; a wide range is an unbalanced placement.",
            ),
        ]
    if table is not None:
        out += [
            ("table", table),
            (
                "p",
                f"Per schedule: makespan (last finish), and time averages over the makespan "
                f"of the share of each resource in use, of the jobs waiting and of the "
                f"fragmented share; mean over jobsets{where} [{100 * confidence:g}% bootstrap "
                "CI]. Fragmented: free capacity at steps where jobs wait and none fits into it.",
            ),
        ]
    return out
