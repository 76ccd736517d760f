"""Helpers of the multi-cluster tests: hand-made jobsets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from schedlab.jobset import JobSet, JobSetMeta


def jobset(rows: Sequence[dict[str, Any]], *, n_clusters: int = 2, jobset_id: int = 0) -> JobSet:
    """A JobSet of hand-made multi-cluster jobs.

    Each row gives ``arrival``, ``request`` (one int per cluster, or a ``(C, 10)`` nested list),
    and optionally ``category`` (``critical``), ``standard_time`` (10), ``executions`` (1),
    ``hetero`` (100), ``sensitivity`` (5), ``deadline`` (None = general job's), ``transfer``
    (zeros), ``jobset`` (``jobset_id``).
    """
    out = []
    for k, r in enumerate(rows):
        req = np.asarray(r["request"], dtype=np.int64)
        if req.ndim == 1:
            req = np.repeat(req[:, None], 10, axis=1)
        std, runs = r.get("standard_time", 10), r.get("executions", 1)
        out.append(
            {
                "jobset": r.get("jobset", jobset_id),
                "job_id": k,
                "arrival": r["arrival"],
                "duration": std * runs,
                "executors": float(req.mean()),
                "category": r.get("category", "critical"),
                "deadline": r.get("deadline"),
                "standard_time": std,
                "executions": runs,
                "hetero": r.get("hetero", 100),
                "sensitivity": r.get("sensitivity", 5),
                "requests": req.tolist(),
                "transfer": list(r.get("transfer", [0] * n_clusters)),
            }
        )
    df = pl.DataFrame(
        out,
        schema_overrides={
            "deadline": pl.Int64,
            "requests": pl.Array(pl.Int64, (n_clusters, 10)),
            "transfer": pl.Array(pl.Int64, n_clusters),
        },
    )
    meta = JobSetMeta(resources=("executors",), capacity=(1e6,), provenance={"seed": 0})
    return JobSet.create(df, meta)
