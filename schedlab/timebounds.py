"""The one range of times, in steps, that the simulators' int64 arithmetic can never overflow.

Every engine counts time in int64 steps. The compiled queue disciplines
(``simulator/cluster/easy.py``, ``conservative.py``) add a start and an estimate
(``start + estimate``, a job's expected end), lay reservations one after another (a reservation
ends at most at the last arrival plus every earlier job's estimate), expect a job past its
estimate to end at ``now + 1``, and use ``NEVER = (2^63 − 1) // 4`` (about 2^61, in
``core.py``) as "never"; the list scheduler and the batched engine
stop at a time limit of last arrival + Σ duration + horizon. A time of 2^61 or more is
therefore taken for "never" (a valid jobset reported as stalled) and one past 2^63 wraps around
to a negative time (a schedule that runs more than the capacity, reported as a success).

So every time a JobSet holds is bounded by :data:`MAX_TIME` = 2^59 steps, where it enters
(:func:`schedlab.jobset.validate`, which every loader and generator goes through, and the
trace loaders' rows, :mod:`schedlab.loaders.traces.time_range`):

* each ``arrival``, ``duration``, ``estimate`` and ``deadline`` is at most :data:`MAX_TIME`;
* per jobset, the last arrival + Σ max(duration, estimate) (its *span*) is at most
  :data:`MAX_TIME`.

Any time an engine reaches is then at most the span plus one step per job plus the horizon
(both far below 2^59 for anything that fits in memory), and the sum of two such times stays
below 2^61 − 2^58, under ``NEVER``. 2^59 steps are 18 billion years of 1 s steps.
"""

from __future__ import annotations

import polars as pl

from schedlab.errors import JobSetError

MAX_TIME = 2**59
"""Most steps any arrival, duration, estimate or deadline may be, and a jobset's span (last
arrival + Σ max(duration, estimate)); see the module docstring for why."""
MAX_TIME_TEXT = "2^59"
"""How messages write :data:`MAX_TIME`."""
BOUNDED_COLUMNS = ("arrival", "duration", "estimate", "deadline")
"""Integer time columns of a JobSet, in steps, each at most :data:`MAX_TIME`."""


def value_checks(columns: list[str]) -> list[tuple[str, pl.Expr, str]]:
    """``(column, bad, rule)`` of the time columns among ``columns`` that exceed
    :data:`MAX_TIME` (null deadlines pass: a job without one)."""
    rule = (
        f"exceeds {MAX_TIME_TEXT} = {MAX_TIME:,} steps, the most the simulators can count "
        "without overflow; use a coarser time step or drop the job"
    )
    return [(c, pl.col(c) > MAX_TIME, rule) for c in BOUNDED_COLUMNS if c in columns]


def check_span(jobs: pl.DataFrame) -> None:
    """Raise :class:`~schedlab.errors.JobSetError` if a jobset's last arrival + Σ max(duration,
    estimate) exceeds :data:`MAX_TIME`, naming the jobset, its columns and the sums (float64
    sums: exact enough at this bound, and they cannot overflow)."""
    if jobs.height == 0:
        return
    d = pl.col("duration").cast(pl.Float64)
    has_estimate = "estimate" in jobs.columns
    length = pl.max_horizontal(d, pl.col("estimate").cast(pl.Float64)) if has_estimate else d
    span = pl.col("arrival").max().cast(pl.Float64) + length.sum()
    if jobs.select(span).item() <= MAX_TIME:  # every jobset is within
        return
    per = jobs.group_by("jobset").agg(
        pl.col("arrival").max().alias("last"), length.sum().alias("total"), pl.len().alias("n")
    )
    bad = per.filter(pl.col("last").cast(pl.Float64) + pl.col("total") > MAX_TIME).sort("jobset")
    if bad.height:
        k, last, total, n = bad.row(0)
        what = "max(duration, estimate)" if has_estimate else "duration"
        columns = "'arrival', 'duration', 'estimate'" if has_estimate else "'arrival', 'duration'"
        msg = (
            f"jobset {k}: last arrival {last} + total {what} {total:.4g} of its {n} jobs = "
            f"{last + total:.4g} steps exceeds {MAX_TIME:.4g} ({MAX_TIME_TEXT}), the most the "
            f"simulators can count without overflow (columns {columns}); use a coarser time "
            "step or smaller jobsets"
        )
        raise JobSetError(msg)
