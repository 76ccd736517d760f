"""The JobSet: the common workload format (design.md §2).

A JobSet is a polars DataFrame of jobs (one row per job, many jobsets distinguished by the
``jobset`` column) plus :class:`JobSetMeta`. It is stored as one Parquet file whose key-value
metadata holds the JSON of the metadata, so a file is self-describing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from schedlab import io
from schedlab.errors import JobSetError
from schedlab.frames import html_preview

if TYPE_CHECKING:
    import pandas as pd

from schedlab.jobset_checks import is_sorted, validate
from schedlab.jobset_meta import (
    ID_COLUMNS,
    MAX_SPAN,
    META_FIELDS,
    OPTIONAL_COLUMNS,
    SCHEMA_VERSION,
    SECONDS_COLUMNS,
    JobSetMeta,
)

__all__ = [
    "ID_COLUMNS",
    "MAX_SPAN",
    "META_FIELDS",
    "OPTIONAL_COLUMNS",
    "SCHEMA_VERSION",
    "SECONDS_COLUMNS",
    "JobSet",
    "JobSetMeta",
    "offered_load",
    "validate",
]


@dataclass(frozen=True, slots=True)
class JobSet:
    """Jobs of one or many jobsets plus metadata; construct with :meth:`create` to validate."""

    jobs: pl.DataFrame
    meta: JobSetMeta

    @classmethod
    def create(cls, jobs: pl.DataFrame, meta: JobSetMeta) -> JobSet:
        """Validate, cast to the schema and sort by (jobset, arrival, job_id)."""
        jobs = validate(jobs, meta)
        if not is_sorted(jobs):  # loaders usually hand over sorted rows: skip the copy
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
