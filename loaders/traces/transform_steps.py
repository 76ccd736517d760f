"""The steps of :func:`~schedlab.loaders.traces.transform.finish`: rows dropped with their
reason (and samples of each), statuses parsed, good and dropped parts, times quantised, arrival
order, windows and jobset splits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from schedlab.loaders.traces.drop_report import (
    SAMPLE_SCHEMA,
    clip_text,
)
from schedlab.loaders.traces.options import TraceOptions
from schedlab.param_checks import did_you_mean

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then

SAMPLES_PER_REASON = 5

Check = tuple[pl.Expr, "str | pl.Expr", "str | pl.Expr"]


def first_reason(data: pl.DataFrame, checks: Sequence[Check]) -> pl.DataFrame:
    """Add ``reason`` and ``message``: those of the first check whose condition holds, else null.

    ``checks`` are ``(bad, reason, message)`` in priority order; a null ``bad`` counts as False.
    """

    def lit(x: str | pl.Expr) -> pl.Expr:
        return pl.lit(x) if isinstance(x, str) else x

    (bad, why, msg), *rest = [(b.fill_null(False), lit(w), lit(m)) for b, w, m in checks]
    reason: Then | ChainedThen
    message: Then | ChainedThen
    reason, message = pl.when(bad).then(why), pl.when(bad).then(msg)
    for bad, why, msg in rest:
        reason, message = reason.when(bad).then(why), message.when(bad).then(msg)
    return data.with_columns(
        reason.otherwise(pl.lit(None, pl.Utf8)).alias("reason"),
        message.otherwise(pl.lit(None, pl.Utf8)).alias("message"),
    )


def parse_statuses(
    statuses: Sequence[str] | str, known: Sequence[str], what: str
) -> tuple[str, ...]:
    """Validate a status selection given as a sequence or ``"A|B"``; unknown names suggest one."""
    wanted = tuple(statuses.split("|") if isinstance(statuses, str) else statuses)
    for s in wanted:
        if s not in known:
            msg = f"unknown {what} {s!r}{did_you_mean(str(s), known)} (known: {', '.join(known)})"
            raise ValueError(msg)
    if not wanted:
        msg = "statuses must name at least one status"
        raise ValueError(msg)
    return wanted


def samples_of(bad: pl.DataFrame) -> pl.DataFrame:
    """The first :data:`SAMPLES_PER_REASON` dropped rows per reason, in line order, with
    their text and message clipped."""
    if not bad.height:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    return (
        bad.sort("line", maintain_order=True)
        .filter(pl.int_range(pl.len()).over("reason") < SAMPLES_PER_REASON)
        .select(SAMPLE_SCHEMA.keys())
        .cast(SAMPLE_SCHEMA)  # type: ignore[arg-type]
        .with_columns(clip_text(pl.col("raw")), clip_text(pl.col("message")))
    )


def dropped_rows(rows: pl.DataFrame, reason: str | pl.Expr, message: str | pl.Expr) -> pl.DataFrame:
    """``rows`` as dropped rows: line, reason, message, raw (null when absent), weight."""
    lit = {k: pl.lit(v) if isinstance(v, str) else v for k, v in (("r", reason), ("m", message))}
    raw = pl.col("raw") if "raw" in rows.columns else pl.lit(None, pl.Utf8)
    weight = pl.col("weight") if "weight" in rows.columns else pl.lit(1, pl.Int64)
    return rows.select(
        pl.col("line").cast(pl.Int64),
        lit["r"].cast(pl.Utf8).alias("reason"),
        lit["m"].cast(pl.Utf8).alias("message"),
        raw.cast(pl.Utf8).alias("raw"),
        weight.cast(pl.Int64).alias("weight"),
    )


def drop_rows(
    good: pl.DataFrame, bad: list[pl.DataFrame], hit: pl.Expr, reason: str, message: pl.Expr | str
) -> pl.DataFrame:
    """Move the good rows matching ``hit`` to ``bad`` (messages are built for them only)."""
    mask = good.select(hit.fill_null(False)).to_series()
    if not mask.any():
        return good
    bad.append(dropped_rows(good.filter(mask), reason, message))
    return good.filter(~mask)


def weight_of(frame: pl.DataFrame) -> int:
    return int(frame.get_column("weight").sum()) if "weight" in frame.columns else frame.height


def partition(rows: pl.DataFrame, dropped: pl.DataFrame | None) -> tuple[pl.DataFrame, ...]:
    """Split into good rows (no reason columns) and dropped rows (see :func:`dropped_rows`)."""
    parts = [] if dropped is None else [dropped_rows(dropped, pl.col("reason"), pl.col("message"))]
    if "reason" in rows.columns:
        is_bad = rows.get_column("reason").is_not_null()
        if is_bad.any():
            parts.append(dropped_rows(rows.filter(is_bad), pl.col("reason"), pl.col("message")))
            rows = rows.filter(~is_bad)
        rows = rows.drop("reason", "message")
    empty = dropped_rows(pl.DataFrame(schema={"line": pl.Int64}), "", "")
    return rows, pl.concat([empty, *parts], how="vertical")


def rounding_notes(good: pl.DataFrame, step: float, zero: int) -> list[str]:
    """A note saying how quantizing to steps of ``step`` seconds may change the schedule (not
    the metrics, defined on the real times): durations rounded up, zero-length jobs made one
    step long. None at 1 s steps with whole-second durations."""
    d = pl.col("duration_s")
    rounded = int(good.select(((d / step).ceil() * step != d) & (d > 0)).sum().item())
    if not rounded and not zero:
        return []
    return [
        f"time step {step:g} s: {rounded:,} durations rounded up to whole steps and {zero:,} "
        "zero-length jobs made 1 step long; this may change the schedule, not the metrics, "
        "which use the real times in seconds (arrival_s, duration_s)"
    ]


def quantize(box: list[pl.DataFrame], opts: TraceOptions, t0: float | None) -> pl.DataFrame:
    """The rows popped from ``box``, sorted by arrival (then line), with integer ``arrival``
    and ``duration`` in steps beside ``arrival_s`` (seconds since the trace's origin
    ``t0 + start``; :func:`split_jobsets` makes it relative to each jobset's) and ``duration_s``."""
    good = box.pop()
    start = opts.start or 0.0
    since = pl.col("arrival_s") - (t0 or 0.0) - start
    good = good.with_columns(
        (since / opts.time_step).floor().cast(pl.Int64).alias("arrival"),
        (pl.col("duration_s") / opts.time_step)
        .ceil()
        .clip(lower_bound=1)
        .cast(pl.Int64)
        .alias("duration"),
    )
    if "estimate_s" in good.columns:
        steps = (pl.col("estimate_s") / opts.time_step).ceil().clip(lower_bound=1)
        good = good.with_columns(steps.cast(pl.Int64).alias("estimate"))
    order = arrival_order(good)
    if order is None:
        return good.sort("arrival_s", "line").with_columns(since)
    index = pl.Series(order)
    del order
    columns = {}
    for name in good.columns:  # gather column by column, freeing each original as we go
        columns[name] = good.get_column(name).gather(index)
        good = good.drop(name)
    return pl.DataFrame(columns).with_columns(since)


def arrival_order(good: pl.DataFrame) -> np.ndarray | None:
    """The order of ``good.sort("arrival_s", "line")`` by one fast integer sort, when rows are
    in line order and arrivals are whole seconds (the usual case); else None."""
    n = good.height
    arrival = good.get_column("arrival_s").to_numpy()
    if n < 2 or not good.get_column("line").is_sorted():
        return None
    low, high = arrival.min(), arrival.max()
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    bits = int(n).bit_length()
    if int(high - low).bit_length() + bits > 62:
        return None
    shifted = arrival - low
    key = shifted.astype(np.int64)
    if not np.array_equal(key, shifted):  # fractional seconds (NaN was excluded above)
        return None
    del shifted
    np.left_shift(key, bits, out=key)
    np.bitwise_or(key, np.arange(n, dtype=np.int64), out=key)
    key.sort()
    np.bitwise_and(key, (1 << bits) - 1, out=key)
    return key


def empty_ids(ids: Sequence[int]) -> tuple[int, ...]:
    present = set(ids)
    return tuple(k for k in range(max(present, default=-1) + 1) if k not in present)


def window_steps(opts: TraceOptions) -> int | None:
    """Width of a time-window jobset in steps (the offered load's span), else None."""
    if opts.jobset_window is None:
        return None
    return max(1, round(opts.jobset_window / opts.time_step))


def windows(jobs: pl.DataFrame, n: int, size: int, seed: int) -> pl.DataFrame:
    """``n`` windows of ``size`` consecutive rows at distinct start rows drawn uniformly by
    ``numpy.random.default_rng(seed)``, sorted; window ``k`` is jobset ``k``. Raises
    ``ValueError`` when the rows hold fewer than ``n`` distinct windows."""
    positions = jobs.height - size + 1
    if positions < n:
        msg = (
            f"windows={n} of jobset_size={size} jobs: the trace keeps {jobs.height:,} jobs, "
            f"room for {max(positions, 0):,} distinct windows"
        )
        raise ValueError(msg)
    starts = np.sort(np.random.default_rng(seed).choice(positions, size=n, replace=False))
    rows = (starts[:, None] + np.arange(size)).ravel()
    ids = pl.Series("jobset", np.repeat(np.arange(n, dtype=np.int32), size))
    return jobs[rows].with_columns(ids)


def split_jobsets(jobs: pl.DataFrame, opts: TraceOptions) -> pl.DataFrame:
    """Assign ``jobset`` and ``job_id`` and make arrivals (steps and seconds) relative to each
    jobset's origin, its first step: ``arrival_s`` stays within ``arrival``'s step."""
    if (width := window_steps(opts)) is not None:
        jobs = jobs.with_columns((pl.col("arrival") // width).cast(pl.Int32).alias("jobset"))
        origin = pl.col("jobset").cast(pl.Int64) * width
    elif opts.windows is not None and opts.jobset_size is not None:
        jobs = windows(jobs, opts.windows, opts.jobset_size, opts.seed)
        origin = pl.col("arrival").min().over("jobset")
    elif opts.jobset_size is not None:
        jobs = jobs.with_columns(
            (pl.int_range(pl.len()) // opts.jobset_size).cast(pl.Int32).alias("jobset")
        )
        origin = pl.col("arrival").min().over("jobset")
    else:
        jobs = jobs.with_columns(pl.lit(0, pl.Int32).alias("jobset"))
        origin = pl.lit(0, pl.Int64)
    jobs = jobs.with_columns(
        pl.col("arrival") - origin,
        (pl.col("arrival_s") - origin * opts.time_step).clip(lower_bound=0.0),
    )
    return jobs.with_columns(pl.int_range(pl.len()).over("jobset").cast(pl.Int64).alias("job_id"))
