"""The JobSet: the common workload format (design.md §2).

A JobSet is a polars DataFrame of jobs (one row per job, many jobsets distinguished by the
``jobset`` column) plus :class:`JobSetMeta`. It is stored as one Parquet file whose key-value
metadata holds the JSON of the metadata, so a file is self-describing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from schedlab import io
from schedlab.errors import InfeasibleJobError, JobSetError
from schedlab.frames import html_preview
from schedlab.timebounds import MAX_TIME, check_span, value_checks
from schedlab.validate import Table

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
MAX_SPAN = MAX_TIME
"""Most steps one jobset may span (last arrival + Σ max(duration, estimate)), and any time it
holds: :data:`schedlab.timebounds.MAX_TIME`, where the simulators' arithmetic cannot overflow."""
ID_COLUMNS: dict[str, pl.DataType] = {
    "jobset": pl.Int32(),
    "job_id": pl.Int64(),
    "arrival": pl.Int64(),
    "duration": pl.Int64(),
}
OPTIONAL_COLUMNS: dict[str, pl.DataType] = {
    "load": pl.Float64(),
    "estimate": pl.Int64(),
    "category": pl.Utf8(),
    "deadline": pl.Int64(),
    "source_id": pl.Utf8(),
    "user": pl.Utf8(),
    "parents": pl.List(pl.Int64()),
    "task": pl.Int64(),
    "dag": pl.Int64(),
    "arrival_s": pl.Float64(),
    "duration_s": pl.Float64(),
    "estimate_s": pl.Float64(),
}
"""Optional job columns and their types. ``parents``, ``task`` and ``dag`` describe DAG
workloads (:mod:`schedlab.dag`): the tasks a row waits for, the task a row is an instance of
(default: its own ``job_id``) and the DAG job it belongs to."""
SECONDS_COLUMNS = ("arrival_s", "duration_s", "estimate_s")
"""Optional float64 columns of a trace's real times, in seconds (synthetic jobsets, defined in
steps, have none): ``arrival_s``, the submit time relative to the jobset's own origin (its step
0, so ``arrival = floor(arrival_s / step)``); ``duration_s``, the recorded run time (0 allowed:
its ``duration`` is still 1 step); ``estimate_s``, the user's runtime request. They need
``JobSetMeta.time_step_seconds``; metrics are defined on them whatever the step
(:mod:`schedlab.evaluation.metrics`). Tools that change ``arrival`` or ``duration`` drop them."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobSetMeta:
    """Metadata of a JobSet."""

    resources: tuple[str, ...]
    """Resource names; each is a float64 demand column of the jobs table."""
    capacity: tuple[float, ...]
    """Capacity of the whole cluster per resource, in the same units as the demands (the
    offered load refers to it)."""
    machines: int = 1
    """Identical machines sharing ``capacity`` (1: DeepRM's single pool); a job must fit on one."""
    units: tuple[str, ...] = ()
    """Unit of each resource (e.g. ``"slot"``, ``"core"``); empty means unitless."""
    time_step_seconds: float | None = None
    """Seconds per time step (None for synthetic workloads defined in steps)."""
    arrival_window: int | None = None
    """Steps over which arrivals are generated (the span used for the offered load)."""
    length_buckets: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Named inclusive duration ranges for per-length breakdowns, e.g. short=(1, 3)."""
    empty_jobsets: tuple[int, ...] = ()
    """Ids of jobsets that exist but hold no job (e.g. no arrival at 10% load); they count in
    the offered load's span."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Generator name, parameters and seed, or trace path, hash, filters and drop counts."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (tuples become lists)."""
        d = asdict(self)
        for key in ("resources", "capacity", "units", "empty_jobsets"):
            d[key] = list(d[key])
        d["length_buckets"] = {k: list(v) for k, v in self.length_buckets.items()}
        return {"kind": "jobset", "schema_version": SCHEMA_VERSION, **d}

    @classmethod
    def from_json(cls, d: Any, *, source: str = "JobSet metadata") -> JobSetMeta:
        """Inverse of :meth:`to_json`, checked field by field as strictly as ``model.json``:
        every error is a :class:`~schedlab.errors.JobSetError` naming ``source`` and the field
        (unknown fields, wrong types, non-positive sizes, unknown schema versions)."""
        doc = Table(d, "", source, error=JobSetError, allowed=META_FIELDS)
        version = doc.get("schema_version", int)
        if version != SCHEMA_VERSION:
            doc.fail("schema_version", f"{version} is not supported (expected {SCHEMA_VERSION})")
        resources = tuple(doc.strings("resources"))
        taken = [r for r in resources if r in ID_COLUMNS or r in OPTIONAL_COLUMNS]
        if not resources or not all(resources) or len(set(resources)) != len(resources) or taken:
            msg = f"expected distinct non-empty names of no job column, got {resources}"
            doc.fail("resources", msg)
        capacity = tuple(doc.numbers("capacity", positive=True))
        if len(capacity) != len(resources):
            doc.fail("capacity", f"one capacity per resource {list(resources)}, got {capacity}")
        units = tuple(doc.strings("units", default=[]))
        if units and len(units) != len(resources):
            doc.fail("units", f"one unit per resource {list(resources)}, got {list(units)}")
        machines = doc.get("machines", int, 1)
        if machines < 1:
            doc.fail("machines", f"must be >= 1, got {machines}")
        step = doc.get("time_step_seconds", float, None)
        if step is not None and step <= 0:
            doc.fail("time_step_seconds", f"must be > 0 seconds, got {step}")
        window = doc.get("arrival_window", int, None)
        if window is not None and window < 1:
            doc.fail("arrival_window", f"must be >= 1 step, got {window}")
        buckets = doc.sub("length_buckets")
        for name in buckets.data:
            lo_hi = buckets.integers(name, minimum=0)
            if len(lo_hi) != 2 or lo_hi[0] > lo_hi[1]:
                buckets.fail(name, f"expected [low, high] steps with low <= high, got {lo_hi}")
        return cls(
            resources=resources,
            capacity=capacity,
            machines=machines,
            units=units,
            time_step_seconds=step,
            arrival_window=window,
            empty_jobsets=tuple(doc.integers("empty_jobsets", default=[], minimum=0)),
            length_buckets={k: (v[0], v[1]) for k, v in buckets.data.items()},
            provenance=doc.get("provenance", dict, {}),
        )


META_FIELDS = ("kind", "schema_version", *(f.name for f in fields(JobSetMeta)))
"""The keys of a JobSet's metadata document."""


@dataclass(frozen=True, slots=True)
class JobSet:
    """Jobs of one or many jobsets plus metadata; construct with :meth:`create` to validate."""

    jobs: pl.DataFrame
    meta: JobSetMeta

    @classmethod
    def create(cls, jobs: pl.DataFrame, meta: JobSetMeta) -> JobSet:
        """Validate, cast to the schema and sort by (jobset, arrival, job_id)."""
        jobs = validate(jobs, meta)
        if not _is_sorted(jobs):  # loaders usually hand over sorted rows: skip the copy
            jobs = jobs.sort("jobset", "arrival", "job_id", maintain_order=True)
        return cls(jobs, meta)

    @property
    def resources(self) -> tuple[str, ...]:
        """Resource names."""
        return self.meta.resources

    @property
    def capacity(self) -> np.ndarray:
        """Capacity of the whole cluster per resource, shape ``(d,)``."""
        return np.asarray(self.meta.capacity, dtype=np.float64)

    @property
    def machine_capacity(self) -> np.ndarray:
        """Capacity of one of its ``meta.machines`` machines, shape ``(d,)``."""
        return self.capacity / self.meta.machines

    @property
    def jobset_ids(self) -> list[int]:
        """Distinct jobset ids, sorted."""
        return self.jobs.get_column("jobset").unique().sort().to_list()

    def __len__(self) -> int:
        return self.jobs.height

    def demands(self) -> np.ndarray:
        """Demand matrix, shape ``(n_jobs, d)``, in the order of :attr:`jobs`."""
        return self.jobs.select(self.resources).to_numpy().astype(np.float64, copy=False)

    def to_pandas(self) -> pd.DataFrame:
        """The jobs table as a pandas DataFrame."""
        return self.jobs.to_pandas()

    def _repr_html_(self) -> str:
        m = self.meta
        source = m.provenance.get("generator") or m.provenance.get("path") or "unknown"
        facts = [
            f"{self.jobs.height:,} jobs in {len(self.jobset_ids)} jobsets; source: {source}",
            "resources (capacity): "
            + ", ".join(f"{r} ({c:g})" for r, c in zip(m.resources, m.capacity, strict=True)),
        ]
        return html_preview("JobSet", facts, self.jobs)

    def split(self) -> Iterator[tuple[int, pl.DataFrame]]:
        """Yield ``(jobset_id, jobs)`` per jobset."""
        for (key,), frame in self.jobs.partition_by("jobset", as_dict=True).items():
            yield int(key), frame

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write atomically to ``path`` with metadata in the file."""
        io.write_parquet(self.jobs, path, self.meta.to_json())

    @classmethod
    def read_parquet(cls, path: str | os.PathLike[str]) -> JobSet:
        """Read and validate a JobSet Parquet file (its metadata and its rows)."""
        df, meta = io.read_parquet(path, "jobset")
        checked = JobSetMeta.from_json(meta, source=f"{path} (metadata)")
        try:
            return cls.create(df, checked)
        except JobSetError as exc:
            msg = f"{path}: {exc}"
            raise type(exc)(msg) from exc


def _is_sorted(jobs: pl.DataFrame) -> bool:
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


def offered_load(jobset: JobSet, *, per_jobset: bool = False) -> pl.DataFrame:
    """Offered load (design.md §3): per resource, Σ demand·duration / (capacity · span).

    The span is ``meta.arrival_window`` when set, else ``max(arrival) - min(arrival) + 1`` of each
    jobset. The load is the maximum over resources. Pooled, the empty jobsets of
    ``meta.empty_jobsets`` add their ``arrival_window`` to the span (they offered no work).

    Parameters
    ----------
    per_jobset
        If True, one row per jobset; otherwise one row pooled over all jobsets (total work over
        total capacity·span, which is what a target load is compared with).

    Returns
    -------
    pl.DataFrame
        Columns ``load_<resource>`` and ``load`` (and ``jobset`` if per_jobset).
    """
    res, cap = jobset.resources, jobset.meta.capacity
    window = jobset.meta.arrival_window
    span = (
        pl.lit(window, dtype=pl.Int64)
        if window is not None
        else pl.col("arrival").max() - pl.col("arrival").min() + 1
    )
    per = jobset.jobs.group_by("jobset").agg(
        span.alias("span"), *[(pl.col(r) * pl.col("duration")).sum().alias(r) for r in res]
    )
    if not per_jobset:
        idle = (window or 0) * len(jobset.meta.empty_jobsets)
        per = per.select(pl.col("span").sum() + idle, *[pl.col(r).sum() for r in res])
    loads = [
        (pl.col(r) / (c * pl.col("span"))).alias(f"load_{r}") for r, c in zip(res, cap, strict=True)
    ]
    out = per.with_columns(loads).with_columns(
        pl.max_horizontal([f"load_{r}" for r in res]).alias("load")
    )
    keep = (["jobset"] if per_jobset else []) + [f"load_{r}" for r in res] + ["load"]
    return out.select(keep).sort(keep[0]) if per_jobset else out.select(keep)
