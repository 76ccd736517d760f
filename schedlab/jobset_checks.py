"""A JobSet's jobs validated against its metadata (:func:`validate`): columns, types, order,
unique ids, ranges, time bounds, capacity; each error names the first offending row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from schedlab.errors import InfeasibleJobError, JobSetError
from schedlab.timebounds import check_span, value_checks

if TYPE_CHECKING:
    pass

from schedlab.jobset_meta import (
    ID_COLUMNS,
    OPTIONAL_COLUMNS,
    SECONDS_COLUMNS,
    JobSetMeta,
)


def is_sorted(jobs: pl.DataFrame) -> bool:
    """Whether rows are strictly ordered by (jobset, arrival, job_id), without sorting."""
    if jobs.height < 2:
        return True
    d = {c: pl.col(c).cast(pl.Int64).diff().slice(1) for c in ("jobset", "arrival", "job_id")}
    later = (d["jobset"] > 0) | (
        (d["jobset"] == 0) & ((d["arrival"] > 0) | ((d["arrival"] == 0) & (d["job_id"] > 0)))
    )
    return bool(jobs.select(later.all().alias("sorted")).item())


def _ids_unique(jobs: pl.DataFrame) -> bool:
    """Fast check that (jobset, job_id) pairs are unique (packs both into one int64 key)."""
    lo, hi = jobs.select(
        pl.col("job_id").min().alias("lo"), pl.col("job_id").max().alias("hi")
    ).row(0)
    if jobs.height == 0:
        return True
    if lo < 0 or hi >= 1 << 31:
        return not jobs.select(pl.struct("jobset", "job_id").is_duplicated().any()).item()
    key = pl.col("jobset").cast(pl.Int64) * (1 << 31) + pl.col("job_id")
    return bool(jobs.select(key.n_unique()).item() == jobs.height)


def _first_bad(jobs: pl.DataFrame, bad: pl.Expr) -> dict[str, Any] | None:
    rows = jobs.with_row_index("_row").filter(bad).head(1)
    return rows.row(0, named=True) if rows.height else None


def _where(row: Mapping[str, Any]) -> str:
    return f"row {row['_row']} (jobset {row.get('jobset')}, job_id {row.get('job_id')})"


def validate(jobs: pl.DataFrame, meta: JobSetMeta) -> pl.DataFrame:
    """Check ``jobs`` against the schema and ``meta``; return it cast to the schema types.

    Raises
    ------
    JobSetError
        Naming the column, the offending value and the row (0-based) on the first violation.
    InfeasibleJobError
        If a job demands more of a resource than the cluster's capacity.
    """
    if len(meta.resources) == 0 or len(meta.capacity) != len(meta.resources):
        msg = f"metadata needs one capacity per resource, got {meta.resources} / {meta.capacity}"
        raise JobSetError(msg)
    if meta.units and len(meta.units) != len(meta.resources):
        msg = f"metadata units {meta.units} do not match resources {meta.resources}"
        raise JobSetError(msg)
    if not (isinstance(meta.machines, int) and meta.machines >= 1):
        msg = f"machines must be an integer >= 1, got {meta.machines!r}"
        raise JobSetError(msg)
    if any(not np.isfinite(c) or c <= 0 for c in meta.capacity):
        msg = f"every capacity must be finite and > 0, got {meta.capacity}"
        raise JobSetError(msg)
    schema = {**ID_COLUMNS, **{r: pl.Float64() for r in meta.resources}}
    missing = [c for c in schema if c not in jobs.columns]
    if missing:
        msg = f"missing required column(s) {missing}; have {jobs.columns}"
        raise JobSetError(msg)
    casts = {**schema, **{c: t for c, t in OPTIONAL_COLUMNS.items() if c in jobs.columns}}
    for col, dtype in casts.items():
        src = pl.col(col)
        try:
            # A value that does not convert (a string, a fraction in an integer column) is an error
            # naming its row; strict casts would not name the row and would truncate fractions.
            bad = src.is_not_null() & src.cast(dtype, strict=False).is_null()
            if dtype.is_integer() and jobs.schema[col].is_float():
                bad = bad | (src.is_finite() & (src != src.floor()))
            inner = getattr(jobs.schema[col], "inner", pl.Null)
            if isinstance(dtype, pl.List) and inner.is_float():  # ids as floats: whole only
                e = pl.element()
                bad = bad | src.list.eval(~e.is_finite() | (e != e.floor())).list.any()
            row = _first_bad(jobs, bad)
            if row is not None:
                msg = f"column {col!r} value {row[col]!r} at {_where(row)} is not a valid {dtype}"
                raise JobSetError(msg)
            jobs = jobs.with_columns(src.cast(dtype, strict=True))
        except pl.exceptions.PolarsError as exc:
            msg = f"column {col!r} cannot be read as {dtype}: {exc}".splitlines()[0]
            raise JobSetError(msg) from exc
    for col in (*schema, *(c for c in ("estimate",) if c in jobs.columns)):
        row = _first_bad(jobs, pl.col(col).is_null())
        if row is not None:
            msg = f"column {col!r} has a missing value at {_where(row)}"
            raise JobSetError(msg)
    checks: list[tuple[str, pl.Expr, str]] = [
        ("arrival", pl.col("arrival") < 0, "must be >= 0"),
        ("duration", pl.col("duration") < 1, "must be >= 1 time step"),
        ("jobset", pl.col("jobset") < 0, "must be >= 0"),
    ]
    if "estimate" in jobs.columns:
        checks.append(("estimate", pl.col("estimate") < 1, "must be >= 1 time step"))
    for r in (*meta.resources, *(c for c in SECONDS_COLUMNS if c in jobs.columns)):
        checks.append((r, ~pl.col(r).is_finite() | (pl.col(r) < 0), "must be finite and >= 0"))
    checks += value_checks(jobs.columns) + _seconds_checks(jobs, meta)
    for col, bad, rule in checks:
        row = _first_bad(jobs, bad)
        if row is not None:
            msg = f"column {col!r} value {row[col]!r} at {_where(row)} {rule}"
            raise JobSetError(msg)
    check_span(jobs)
    dup = (
        None
        if _ids_unique(jobs)
        else _first_bad(jobs, pl.struct("jobset", "job_id").is_duplicated())
    )
    if dup is not None:
        msg = f"job_id {dup['job_id']} is not unique within jobset {dup['jobset']} ({_where(dup)})"
        raise JobSetError(msg)
    if {"parents", "task", "dag"} & set(jobs.columns):  # references, cycles, dags (compiled)
        from schedlab.dag import graph

        graph(jobs)
    where = "the cluster" if meta.machines == 1 else f"each of its {meta.machines} machines"
    for r, cap in zip(meta.resources, meta.capacity, strict=True):
        cap = cap / meta.machines
        row = _first_bad(jobs, pl.col(r) > cap * (1 + 1e-9))
        if row is not None:
            msg = (
                f"job at {_where(row)} demands {r}={row[r]!r} but {where} has {r}={cap!r}: "
                "it could never run; drop it or scale the trace to a larger cluster"
            )
            raise InfeasibleJobError(msg)
    return jobs


SECONDS_RTOL = 1e-9
"""Relative tolerance of the agreement between times in seconds and in steps (float rounding)."""


def _seconds_checks(jobs: pl.DataFrame, meta: JobSetMeta) -> list[tuple[str, pl.Expr, str]]:
    """Checks that the seconds columns agree with the steps: ``arrival·step <= arrival_s <
    (arrival + 1)·step`` and ``duration_s <= duration·step`` (within :data:`SECONDS_RTOL`)."""
    present = [c for c in SECONDS_COLUMNS if c in jobs.columns]
    if not present:
        return []
    step = meta.time_step_seconds
    if step is None:
        msg = f"columns {present} (seconds) need the metadata's time_step_seconds"
        raise JobSetError(msg)
    checks = []
    if "arrival_s" in present:
        t = pl.col("arrival_s")
        lo, hi = pl.col("arrival") * step, (pl.col("arrival") + 1) * step
        tol = SECONDS_RTOL * pl.max_horizontal(hi, pl.lit(1.0))
        rule = f"is not in [arrival, arrival + 1) steps of {step:g} s (column 'arrival')"
        checks.append(("arrival_s", (t < lo - tol) | (t >= hi + tol), rule))
    if "duration_s" in present:
        hi = pl.col("duration") * step
        tol = SECONDS_RTOL * pl.max_horizontal(hi, pl.lit(1.0))
        rule = f"exceeds duration steps of {step:g} s (column 'duration')"
        checks.append(("duration_s", pl.col("duration_s") > hi + tol, rule))
    return checks
