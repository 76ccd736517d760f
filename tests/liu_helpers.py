"""Helpers of the multi-cluster tests: hand-made jobsets and the Liu registry names."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.registry import Entry, generators, policies

LIU_GENERATORS = {
    "liu-multicluster": "schedlab.loaders.generators.liu_multicluster:LiuMultiClusterGenerator",
}
LIU_POLICIES = {
    "liu-ran": ("schedlab.policies.liu_baselines:RAN", None),
    "liu-rr": ("schedlab.policies.liu_baselines:RR", None),
    "liu-maf": ("schedlab.policies.liu_baselines:MAF", None),
    "liu-rl": ("schedlab.policies.liu_networks:LiuValuePolicy", "checkpoint"),
}
"""The registry lines the lead adds (model kind ``multicluster``); tests add them if absent."""


@pytest.fixture
def liu_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Register Liu's generator and policies for one test (a no-op once they are registered)."""
    for name, target in LIU_GENERATORS.items():
        if name not in generators:
            monkeypatch.setitem(generators._entries, name, Entry(name=name, target=target))
    for name, (target, positional) in LIU_POLICIES.items():
        if name not in policies:
            entry = Entry(name=name, target=target, positional=positional)
            monkeypatch.setitem(policies._entries, name, entry)
    return


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
