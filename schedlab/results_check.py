"""Per-job results checked when they are read, as JobSets and model files are (issue 36).

A results file is an input like any other: a report, a comparison or an export must not draw
conclusions from a table with NaN or negative waits, a start before its arrival, a finish before
its start, duplicated rows or no row at all, nor end in a traceback on a missing or mistyped
column. :func:`check_table` checks, in order, and raises a one-line
:class:`~schedlab.errors.ResultsError` naming the file, the column and the first offending row
(with its policy, jobset and job):

1. at least one row;
2. the columns of :data:`RESULT_COLUMNS` are present (``machine`` may be
   absent), and every known column has its type: integers (steps, ids), floats, text, booleans;
3. no missing value where one is required (``load`` and ``seed`` may be null, a run that had
   none);
4. ranges: ``arrival >= 0``, ``start >= arrival``, ``finish >= start``, ``duration >= 1``,
   ``wait = start − arrival``, ``completion = finish − arrival``, ``slowdown`` finite and > 0
   (and ``completion / duration`` without real times), the seconds columns finite and >= 0,
   ``share`` in [0, 1], ``load`` (where known) finite and > 0;
5. one row per (workload, policy, load, jobset, job);
6. the metadata names every policy of the table.

The results table's columns and their types are defined here (:data:`RESULT_COLUMNS`,
:data:`SECONDS_RESULT_COLUMNS`, :data:`DAG_RESULT_COLUMNS`); :mod:`schedlab.results` takes them
from here. The simulators' own output satisfies all of it (the multi-cluster model's jobs may run
longer than ``duration``, so ``finish − start`` is not checked against it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from schedlab.errors import ResultsError

RESULT_COLUMNS = (
    "policy",
    "jobset",
    "load",
    "seed",
    "job_id",
    "arrival",
    "start",
    "finish",
    "duration",
    "machine",
    "slowdown",
    "completion",
    "wait",
)
"""Columns of every per-job results table, in order (:class:`~schedlab.results.Results`)."""
SECONDS_RESULT_COLUMNS = ("arrival_s", "run_s", "wait_s", "completion_s", "share")
"""Columns results add when the JobSet has real times (:data:`~schedlab.jobset.SECONDS_COLUMNS`),
float64: ``arrival_s`` (seconds since the jobset's origin), ``run_s`` (seconds the job ran,
:func:`~schedlab.results.run_seconds`), ``wait_s = max(0, start·step − arrival_s)``,
``completion_s = wait_s + run_s`` (the turnaround) and ``share`` (the job's demand of the first
resource as a fraction of the cluster's capacity of it, for the utilisation)."""
DAG_RESULT_COLUMNS = ("dag", "job_arrival", "critical_path")
"""Columns results of a DAG workload add (int64): each task's DAG job, the job's arrival (its
first task's, steps) and its critical path (its length with unlimited machines, steps), so
that :func:`~schedlab.evaluation.metrics.per_jobset` measures jobs as jobs."""
FLOAT = ("load", "slowdown", *SECONDS_RESULT_COLUMNS)
"""Columns of real numbers (integers are accepted too)."""
TEXT = ("policy", "workload")
"""Columns of names."""
BOOLEAN = ("killed",)
"""Columns of flags."""
INTEGER = (*(c for c in RESULT_COLUMNS if c not in (*FLOAT, *TEXT)), *DAG_RESULT_COLUMNS)
"""Columns of whole numbers (steps, ids)."""
OPTIONAL = ("load", "seed", "machine")
"""Columns of :data:`RESULT_COLUMNS` that may be absent or null."""
REQUIRED = tuple(c for c in RESULT_COLUMNS if c not in OPTIONAL)
"""Columns every results table has, never null."""
SECONDS = tuple(c for c in SECONDS_RESULT_COLUMNS if c != "share")
"""Columns of real times, seconds >= 0."""
KEY = ("workload", "policy", "load", "jobset", "job_id")
"""What identifies a row (those present)."""
RTOL = 1e-9
"""Relative tolerance of the slowdown's agreement with completion / duration."""


def _fail(source: str, msg: str) -> ResultsError:
    return ResultsError(f"{source}: {msg}")


def _where(row: Mapping[str, Any]) -> str:
    who = ", ".join(f"{k} {row[k]!r}" for k in ("policy", "jobset", "job_id") if k in row)
    return f"row {row['_row']} ({who})"


def _types(table: pl.DataFrame, source: str) -> None:
    schema = table.schema
    for col, dtype in schema.items():
        if col in INTEGER and not (dtype.is_integer() or dtype == pl.Null):
            want = "whole numbers (int64)"
        elif col in FLOAT and not (dtype.is_numeric() or dtype == pl.Null):
            want = "numbers (float64)"
        elif col in TEXT and dtype not in (pl.String, pl.Categorical, pl.Null):
            want = "text"
        elif col in BOOLEAN and dtype not in (pl.Boolean, pl.Null):
            want = "true/false"
        else:
            continue
        raise _fail(source, f"column {col!r} is {dtype}, expected {want}")


def _first(table: pl.DataFrame, bad: pl.Expr) -> dict[str, Any] | None:
    rows = table.with_row_index("_row").filter(bad.fill_null(True)).head(1)
    return rows.row(0, named=True) if rows.height else None


def _rules(columns: list[str]) -> list[tuple[str, pl.Expr, str]]:
    """``(column, bad, what is wrong)`` in the order they are checked."""
    c = pl.col
    rules = [
        ("arrival", c("arrival") < 0, "is negative"),
        ("start", c("start") < c("arrival"), "is before its arrival (column 'arrival')"),
        ("finish", c("finish") < c("start"), "is before its start (column 'start')"),
        ("duration", c("duration") < 1, "is less than 1 step"),
        ("wait", c("wait") != c("start") - c("arrival"), "is not start − arrival"),
        ("completion", c("completion") != c("finish") - c("arrival"), "is not finish − arrival"),
        ("slowdown", ~c("slowdown").is_finite() | (c("slowdown") <= 0), "is not finite and > 0"),
    ]
    if "arrival_s" not in columns:
        ratio = c("completion") / c("duration")
        off = (c("slowdown") - ratio).abs() > RTOL * ratio.abs()
        rules.append(("slowdown", off, "is not completion / duration"))
    for col in (x for x in SECONDS if x in columns):
        rules.append((col, ~c(col).is_finite() | (c(col) < 0), "is not finite and >= 0"))
    if "share" in columns:
        bad = ~c("share").is_finite() | (c("share") < 0) | (c("share") > 1 + RTOL)
        rules.append(("share", bad, "is not in [0, 1]"))
    if "machine" in columns:
        rules.append(("machine", c("machine") < 0, "is negative"))
    if "load" in columns:
        bad = c("load").is_not_null() & (~c("load").is_finite() | (c("load") <= 0))
        rules.append(("load", bad, "is not a finite offered load > 0"))
    return rules


def check_table(
    table: pl.DataFrame, meta: Mapping[str, Any] | None = None, *, source: str = "results"
) -> None:
    """Raise :class:`~schedlab.errors.ResultsError` unless ``table`` (and ``meta``, if given)
    are per-job results as the simulators write them (module docstring); ``source`` (the file)
    opens every message."""
    if table.height == 0:
        raise _fail(source, "holds no result row; simulate at least one job")
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise _fail(source, f"missing column(s) {missing} of per-job results; have {table.columns}")
    _types(table, source)
    for col in (*REQUIRED, *(c for c in ("machine", *SECONDS, "share") if c in table.columns)):
        row = _first(table, pl.col(col).is_null())
        if row is not None:
            raise _fail(source, f"column {col!r} has a missing value at {_where(row)}")
    for col, bad, what in _rules(table.columns):
        row = _first(table, bad)
        if row is not None:
            raise _fail(source, f"column {col!r} value {row[col]!r} at {_where(row)} {what}")
    key = [c for c in KEY if c in table.columns]
    dup = _first(table, ~pl.struct(key).is_first_distinct())
    if dup is not None:
        raise _fail(source, f"{_where(dup)} is repeated (one row per {', '.join(key)})")
    if meta is not None:
        _check_policies(table, meta, source)


def _check_policies(table: pl.DataFrame, meta: Mapping[str, Any], source: str) -> None:
    named = meta.get("policies")
    if not isinstance(named, dict):
        raise _fail(source, "metadata has no 'policies' table (policy name -> parameters)")
    unknown = [p for p in table.get_column("policy").unique().sort().to_list() if p not in named]
    if unknown:
        raise _fail(source, f"policies {unknown[:5]} of column 'policy' are not in the metadata")
