"""Trace rows whose times cannot become steps the simulators can count (step 2 of
:func:`~schedlab.loaders.traces.transform.finish`).

A row's arrival, duration and requested time (``estimate_s``) in seconds become steps of
``time_step`` seconds; a time that is not finite or is more than
:data:`~schedlab.timebounds.MAX_TIME` steps (an SWF requested time of 1e30 or 2^63 s, a
corrupt submit time) is dropped as ``out_of_range`` with a message naming the field and its
value, so no int64 conversion fails and no kernel overflows; ``strict`` raises on the first one
naming the file and line. Each check first looks at the column extremes only, so a clean trace
pays no per-row mask.
"""

from __future__ import annotations

import polars as pl

from schedlab.loaders.traces.options import TraceOptions
from schedlab.timebounds import MAX_TIME, MAX_TIME_TEXT

DURATIONS = ("duration_s", "estimate_s")
"""Lengths in seconds a row may carry (``estimate_s``: the user's request, optional)."""


def times_fit(good: pl.DataFrame, step: float, origin: float | None = None) -> bool:
    """Whether no row can be out of range, from column extremes only (no per-row masks): all
    times finite and within :data:`MAX_TIME` steps of 0, or arrivals within it of ``origin``."""
    if good.height == 0:
        return True
    arrival = pl.col("arrival_s")
    if origin is not None:
        return bool((good.select(arrival.max()).item() - origin) / step <= MAX_TIME)
    lengths = [c for c in DURATIONS if c in good.columns]
    finite = pl.all_horizontal(arrival.is_finite(), *(pl.col(c).is_finite() for c in lengths))
    row = good.select(
        arrival.min().alias("lo"),
        arrival.max().alias("hi"),
        *(pl.col(c).max().alias(c) for c in lengths),
        finite.all().alias("ok"),
    ).row(0, named=True)
    longest = max(row[c] for c in lengths)
    inside = max(abs(row["lo"]), abs(row["hi"]), longest) / step <= MAX_TIME
    return bool(row["ok"] and inside)


def out_of_range(step: float, columns: list[str]) -> tuple[pl.Expr, str, pl.Expr]:
    """(bad, reason, message) of rows whose times are not finite or past :data:`MAX_TIME`
    steps of ``step`` seconds (absolute: before the trace's first arrival is known); the
    message names the first such field of the row."""
    limit = f"not a finite time below {MAX_TIME_TEXT} steps of {step:g} s"
    arrival = pl.col("arrival_s")
    tests = [("arrival", arrival, ~arrival.is_finite() | (arrival.abs() / step > MAX_TIME))]
    names = {"duration_s": "duration", "estimate_s": "requested time (estimate)"}
    for c in DURATIONS:
        if c in columns:
            t = pl.col(c)
            tests.append((names[c], t, ~t.is_finite() | (t / step > MAX_TIME)))
    message = pl.lit(None, pl.Utf8)
    for what, value, bad in reversed(tests):  # the first field that is out of range is named
        said = pl.format(f"{what} {{}} s is {limit}", value)
        message = pl.when(bad).then(said).otherwise(message)
    return pl.any_horizontal(bad for _, _, bad in tests), "out_of_range", message


def late(opts: TraceOptions, t0: float | None) -> tuple[pl.Expr, str, pl.Expr]:
    """(bad, reason, message) of rows arriving more than :data:`MAX_TIME` steps after the
    trace's first arrival ``t0`` (and the window's start)."""
    after = pl.col("arrival_s") - (t0 or 0.0) - (opts.start or 0.0)
    message = pl.format(
        f"arrival {{}} s is {{}} s after the start ({t0} s + {opts.start or 0.0} s): more than "
        f"{MAX_TIME_TEXT} steps of {opts.time_step:g} s",
        pl.col("arrival_s"),
        after,
    )
    return after / opts.time_step > MAX_TIME, "out_of_range", message
