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
    DropReport,
    LoadResult,
    raise_first,
)
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.time_range import late, out_of_range, times_fit

if TYPE_CHECKING:
    pass

from schedlab.loaders.traces import transform_steps as steps
from schedlab.loaders.traces.transform_steps import first_reason, parse_statuses

__all__ = ["OPTIONAL", "Finalize", "TraceOptions", "finish", "first_reason", "parse_statuses"]

Finalize = Callable[[pl.DataFrame], tuple[pl.DataFrame, Mapping[str, int]]]
"""``finish``'s hook on the kept jobs: returns the jobs and fix counts to add."""
OPTIONAL = ("estimate", "source_id", "user", "category", "parents", "task", "dag", *SECONDS_COLUMNS)
"""Optional JobSet columns a loader's rows may carry through :func:`finish`."""


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
        good, bad = steps.partition(rows, dropped)
        del rows
        if opts.strict:
            chosen = ~pl.col("reason").is_in(list(selections))
            raise_first(steps.samples_of(bad.filter(chosen)), source)
        rows_read = steps.weight_of(good) + int(bad.get_column("weight").sum())
        parts = [bad]
        if not times_fit(good, opts.time_step):
            good = steps.drop_rows(good, parts, *out_of_range(opts.time_step, good.columns))
        t0 = cast("float | None", good.get_column("arrival_s").min())  # a float64 column
        rel = pl.col("arrival_s") - (t0 if t0 is not None else 0.0)
        if opts.start is not None:
            good = steps.drop_rows(
                good, parts, rel < opts.start, "outside_window", f"arrives before {opts.start} s"
            )
        if opts.end is not None:
            good = steps.drop_rows(
                good, parts, rel >= opts.end, "outside_window", f"arrives at or after {opts.end} s"
            )
        if not times_fit(good, opts.time_step, (t0 or 0.0) + (opts.start or 0.0)):
            good = steps.drop_rows(good, parts, *late(opts, t0))
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
                good = steps.drop_rows(good, parts, ~pl.col(r).is_finite(), "out_of_range", fmt)
            good = steps.drop_rows(
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
            good = steps.drop_rows(
                good, parts, ~pl.lit(pl.Series(sampled)), "not_sampled", "not in the random sample"
            )
        bad = pl.concat(parts, how="vertical")
        if opts.strict:
            raise_first(steps.samples_of(bad.filter(pl.col("reason") == "out_of_range")), source)
        zero = int((good.get_column("duration_s") <= 0).sum())
        if zero:
            fixes["zero_duration_as_one_step"] = fixes.get("zero_duration_as_one_step", 0) + zero
        notes = [*notes, *steps.rounding_notes(good, opts.time_step, zero)]
        rows_kept = steps.weight_of(good)
        box = [good]  # steps.quantize consumes the rows column by column (memory)
        del good
        jobs = steps.quantize(box, opts, t0)
        kept = jobs.height
        jobs = steps.split_jobsets(jobs, opts)
        if opts.windows is not None:
            unused = kept - jobs.get_column("line").n_unique()
            notes = [
                *notes,
                f"windows: {opts.windows} windows of {opts.jobset_size} consecutive jobs at "
                f"start points drawn with seed {opts.seed}; the other {unused:,} of {kept:,} jobs "
                "are not replayed",
            ]
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
            samples=steps.samples_of(bad),
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
            arrival_window=steps.window_steps(opts),
            empty_jobsets=steps.empty_ids(ids) if opts.jobset_window is not None else (),
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
