"""The shared second half of every trace loader: filter, quantize, scale, sample, split.

A format module parses its file into *rows*: a polars DataFrame with one row per data line and
the columns

* ``line`` (int64): 1-based line number in the file;
* ``reason`` / ``message`` (str, null when the row is good): why the row is dropped (optional:
  a parser may instead hand its dropped rows over separately as ``dropped=``);
* ``raw`` (str, optional): the line's text (used only for samples of dropped rows);
* ``arrival_s``, ``duration_s`` (float64, seconds) and one float64 column per resource in the
  trace's native units; optional ``estimate_s`` (float64, seconds: the user's runtime request,
  quantized like the duration into the JobSet's ``estimate``), ``source_id``, ``user``,
  ``category``, ``parents``, ``task``, ``dag``, and ``weight`` (int64: file rows a row stands
  for, when rows are merged or copied).

The rows are processed as a good part and a dropped part: each step moves the rows it drops
(with messages built for them only), so millions of good rows carry no reason columns.

:func:`finish` then applies the user's :class:`TraceOptions` in a fixed, documented order and
accounts for every row in a :class:`~schedlab.loaders.traces.drop_report.DropReport`:

1. drop rows with a parse ``reason``; 2. drop rows whose arrival, duration or requested time in
steps is not finite or past :data:`~schedlab.timebounds.MAX_TIME` (``out_of_range``: e.g. 1e300
or 2^63 seconds, :mod:`.time_range`; before the trace's first arrival ``t0`` is taken, and again
relative to it); 3. time window; 4. quantize
time (``arrival = floor((t − t0)/step)``, ``duration = max(1, ceil(d/step))``; zero-length rows
are kept as 1-step jobs and counted as a fix, durations rounded up to whole steps are counted
as a note); 5. scale resources to the target machines and
drop jobs larger than one machine (``exceeds_capacity``) or not finite (``out_of_range``); the
cluster is ``options.machines`` machines, by default the trace's own count; 6. random sample
of ``sample`` rows; 7. split into jobsets.

The real times stay beside the steps (:data:`~schedlab.jobset.SECONDS_COLUMNS`): ``arrival_s``
relative to each jobset's origin (its step 0), ``duration_s`` and ``estimate_s``, so metrics are
defined in seconds whatever the step; quantizing may change the schedule, never a metric.

A load that keeps no row is an error that says what was dropped and why; so is a jobset whose
span (last arrival + Σ max(duration, estimate)) passes :data:`~schedlab.timebounds.MAX_TIME`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from schedlab.errors import JobSetError, TraceFormatError
from schedlab.jobset import SECONDS_COLUMNS, JobSet, JobSetMeta
from schedlab.loaders.traces.cache import source_sha256
from schedlab.loaders.traces.drop_report import (
    SAMPLE_SCHEMA,
    DropReport,
    LoadResult,
    clip_text,
    raise_first,
)
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.time_range import late, out_of_range, times_fit

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
            close = difflib.get_close_matches(str(s), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"unknown {what} {s!r}{hint} (known: {', '.join(known)})"
            raise ValueError(msg)
    if not wanted:
        msg = "statuses must name at least one status"
        raise ValueError(msg)
    return wanted


def _samples(bad: pl.DataFrame) -> pl.DataFrame:
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


def _dropped(rows: pl.DataFrame, reason: str | pl.Expr, message: str | pl.Expr) -> pl.DataFrame:
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


def _drop(
    good: pl.DataFrame, bad: list[pl.DataFrame], hit: pl.Expr, reason: str, message: pl.Expr | str
) -> pl.DataFrame:
    """Move the good rows matching ``hit`` to ``bad`` (messages are built for them only)."""
    mask = good.select(hit.fill_null(False)).to_series()
    if not mask.any():
        return good
    bad.append(_dropped(good.filter(mask), reason, message))
    return good.filter(~mask)


def _weight(frame: pl.DataFrame) -> int:
    return int(frame.get_column("weight").sum()) if "weight" in frame.columns else frame.height


def finish(
    rows: pl.DataFrame,
    *,
    source: str | Path,
    loader: str,
    resources: Sequence[str],
    machine_size: Sequence[float],
    units: Sequence[str],
    options: TraceOptions,
    fixed: Mapping[str, int] | None = None,
    extra_provenance: Mapping[str, Any] | None = None,
    selections: Collection[str] = (),
    dropped: pl.DataFrame | None = None,
    finalize: Finalize | None = None,
    notes: Sequence[str] = (),
    machines: int = 1,
) -> LoadResult:
    """Turn parsed ``rows`` into a JobSet and a drop report that accounts for every row.

    Parameters
    ----------
    rows
        See the module docstring. Without a ``reason`` column every row is good. An optional
        int64 ``weight`` column says how many rows of the file a row stands for (e.g. a job
        collapsed from 12 task rows: 12); the report counts weights instead of rows.
    machine_size
        One machine's capacity per resource, in the trace's native units.
    fixed
        Normalisations the parser applied (kind -> rows), merged into the report.
    selections
        Reasons that record the user's own selection (e.g. a status filter such as
        ``status_Failed``), not malformed rows: ``strict`` mode does not raise on them.
    dropped
        Rows the parser already dropped (``line``, ``reason``, ``message``, optional ``raw``
        and ``weight``), so that ``rows`` need not carry reason columns for millions of rows.
    finalize
        Called with the kept jobs once ``jobset`` and ``job_id`` are assigned (with every
        column of ``rows``, times in seconds relative to the jobset's origin); returns the jobs
        and fix counts to add to the report, e.g. to turn references between rows into ``parents``.
    notes
        Facts about the file as a whole for the report (a header line skipped, ...).
    machines
        The trace's own machine count, used unless ``options.machines`` names one.

    Raises
    ------
    TraceFormatError
        With ``options.strict``, the first malformed row (file and line); no row kept (the
        message says what was dropped and why).
    JobSetError
        A jobset spanning more than :data:`~schedlab.timebounds.MAX_TIME` steps.
    """
    source = str(source)
    opts = options
    fixes = dict(fixed or {})
    with ThreadPoolExecutor(max_workers=1) as pool:  # hash the file while the rows are processed
        digest = pool.submit(source_sha256, source) if Path(source).is_file() else None
        good, bad = _partition(rows, dropped)
        del rows
        if opts.strict:
            chosen = ~pl.col("reason").is_in(list(selections))
            raise_first(_samples(bad.filter(chosen)), source)
        rows_read = _weight(good) + int(bad.get_column("weight").sum())
        parts = [bad]
        if not times_fit(good, opts.time_step):
            good = _drop(good, parts, *out_of_range(opts.time_step, good.columns))
        t0 = cast("float | None", good.get_column("arrival_s").min())  # a float64 column
        rel = pl.col("arrival_s") - (t0 if t0 is not None else 0.0)
        if opts.start is not None:
            good = _drop(good, parts, rel < opts.start, "outside_window",
                         f"arrives before {opts.start} s")  # fmt: skip
        if opts.end is not None:
            good = _drop(good, parts, rel >= opts.end, "outside_window",
                         f"arrives at or after {opts.end} s")  # fmt: skip
        if not times_fit(good, opts.time_step, (t0 or 0.0) + (opts.start or 0.0)):
            good = _drop(good, parts, *late(opts, t0))
        scale = [
            (opts.slots_per_machine / m) if opts.slots_per_machine is not None else 1.0
            for m in machine_size
        ]
        count = machines if opts.machines is None else opts.machines
        machine = [m * s for m, s in zip(machine_size, scale, strict=True)]
        if any(s != 1.0 for s in scale):
            good = good.with_columns(pl.col(r) * s for r, s in zip(resources, scale, strict=True))
        for r, cap in zip(resources, machine, strict=True):
            if not good.select(pl.col(r).is_finite().all()).item():
                fmt = pl.format(f"{r}={{}} is not a finite demand", pl.col(r))
                good = _drop(good, parts, ~pl.col(r).is_finite(), "out_of_range", fmt)
            good = _drop(
                good,
                parts,
                pl.col(r) > cap * (1 + 1e-9),
                "exceeds_capacity",
                pl.format(f"{r}={{}} exceeds a machine's {cap:g}", pl.col(r)),
            )
        if opts.sample is not None and opts.sample < good.height:
            rng = np.random.default_rng(opts.seed)
            sampled = np.zeros(good.height, dtype=bool)
            sampled[rng.choice(good.height, size=opts.sample, replace=False)] = True
            good = _drop(good, parts, ~pl.lit(pl.Series(sampled)), "not_sampled",
                         "not in the random sample")  # fmt: skip
        bad = pl.concat(parts, how="vertical")
        if opts.strict:
            raise_first(_samples(bad.filter(pl.col("reason") == "out_of_range")), source)
        zero = int((good.get_column("duration_s") <= 0).sum())
        if zero:
            fixes["zero_duration_as_one_step"] = fixes.get("zero_duration_as_one_step", 0) + zero
        notes = [*notes, *_rounding_notes(good, opts.time_step, zero)]
        rows_kept = _weight(good)
        box = [good]  # _quantize consumes the rows column by column (memory)
        del good
        jobs = _quantize(box, opts, t0)
        kept = jobs.height
        jobs = _split(jobs, opts)
        if opts.windows is not None:
            notes = [*notes, (
                f"windows: {opts.windows} windows of {opts.jobset_size} consecutive jobs at "
                f"start points drawn with seed {opts.seed}; the other "
                f"{kept - jobs.get_column('line').n_unique():,} of {kept:,} jobs are not replayed"
            )]  # fmt: skip
        if finalize is not None:
            jobs, more = finalize(jobs)
            for k, v in more.items():
                fixes[k] = fixes.get(k, 0) + v
        counts = bad.group_by("reason").agg(pl.col("weight").sum()).sort("reason")
        report = DropReport(
            source=source,
            rows_read=rows_read,
            rows_kept=rows_kept,
            dropped={k: v for k, v in zip(counts["reason"], counts["weight"], strict=True) if v},
            fixed=fixes,
            samples=_samples(bad),
            notes=tuple(notes),
        )
        if rows_kept == 0:
            raise TraceFormatError(report.nothing_kept())
        ids = jobs.get_column("jobset").unique().to_list()
        optional = [c for c in OPTIONAL if c in jobs.columns]
        table = jobs.select("jobset", "job_id", "arrival", "duration", *resources, *optional)
        del jobs
        meta = JobSetMeta(
            resources=tuple(resources),
            capacity=tuple(count * m for m in machine),
            machines=count,
            units=tuple(units) if opts.slots_per_machine is None else ("slot",) * len(resources),
            time_step_seconds=opts.time_step,
            arrival_window=_window_steps(opts),
            empty_jobsets=_empty(ids) if opts.jobset_window is not None else (),
            provenance={
                **(extra_provenance or {}),
                "loader": loader,
                "path": source,
                "sha256": digest.result() if digest is not None else None,
                "options": asdict(opts),
                "trace_start_s": t0,
                "machine_size": list(machine_size),
                "rows": report.to_json(),
            },
        )
    try:
        return LoadResult(JobSet.create(table, meta), report)
    except JobSetError as exc:
        msg = f"{source}: {exc}"
        raise type(exc)(msg) from exc


Finalize = Callable[[pl.DataFrame], tuple[pl.DataFrame, Mapping[str, int]]]
"""``finish``'s hook on the kept jobs: returns the jobs and fix counts to add."""
OPTIONAL = ("estimate", "source_id", "user", "category", "parents", "task", "dag", *SECONDS_COLUMNS)
"""Optional JobSet columns a loader's rows may carry through :func:`finish`."""


def _partition(rows: pl.DataFrame, dropped: pl.DataFrame | None) -> tuple[pl.DataFrame, ...]:
    """Split into good rows (no reason columns) and dropped rows (see :func:`_dropped`)."""
    parts = [] if dropped is None else [_dropped(dropped, pl.col("reason"), pl.col("message"))]
    if "reason" in rows.columns:
        is_bad = rows.get_column("reason").is_not_null()
        if is_bad.any():
            parts.append(_dropped(rows.filter(is_bad), pl.col("reason"), pl.col("message")))
            rows = rows.filter(~is_bad)
        rows = rows.drop("reason", "message")
    empty = _dropped(pl.DataFrame(schema={"line": pl.Int64}), "", "")
    return rows, pl.concat([empty, *parts], how="vertical")


def _rounding_notes(good: pl.DataFrame, step: float, zero: int) -> list[str]:
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


def _quantize(box: list[pl.DataFrame], opts: TraceOptions, t0: float | None) -> pl.DataFrame:
    """The rows popped from ``box``, sorted by arrival (then line), with integer ``arrival``
    and ``duration`` in steps beside ``arrival_s`` (seconds since the trace's origin
    ``t0 + start``; :func:`_split` makes it relative to each jobset's) and ``duration_s``."""
    good = box.pop()
    start = opts.start or 0.0
    since = pl.col("arrival_s") - (t0 or 0.0) - start
    good = good.with_columns(
        (since / opts.time_step).floor().cast(pl.Int64).alias("arrival"),
        (pl.col("duration_s") / opts.time_step).ceil().clip(lower_bound=1).cast(pl.Int64)
        .alias("duration"),
    )  # fmt: skip
    if "estimate_s" in good.columns:
        steps = (pl.col("estimate_s") / opts.time_step).ceil().clip(lower_bound=1)
        good = good.with_columns(steps.cast(pl.Int64).alias("estimate"))
    order = _arrival_order(good)
    if order is None:
        return good.sort("arrival_s", "line").with_columns(since)
    index = pl.Series(order)
    del order
    columns = {}
    for name in good.columns:  # gather column by column, freeing each original as we go
        columns[name] = good.get_column(name).gather(index)
        good = good.drop(name)
    return pl.DataFrame(columns).with_columns(since)


def _arrival_order(good: pl.DataFrame) -> np.ndarray | None:
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


def _empty(ids: Sequence[int]) -> tuple[int, ...]:
    present = set(ids)
    return tuple(k for k in range(max(present, default=-1) + 1) if k not in present)


def _window_steps(opts: TraceOptions) -> int | None:
    """Width of a time-window jobset in steps (the offered load's span), else None."""
    if opts.jobset_window is None:
        return None
    return max(1, round(opts.jobset_window / opts.time_step))


def _windows(jobs: pl.DataFrame, n: int, size: int, seed: int) -> pl.DataFrame:
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


def _split(jobs: pl.DataFrame, opts: TraceOptions) -> pl.DataFrame:
    """Assign ``jobset`` and ``job_id`` and make arrivals (steps and seconds) relative to each
    jobset's origin, its first step: ``arrival_s`` stays within ``arrival``'s step."""
    if (width := _window_steps(opts)) is not None:
        jobs = jobs.with_columns((pl.col("arrival") // width).cast(pl.Int32).alias("jobset"))
        origin = pl.col("jobset").cast(pl.Int64) * width
    elif opts.windows is not None and opts.jobset_size is not None:
        jobs = _windows(jobs, opts.windows, opts.jobset_size, opts.seed)
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
