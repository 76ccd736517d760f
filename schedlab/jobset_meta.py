"""The JobSet's columns (their names and types) and its metadata (:class:`JobSetMeta`):
what :mod:`schedlab.jobset` stores and :mod:`schedlab.jobset_checks` validates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab.errors import JobSetError
from schedlab.timebounds import MAX_TIME
from schedlab.validate import Table

if TYPE_CHECKING:
    pass

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
