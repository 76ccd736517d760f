"""Standard Workload Format (Parallel Workloads Archive) -> JobSet (design.md §4).

An SWF log is a text file (plain or gzip) of ``;`` header comments followed by one line per job of
18 whitespace-separated numeric fields, ``-1`` meaning "unknown"
(https://www.cs.huji.ac.il/labs/parallel/workload/swf.html, version 2.2). Fields used here
(1-based as in the standard):

==  ===================  ===================================================================
 2  submit time          ``arrival`` (seconds since the log's start, ``UnixStartTime``)
 4  run time             ``duration`` (seconds); ``-1`` -> dropped (``unknown_run_time``)
 9  requested time       ``estimate`` (seconds, the user's walltime request, what a scheduler
                         sees); ``-1``/``0`` -> the run time, a fix (``estimate_from_run_time``)
 8  requested procs      resource ``procs`` (what the scheduler saw); ``-1``/``0`` -> allocated
                         procs (field 5), a fix (``procs_from_allocated``); ``procs="allocated"``
                         reads field 5 first instead (fix ``procs_from_requested``)
 7  used memory          KB per processor; resource ``mem`` = memory x procs (when present)
10  requested memory     KB per processor; fallback for (or instead of) used memory
11  status               1 completed, 0 failed, 5 cancelled, 2/3/4 partial executions
12  user id              ``user``
==  ===================  ===================================================================

Header comments ``; Key: value`` are parsed (continuation lines join their key's value) and
recorded in the provenance; ``MaxProcs`` (else ``MaxNodes``, which the standard makes the default
of ``MaxProcs``) is one machine's processor count, and ``MaxMemory`` (KB per processor) its memory.
The log's own cluster is that one machine: a parallel job spans as many nodes as it needs, so the
processors form one pool (``TraceOptions(machines=N)`` replays on N such machines).
Comment and blank lines are not data rows: they are counted in the provenance, never in the drop
report. A key given twice (e.g. two ``MaxProcs`` lines) keeps its first value, with a note; so
does a ``MaxRecords`` that disagrees with the file. Every data line is either kept or dropped
with a reason code:

``invalid_utf8`` (bytes that are not UTF-8, e.g. Latin-1), ``wrong_field_count``,
``not_a_number``, ``invalid_status``, ``partial_execution`` / ``status_<k>`` (the status
selection), ``unknown_submit_time``, ``negative_submit_time``, ``unknown_run_time``,
``negative_duration``, ``unknown_procs``, ``unknown_memory``, then the shared steps of
:func:`~schedlab.loaders.traces.transform.finish` (``out_of_range``, ``outside_window``,
``exceeds_capacity``, ``not_sampled``). Fixes (rows kept but changed): ``estimate_from_run_time``,
``procs_from_allocated`` / ``procs_from_requested``,
``mem_from_requested`` / ``mem_from_used``, ``zero_duration_as_one_step``; they are counted
over the rows that pass parsing (a later window or sample may still drop some of them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.archive import check_parse_size, text_path
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.swf_header import header_notes, machine_size, parse_header
from schedlab.loaders.traces.textio import layout, read_lines, require_shape
from schedlab.loaders.traces.transform import TraceOptions, finish, first_reason

FIELDS = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
"""The 18 SWF fields, in file order."""
STATUSES = (-1, 0, 1, 2, 3, 4, 5)
"""Valid values of the status field."""
PARTIAL = (2, 3, 4)
"""Statuses of the lines that describe one part of a checkpointed or swapped job."""
SELECTIONS = ("partial_execution", *(f"status_{k}" for k in STATUSES))

Memory = Literal["auto", "used", "requested", "none"]
Procs = Literal["requested", "allocated"]


def _fields(data: pl.DataFrame) -> pl.DataFrame:
    """Split each line on runs of whitespace; ``t_<name>`` tokens and float64 ``<name>``."""
    tokens = pl.col("raw").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ")
    data = data.with_columns(tokens.list.len().alias("n_fields"), tokens.alias("_tok"))
    data = data.with_columns(
        pl.col("_tok").list.get(i, null_on_oob=True).alias(f"t_{name}")
        for i, name in enumerate(FIELDS)
    )
    return data.with_columns(
        pl.col(f"t_{name}").cast(pl.Float64, strict=False).alias(name) for name in FIELDS
    ).drop("_tok")


def _not_a_number() -> tuple[pl.Expr, pl.Expr]:
    bad = [pl.col(f"t_{f}").is_not_null() & ~pl.col(f).is_finite().fill_null(False) for f in FIELDS]
    msgs = [
        pl.when(b).then(pl.format(f"field {i} ({f}) is not a number: {{}}", pl.col(f"t_{f}")))
        for i, (f, b) in enumerate(zip(FIELDS, bad, strict=True), start=1)
    ]
    return pl.any_horizontal(bad), pl.coalesce(msgs)


def _procs(primary: Procs) -> tuple[pl.Expr, pl.Expr]:
    """Processors from ``primary`` (requested/allocated), else the other field, and whether
    the fallback was used."""
    first = pl.col(f"{primary}_procs")
    other = pl.col("allocated_procs" if primary == "requested" else "requested_procs")
    return pl.when(first > 0).then(first).when(other > 0).then(other), (first <= 0) & (other > 0)


def _memory(primary: str) -> tuple[pl.Expr, pl.Expr]:
    """Memory per processor (KB) from ``primary`` (used/requested), else the other field."""
    first = pl.col("used_memory" if primary == "used" else "requested_memory")
    other = pl.col("requested_memory" if primary == "used" else "used_memory")
    return pl.when(first > 0).then(first).when(other > 0).then(other), (first <= 0) & (other > 0)


def _status_checks(statuses: Sequence[int] | None) -> list[tuple[pl.Expr, Any, Any]]:
    status, tok = pl.col("status"), pl.col("t_status")
    checks: list[tuple[pl.Expr, Any, Any]] = [
        (
            ~status.is_in([float(s) for s in STATUSES]),
            "invalid_status",
            pl.format("status={} is not an SWF status (-1, 0, 1, 2, 3, 4, 5)", tok),
        )
    ]
    if statuses is None:
        msg = "status={} marks one part of a checkpointed or swapped job; its summary line counts"
        checks.append(
            (status.is_in([float(s) for s in PARTIAL]), "partial_execution", pl.format(msg, tok))
        )
    else:
        name = pl.format("status_{}", status.cast(pl.Int64))
        msg = f"status={{}} is not among the selected statuses {list(statuses)}"
        checks.append((~status.is_in([float(s) for s in statuses]), name, pl.format(msg, tok)))
    return checks


def _checks(statuses: Sequence[int] | None, memory: str | None) -> list[tuple[pl.Expr, Any, Any]]:
    """(bad, reason, message) in priority order: a row gets the first reason that applies."""
    nan, nan_msg = _not_a_number()
    submit, run = pl.col("submit_time"), pl.col("run_time")
    checks = [
        (pl.col("encoding").is_not_null(), "invalid_utf8", pl.col("encoding")),
        (
            pl.col("n_fields") != len(FIELDS),
            "wrong_field_count",
            pl.format("expected 18 whitespace-separated fields, found {}", pl.col("n_fields")),
        ),
        (nan, "not_a_number", nan_msg),
        *_status_checks(statuses),
        (submit == -1, "unknown_submit_time", "submit_time=-1 (unknown)"),
        (
            submit < 0,
            "negative_submit_time",
            pl.format("submit_time={} must be >= 0", "t_submit_time"),
        ),
        (run == -1, "unknown_run_time", "run_time=-1 (unknown)"),
        (run < 0, "negative_duration", pl.format("run_time={} must be >= 0", "t_run_time")),
        (
            _procs("requested")[0].is_null(),
            "unknown_procs",
            pl.format(
                "allocated_procs={} and requested_procs={} are both unknown (<= 0)",
                "t_allocated_procs",
                "t_requested_procs",
            ),
        ),
    ]
    if memory is not None:
        msg = "used_memory={} and requested_memory={} are both unknown (<= 0)"
        fmt = pl.format(msg, "t_used_memory", "t_requested_memory")
        checks.append((_memory(memory)[0].is_null(), "unknown_memory", fmt))
    return checks


def _choose_memory(
    data: pl.DataFrame, memory: Memory, max_memory: float | None, source: str
) -> tuple[str | None, str]:
    """Which memory field feeds ``mem`` (None: no ``mem`` resource) and why."""
    if memory not in ("auto", "used", "requested", "none"):
        msg = f"memory must be 'auto', 'used', 'requested' or 'none', got {memory!r}"
        raise ValueError(msg)
    if memory == "none":
        return None, "memory not loaded (memory='none')"
    if memory != "auto":
        if max_memory is None:
            msg = f"{source}: memory={memory!r} needs the machine's memory: no MaxMemory header; "
            msg += "pass max_memory= (KB per processor)"
            raise TraceFormatError(msg)
        return memory, f"mem from {memory} memory (fields 7/10) x processors, KB"
    present = data.select(
        ((pl.col("used_memory") > 0) | (pl.col("requested_memory") > 0)).any()
    ).item()
    if not present:
        return None, "memory omitted: no job has a used or requested memory (fields 7, 10 are -1)"
    if max_memory is None:
        why = "memory omitted: the log has memory values but no MaxMemory header; pass "
        return None, why + "max_memory= (KB per processor) to load it"
    return "used", "mem from used memory (field 7, else requested, field 10) x processors, KB"


def read_swf(
    source: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    max_procs: float | None = None,
    procs: Procs = "requested",
    memory: Memory = "auto",
    max_memory: float | None = None,
    statuses: Sequence[int] | int | str | None = None,
) -> LoadResult:
    """Load an SWF log (plain or gzip) into a JobSet with a drop report.

    Parameters
    ----------
    source
        Path of the ``.swf`` or ``.swf.gz`` file (compression is detected from its content).
    options
        Shared load options (time step, window, scaling, sampling, jobset split, strict).
    max_procs
        Processors of one machine; default the ``MaxProcs`` header (else ``MaxNodes``). An error
        if neither the header nor this option gives it.
    procs
        ``"requested"`` (default): processors from the request (field 8), what the scheduler
        saw when it placed the job, falling back to the allocation (field 5, a fix);
        ``"allocated"``: the allocation first, the request as fallback.
    memory
        ``"auto"`` (default): a ``mem`` resource from used memory (field 7, falling back to
        requested memory, field 10), in KB, when the log has memory values and the machine's
        memory is known; otherwise no ``mem`` resource (the reason is in the provenance).
        ``"used"`` / ``"requested"``: that field first, the other as fallback (a fix);
        ``"none"``: processors only.
    max_memory
        Memory of one processor in KB (the ``MaxMemory`` header by default); one machine has
        ``max_memory * max_procs`` KB.
    statuses
        Status codes to keep (e.g. ``1`` for completed jobs only, or ``"0|1"``); others are
        dropped as ``status_<k>``. Default None keeps every job summary line (-1, 0, 1, 5) and
        drops partial-execution lines (2, 3, 4) as ``partial_execution``, since their summary
        line already stands for the whole job.

    Returns
    -------
    LoadResult
        Resources ``procs`` (processors) and possibly ``mem`` (KB); ``source_id`` is the job
        number, ``user`` the user id.

    Raises
    ------
    TraceFormatError
        Missing, empty, binary or other-kind file (e.g. Parquet), corrupt or mislabelled
        compression, no data lines, no line with 18 fields, non-numeric header values, unknown
        machine size, no row kept; with ``options.strict``, the first malformed line (file and
        line number).
    """
    options = options or TraceOptions()
    src = str(source)
    wanted = _statuses(statuses)
    path = text_path(source, max_bytes=options.max_decompressed)
    check_parse_size(path, source)
    lines = read_lines(path)
    text = pl.col("raw").str.strip_chars()
    comments = lines.filter(text.str.starts_with(";"))
    blank = lines.filter(text == "").height
    data = _fields(lines.filter((text != "") & ~text.str.starts_with(";")))
    _check_shape(data, comments.height, src)
    header, key_notes = parse_header(comments, src)
    procs_per_machine, size_from = machine_size(header, max_procs, src)
    if max_memory is None and isinstance(header.get("MaxMemory"), int | float):
        max_memory = float(header["MaxMemory"]) if header["MaxMemory"] > 0 else None
    mem_field, mem_note = _choose_memory(data, memory, max_memory, src)
    data = first_reason(data, _checks(wanted, mem_field))
    if procs not in ("requested", "allocated"):
        msg = f"procs must be 'requested' or 'allocated', got {procs!r}"
        raise ValueError(msg)
    procs_expr, procs_fix = _procs(procs)
    rows = data.with_columns(
        pl.col("submit_time").alias("arrival_s"),
        pl.col("run_time").alias("duration_s"),
        pl.when(pl.col("requested_time") > 0)
        .then("requested_time")
        .otherwise("run_time")
        .alias("estimate_s"),
        procs_expr.alias("procs"),
        pl.col("t_job_number").alias("source_id"),
        pl.when(pl.col("user_id") >= 0).then(pl.col("t_user_id")).alias("user"),
        pl.col("t_status").alias("status"),
    )
    good = pl.col("reason").is_null()
    no_request = pl.col("requested_time") <= 0
    fixed = {
        "estimate_from_run_time": rows.select((good & no_request).sum()).item(),
        f"procs_from_{'allocated' if procs == 'requested' else 'requested'}": rows.select(
            (good & procs_fix).sum()
        ).item(),
    }
    resources, size, units = ["procs"], [procs_per_machine], ["processor"]
    if mem_field is not None:
        per_proc, mem_fix = _memory(mem_field)
        rows = rows.with_columns((per_proc * pl.col("procs")).alias("mem"))
        other = "requested" if mem_field == "used" else "used"
        fixed[f"mem_from_{other}"] = rows.select((good & mem_fix).sum()).item()
        resources.append("mem")
        size.append(float(max_memory) * procs_per_machine)  # type: ignore[arg-type]
        units.append("KB")
    notes = [*header_notes(header, data.height, size_from, mem_note), *key_notes]
    if lossy := comments.get_column("encoding").is_not_null().sum():
        notes.append(f"{lossy} comment lines hold bytes that are not UTF-8 (read as U+FFFD)")
    provenance = {
        "swf": {
            "header": header,
            "comment_lines": comments.height,
            "blank_lines": blank,
            "cleaned": any("CLEANED" in n.upper() for n in header.get("Note", [])),
            "unix_start_time": header.get("UnixStartTime"),
            "time_zone": header.get("TimeZone"),
            "time_zone_string": header.get("TimeZoneString"),
            "machine_size_from": size_from,
            "memory": mem_field,
            "statuses": None if wanted is None else list(wanted),
            "notes": notes,
        }
    }
    return finish(
        rows,
        source=src,
        loader="swf",
        resources=resources,
        machine_size=size,
        units=units,
        options=options,
        fixed={k: v for k, v in fixed.items() if v},
        extra_provenance=provenance,
        selections=SELECTIONS,
        notes=[*layout(path).notes(), *notes],
    )


def _statuses(statuses: Sequence[int] | int | str | None) -> tuple[int, ...] | None:
    if statuses is None:
        return None
    if isinstance(statuses, int):  # one code, e.g. from the CLI's ``-p statuses=1``
        statuses = (statuses,)
    items = statuses.split("|") if isinstance(statuses, str) else statuses
    try:
        wanted = tuple(int(s) for s in items)
    except (TypeError, ValueError):
        msg = f"statuses must be SWF status codes {STATUSES}, got {statuses!r}"
        raise ValueError(msg) from None
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown or not wanted:
        msg = f"statuses must be a non-empty selection of {STATUSES}, got {statuses!r}"
        raise ValueError(msg)
    return wanted


def _check_shape(data: pl.DataFrame, n_comments: int, source: str) -> None:
    """File-level errors: no job line at all, or no line shaped like an SWF job."""
    if data.height == 0:
        msg = f"{source}: no job lines (only {n_comments} comment lines and blank lines)"
        raise TraceFormatError(msg)
    require_shape(data, len(FIELDS), source, "an SWF log", "whitespace-separated")
