"""What the compiled engines take from a JobSet: writable arrays, the rows of each jobset, the
machine count, and an environment's default time limit.

Shared by the batched engine (:mod:`schedlab.simulator.cluster.batched`), the Gymnasium
environments and :mod:`schedlab.simulator.run`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.config import ClusterConfig


def writable(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous writable array (a copy only if needed): compiled scores and
    placement rules take plain (not read-only) arrays, and Arrow-backed columns may be read-only."""
    return np.require(a, requirements=["C", "W"])


def jobset_bounds(jobset_col: np.ndarray) -> np.ndarray:
    """Row offsets of each contiguous jobset, int64, shape ``(k + 1,)``."""
    change = np.flatnonzero(np.diff(jobset_col)) + 1
    return np.concatenate([[0], change, [jobset_col.size]]).astype(np.int64)


def resolve_machines(config: ClusterConfig, jobset: JobSet) -> ClusterConfig:
    """``config`` with its machine count set (the JobSet's unless ``config`` names one)."""
    return replace(config, machines=config.n_machines(jobset.meta.machines))


def default_time_limit(
    arrival: np.ndarray, duration: np.ndarray, lo: np.ndarray, hi: np.ndarray, horizon: int
) -> np.ndarray:
    """Per env: last arrival + Σ duration + T (slower than running the jobs one at a time)."""
    csum = np.concatenate([[0], np.cumsum(duration)])
    last = np.where(hi > lo, arrival[np.maximum(hi - 1, 0)] if arrival.size else 0, 0)
    result: np.ndarray = (last + csum[hi] - csum[lo] + horizon).astype(np.int64)
    return result
