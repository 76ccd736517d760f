"""Jobsets that share jobs: windows of one log drawn at random start points may overlap.

The paired statistics over jobsets (bootstrap intervals, Wilcoxon and Friedman tests) treat the
jobsets as independent units. Windows of consecutive jobs of one log (the replay guide's
``windows``, drawn at seeded start points) may share jobs: on a short log, 50 windows of 500
jobs hold each job several times over, and their values move together. :func:`window_overlap`
measures it from the jobs' ``source_id`` (the job's id in the log), so that a report can say
how far its intervals and p-values are optimistic.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from schedlab.jobset import JobSet


@dataclass(frozen=True, kw_only=True, slots=True)
class Overlap:
    """How much the jobsets of one JobSet share their log's jobs."""

    jobsets: int
    """Jobsets holding a job of the log."""
    log_jobs: int
    """Distinct jobs of the log among them (distinct ``source_id``)."""
    mean_jobsets: float
    """Jobsets each of those jobs is in, on average (1: no two jobsets share a job)."""
    shared: float
    """Share of the log's jobs that are in two jobsets or more (0 to 1)."""

    @property
    def distinct_jobsets(self) -> float:
        """How many jobsets the distinct jobs would fill: ``jobsets / mean_jobsets``."""
        return self.jobsets / self.mean_jobsets

    def describe(self) -> str:
        """One sentence for a report."""
        return (
            f"The {self.jobsets} jobsets are windows of one log that share jobs: each of its "
            f"{self.log_jobs:,} distinct jobs is in {self.mean_jobsets:.1f} of them on average "
            f"({self.shared:.0%} are in two or more). The intervals and tests over jobsets "
            "take the jobsets as independent, so they are optimistic here: the intervals too "
            "narrow, the p-values too small. The distinct jobs would fill about "
            f"{self.distinct_jobsets:.0f} jobsets."
        )


def window_overlap(jobs: JobSet) -> Overlap | None:
    """How much the jobsets of ``jobs`` share jobs of their log, or None where they share none
    (or the JobSet has no ``source_id``, as a generator's jobsets)."""
    table = jobs.jobs
    if "source_id" not in table.columns or table.get_column("jobset").n_unique() < 2:
        return None
    per_job = (
        table.select("jobset", "source_id")
        .drop_nulls()
        .unique()
        .group_by("source_id")
        .agg(pl.len().alias("n"))
    )
    if per_job.height == 0 or per_job.get_column("n").max() == 1:
        return None
    n = per_job.get_column("n").to_numpy()
    return Overlap(
        jobsets=table.filter(pl.col("source_id").is_not_null()).get_column("jobset").n_unique(),
        log_jobs=per_job.height,
        mean_jobsets=float(n.mean()),
        shared=float((n > 1).mean()),
    )
