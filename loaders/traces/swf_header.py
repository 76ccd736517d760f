"""The header of an SWF log: ``; Key: value`` comment lines, and the machine they describe.

:func:`parse_header` reads the comment lines (continuation lines join their key's value; a key
given twice keeps its first value, with a note); :func:`machine_size` is one machine's
processor count (``MaxProcs``, else ``MaxNodes``, which the standard makes the default of
``MaxProcs``); :func:`header_notes` are the normalisations and header mismatches recorded in
the provenance. The data lines are :mod:`schedlab.loaders.traces.swf`'s.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from schedlab.errors import TraceFormatError

NUMERIC_HEADER = (
    "MaxJobs",
    "MaxRecords",
    "UnixStartTime",
    "TimeZone",
    "MaxNodes",
    "MaxProcs",
    "MaxRuntime",
    "MaxMemory",
    "MaxQueues",
    "MaxPartitions",
)
REPEATED_HEADER = ("Note", "Queue", "Partition")
_KEY = r"^;\s*(?P<key>[A-Za-z][A-Za-z0-9]*)\s*:(?:\s+(?P<value>.*?))?\s*$"


def parse_header(comments: pl.DataFrame, source: str) -> tuple[dict[str, Any], list[str]]:
    """``; Key: value`` lines -> dict; continuation lines join the previous key's value. A key
    given twice keeps its first value; the notes say so."""
    parts = comments.with_columns(
        pl.col("raw").str.extract_groups(_KEY).alias("kv"),
        pl.col("raw").str.strip_chars().str.strip_prefix(";").str.strip_chars().alias("text"),
    ).unnest("kv")
    entries = (
        parts.with_columns(pl.col("key").is_not_null().cum_sum().alias("_entry"))
        .filter(pl.col("_entry") > 0)
        .with_columns(pl.when(pl.col("key").is_null()).then("text").otherwise("value").alias("v"))
        .group_by("_entry", maintain_order=True)
        .agg(pl.col("line").first(), pl.col("key").first(), pl.col("v").drop_nulls())
        .with_columns(pl.col("v").list.eval(pl.element().filter(pl.element() != "")))
        .with_columns(pl.col("v").list.join(" "))
    )
    header: dict[str, Any] = {}
    seen: dict[str, list[tuple[int, str]]] = {}
    for line, key, value in entries.select("line", "key", "v").iter_rows():
        if key in REPEATED_HEADER:
            header.setdefault(key, []).append(value)
            continue
        seen.setdefault(key, []).append((line, value))
        if key in NUMERIC_HEADER:
            header.setdefault(key, _number(value, key, line, source))
        else:
            header.setdefault(key, value)
    notes = [
        f"header {key} is given {len(uses)} times (lines "
        f"{', '.join(str(line) for line, _ in uses)}: {', '.join(repr(v) for _, v in uses)}); "
        f"the first, {uses[0][1]!r}, is used"
        for key, uses in seen.items()
        if len(uses) > 1
    ]
    return header, notes


def _number(value: str, key: str, line: int, source: str) -> int | float:
    try:
        x = float(value)
    except ValueError:
        msg = f"line {line} of {source}: header {key}: {value!r} is not a number"
        raise TraceFormatError(msg) from None
    return int(x) if x.is_integer() else x


def machine_size(header: dict[str, Any], max_procs: float | None, source: str) -> tuple[float, str]:
    """Processors of one machine and where the number comes from: ``max_procs`` if given, else
    the ``MaxProcs`` header, else ``MaxNodes``; :class:`TraceFormatError` without any."""
    if max_procs is not None:
        return float(max_procs), "max_procs option"
    for key in ("MaxProcs", "MaxNodes"):
        if isinstance(header.get(key), int | float) and header[key] > 0:
            return float(header[key]), f"{key} header"
    msg = f"{source}: no MaxProcs or MaxNodes header line; pass max_procs= (processors per machine)"
    raise TraceFormatError(msg)


def header_notes(header: dict[str, Any], n_rows: int, size_from: str, mem_note: str) -> list[str]:
    """Human-readable normalisations and header mismatches, for the provenance."""
    notes = [f"machine size from {size_from}", mem_note]
    if size_from == "MaxNodes header":
        notes.append("no MaxProcs header: MaxProcs defaults to MaxNodes (SWF 2.2)")
    records = header.get("MaxRecords")
    if isinstance(records, int) and records != n_rows:
        notes.append(f"header MaxRecords={records} but the file has {n_rows} job lines")
    return notes
