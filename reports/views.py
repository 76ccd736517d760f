"""The schedule section of a report: the cluster over time, and one schedule up close.

The section draws one **jobset**: with many jobsets per condition, the median one by the
reference policy's primary metric at the focus load
(:func:`~schedlab.evaluation.schedules.representative_jobset`), beside the views averaged over
every jobset at that load; with one jobset (a whole trace replayed once), that jobset, whole,
for every policy: utilisation, queue, queued work and fragmentation as time averages over bins
(days on a long log) on the log's calendar where the trace gives its start, and a heat map of
the queue of every policy. Its schedule under the reference and the best other policy is drawn
job by job (Gantt charts side by side, and which processors each job held): the whole jobset
when it is small, else a **window** (:data:`GANTT_JOBS` jobs or so) where the reference's queued
work is largest. Views over time are event-based (:mod:`schedlab.evaluation.timeline`), so a
28,000-job log costs a few hundred thousand rows whatever its makespan. They need the jobs'
demands (the JobSet); without it the section shows the Gantt charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import polars as pl

from schedlab.errors import ResultsError
from schedlab.evaluation import schedules as sch
from schedlab.evaluation import timeline as tl
from schedlab.evaluation.clock import Clock, clock
from schedlab.evaluation.metrics import length_buckets
from schedlab.jobset import JobSet
from schedlab.reports.time_axis import nice_width
from schedlab.results import Results

GANTT_JOBS = 300
"""About how many jobs a Gantt chart of the report shows (a window of a larger jobset)."""
BINS = 120
"""About how many time bins the averages over a whole log have (then rounded to a nice width)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ScheduleViews:
    """What the schedule section shows."""

    jobset: int
    """The jobset drawn."""
    load: float | None
    """Its offered load (the focus load)."""
    policies: list[str]
    """The policies drawn job by job: the reference, then the best other one."""
    jobs: pl.DataFrame
    """Per-job results of those policies on the jobset (with demands when known)."""
    buckets: dict[str, tuple[float, float]]
    """Length buckets (job colours)."""
    clock: Clock
    """How to read the jobset's steps (seconds, calendar)."""
    whole: bool = False
    """Whether the condition is one jobset (a whole trace): its views are of every policy."""
    window: tuple[float, float] | None = None
    """Steps of the jobset drawn job by job (None: all of it)."""
    resources: tuple[str, ...] = ()
    """Resource names (empty: no demands, no views over time)."""
    capacity: tuple[float, ...] = ()
    """Cluster capacity per resource."""
    machines: int = 1
    """Machines of the cluster."""
    timeline: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.timeline.timeline` of the jobset (the pair; every policy when
    :attr:`whole`)."""
    mean_timeline: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.timeline.mean_timeline` of every policy at the load (None
    when :attr:`whole`)."""
    binned: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.timeline.binned` of every policy on the jobset (when
    :attr:`whole`), bins of :attr:`bin_width` steps."""
    bin_width: float = 1.0
    """Width of the bins (steps)."""
    summary: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.timeline.timeline_summary` of every jobset at the load."""
    machine_util: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.schedules.machine_utilisation` of every jobset at the load,
    when the jobs ran on several machines."""


def busiest_window(
    tl_ref: pl.DataFrame, n_jobs: int, clk: Clock, *, jobs: int = GANTT_JOBS
) -> tuple[float, float] | None:
    """The window of a jobset to draw job by job: None (all of it) with at most ``2 · jobs``
    jobs; else the bin of about ``jobs`` jobs' width (:func:`nice_width` of the makespan ×
    ``jobs / n_jobs``) where the reference's mean queued work is largest (the earliest if
    several)."""
    if n_jobs <= 2 * jobs or tl_ref.height == 0:
        return None
    makespan = float(tl_ref.get_column("time").max())  # type: ignore[arg-type]
    width = nice_width(makespan * jobs / n_jobs, clk)
    b = tl.binned(tl_ref, width)
    k = int(np.argmax(b.get_column("queued_work").to_numpy()))
    start = float(b.get_column("time")[k])
    return start, start + width


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
        k = sch.representative_jobset(per_jobset, reference=reference, metric=metric, load=load)
    except ResultsError:
        return None
    pair = [reference, *[p for p in ranked if p != reference][:1]]
    meta = results.meta.get("jobset", {})
    clk = clock(meta, k)
    try:
        s = sch.schedules(results, jobs)
    except ResultsError:
        if jobs is not None:  # a JobSet that does not match
            raise
        rows = results.table.filter((pl.col("jobset") == k) & pl.col("policy").is_in(pair))
        return ScheduleViews(
            jobset=k,
            load=load,
            policies=pair,
            jobs=rows,
            buckets=length_buckets(results),
            clock=clk,
        )
    at_load = s.select(load=load) if load is not None else s
    full = tl.timeline(at_load)
    ids = [c for c in ("seed", "jobset") if c in s.jobs.columns]
    whole = at_load.jobs.select(pl.struct(ids).n_unique()).item() == 1
    one = full.filter(pl.col("jobset") == k)
    ref_tl = one.filter(pl.col("policy") == reference)
    drawn = s.select(jobsets=[k], policies=pair).jobs
    n_jobs = drawn.filter(pl.col("policy") == reference).height
    m = int((results.meta.get("config") or {}).get("machines") or meta.get("machines") or 1)
    makespan = float(one.get_column("time").max() or 1)  # type: ignore[arg-type]
    width = nice_width(makespan / BINS, clk)
    return ScheduleViews(
        jobset=k,
        load=load,
        policies=pair,
        jobs=drawn,
        buckets=s.length_buckets,
        clock=clk,
        whole=whole,
        window=busiest_window(ref_tl, n_jobs, clk),
        resources=s.resources,
        capacity=s.capacity,
        machines=m,
        timeline=one if whole else one.filter(pl.col("policy").is_in(pair)),
        mean_timeline=None if whole else tl.mean_timeline(full),
        binned=tl.binned(one, width) if whole else None,
        bin_width=width,
        summary=tl.timeline_summary(full),
        machine_util=sch.machine_utilisation(at_load, m) if m > 1 else None,
    )


def jobs_in_window(v: ScheduleViews) -> int:
    """Jobs the Gantt charts show (those arriving in the window, or all)."""
    ref = v.jobs.filter(pl.col("policy") == v.policies[0])
    if v.window is None:
        return ref.height
    lo, hi = v.window
    return ref.filter(pl.col("arrival").is_between(lo, hi, closed="left")).height


def mean_slowdown(v: ScheduleViews) -> float:
    """The reference's average per-job slowdown on the jobset drawn."""
    ref = v.jobs.filter(pl.col("policy") == v.policies[0])
    return cast("float", ref.get_column("slowdown").mean())
