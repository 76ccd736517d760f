"""Liu et al.'s per-episode outcomes of the multi-cluster model (ICPP'20, §5), defined once for
training (validation) and evaluation (:mod:`schedlab.evaluation.multicluster`).

* **TMDL**: total missed deadlines of all executions of the episode's jobs (lower is better);
* **AJER**: ``100 · mean_j`` of a job's execution-time ratio (``exec_ratio``: time on its cluster
  over its standard time; lower is better);
* **S_log** ``= sign(S) · log10(max(|S|, 1))`` with ``S = −TMDL + 50 · (100 − AJER)``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

WEIGHT = 50.0
"""Weight of the AJER term in S (§5)."""

TMDL = pl.col("missed").sum().cast(pl.Float64).alias("tmdl")
"""TMDL of a group of per-job results (float64)."""
AJER = (100.0 * pl.col("exec_ratio").mean()).alias("ajer")
"""AJER of a group of per-job results (float64, percent)."""


def s_log(tmdl: np.ndarray | float, ajer: np.ndarray | float) -> np.ndarray:
    """``sign(S) · log10(max(|S|, 1))``, ``S = −TMDL + 50 · (100 − AJER)`` (float64)."""
    s = -np.asarray(tmdl, dtype=np.float64) + WEIGHT * (100.0 - np.asarray(ajer, np.float64))
    return np.sign(s) * np.log10(np.maximum(np.abs(s), 1.0))


def mean_scores(table: pl.DataFrame) -> dict[str, float]:
    """Mean TMDL, AJER and S_log over the episodes (``jobset``) of per-job results ``table``."""
    per = table.group_by("jobset").agg(TMDL, AJER)
    tmdl, ajer = per.get_column("tmdl").to_numpy(), per.get_column("ajer").to_numpy()
    return {
        "tmdl": float(tmdl.mean()),
        "ajer": float(ajer.mean()),
        "s_log": float(s_log(tmdl, ajer).mean()),
    }
