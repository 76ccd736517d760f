"""Views of the multi-cluster model: structured state for the baselines, Liu's state for RL.

* :class:`ClusterQueueView` (``"cluster-queue"``): per env the clusters' current capacity and
  average occupation ratio over a past window, and the buffered jobs' most likely requests per
  cluster and worker requests (§5) — what RAN, RR and MAF read.
* :class:`LiuStateView` (``"liu-state"``): Table 1 of Liu et al. (ICPP'20) per (env, buffered
  job). The cluster part is per env (the outer iterator of §4.4 pairs it with each buffered job):
  the raw occupation history (``history`` steps, 105) and 5 values per cluster; the job part is
  ``4 + 12·C`` values. :meth:`LiuState.vector` lays them out as Table 1 (839 values for 5
  clusters: per cluster its sequence number, normal capacity, maximum capacity, heterogeneity
  factor, the history traversed into 10 overlapping segments of 15 steps (Figure 4), missed
  deadlines so far; then the job's category, expected heterogeneity factor, sensitivity, request
  distribution (10 × C), standard execution time (× C: the same value, the paper's model gets no
  per-cluster execution time), deadline per cluster and duration).

Values are scaled to order one (:data:`SCALE`); a general job's deadlines are ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.simulator.multicluster.jobs import NO_DEADLINE, ClusterJobs
from schedlab.simulator.multicluster.model import MultiClusterSnapshot

SEGMENT, STRIDE = 15, 10
"""Occupation history traverse (Figure 4): segments of 15 steps starting every 10 steps."""
CLUSTER_FEATURES = 5
"""Per cluster besides the history: sequence number, normal and maximum capacity,
heterogeneity factor, missed deadlines so far."""
SCALE = {
    "sequence": "(i + 1) / C",
    "capacity": 1000.0,
    "hetero": 100.0,
    "misses": 100.0,
    "category": 3.0,
    "sensitivity": 5.0,
    "requests": 1000.0,
    "time": 100.0,
    "duration": 1000.0,
}
"""Divisors of the raw values (executors, steps, factors, counts) in Liu's state."""


def job_features(n_clusters: int) -> int:
    """Values of the job part of Liu's state: ``4 + 12·C`` (64 for 5 clusters)."""
    return 4 + 12 * n_clusters


def segments(history_steps: int) -> int:
    """Segments of the traverse of ``history_steps`` (10 for 105)."""
    if history_steps < SEGMENT or (history_steps - SEGMENT) % STRIDE:
        msg = f"history must be 15 + 10·k steps for the traverse, got {history_steps}"
        raise ValueError(msg)
    return (history_steps - SEGMENT) // STRIDE + 1


def state_size(n_clusters: int, history_steps: int = 105) -> int:
    """Length of Liu's state vector (Table 1): 839 for 5 clusters and 105 steps."""
    per_cluster = CLUSTER_FEATURES - 1 + segments(history_steps) * SEGMENT + 1
    return n_clusters * per_cluster + job_features(n_clusters)


def traverse(history: np.ndarray) -> np.ndarray:
    """Figure 4: ``(..., H)`` -> ``(..., n_segments, 15)``, segment ``s`` = steps
    ``10·s .. 10·s + 14`` (oldest first)."""
    n = segments(history.shape[-1])
    windows = np.lib.stride_tricks.sliding_window_view(history, SEGMENT, axis=-1)
    return windows[..., : STRIDE * n : STRIDE, :]


@dataclass(frozen=True, slots=True)
class QueueObs:
    """Structured state of ``n`` envs for the baselines (``C`` clusters, ``M`` positions)."""

    envs: np.ndarray
    """int64, ``(n,)``: env ids."""
    jobset: np.ndarray
    """int64, ``(n,)``: jobset id of each env."""
    capacity: np.ndarray
    """float64, ``(n, C)``: current capacity (executors, elastic expansion included)."""
    occupation: np.ndarray
    """float64, ``(n, C)``: mean occupation ratio over the view's window (moments >= 0)."""
    visible: np.ndarray
    """int64, ``(n, M)``: job row per buffer position (-1: empty)."""
    usual: np.ndarray
    """int64, ``(n, M, C)``: most likely request per cluster (0 where empty)."""
    worker: np.ndarray
    """float64, ``(n, M)``: worker request = mean of ``usual`` over clusters (inf where empty)."""

    @property
    def slots(self) -> int:
        """M."""
        return int(self.visible.shape[1])


@dataclass(frozen=True, slots=True)
class ClusterQueueView:
    """Structured state for the baselines (see the module docstring)."""

    name: ClassVar[str] = "cluster-queue"
    window: int = 100
    """Past moments averaged into the occupation ratio (below the model's history, 105)."""

    def observe(self, snapshot: MultiClusterSnapshot) -> QueueObs:
        """The baselines' state of ``snapshot.envs``."""
        e = snapshot.envs
        visible = snapshot.visible[e]
        filled = visible >= 0
        usual = np.where(filled[:, :, None], snapshot.jobs.usual[np.maximum(visible, 0)], 0)
        return QueueObs(
            envs=e,
            jobset=snapshot.jobs.jobset_ids[e],
            capacity=snapshot.capacity[e].astype(np.float64),
            occupation=snapshot.mean_occupation(self.window),
            visible=visible,
            usual=usual,
            worker=np.where(filled, usual.mean(axis=2), np.inf),
        )


@dataclass(frozen=True, slots=True)
class LiuState:
    """Liu's state of ``n`` envs and their ``M`` buffer positions (float32, scaled)."""

    envs: np.ndarray
    """int64, ``(n,)``."""
    history: np.ndarray
    """``(n, C, H)``: occupation ratio of the last ``H`` moments, oldest first."""
    clusters: np.ndarray
    """``(n, C, 5)``: sequence number, normal capacity, maximum capacity, heterogeneity
    factor, missed deadlines so far."""
    jobs: np.ndarray
    """``(n, M, 4 + 12·C)``: the job part of each buffer position (zeros where empty)."""
    valid: np.ndarray
    """bool, ``(n, M)``: the position holds a job."""
    rows: np.ndarray
    """int64, ``(n, M)``: job row in each position (-1: empty)."""

    def vector(self) -> np.ndarray:
        """Table 1 layout, float32 ``(n, M, state_size)`` (839 for 5 clusters)."""
        n, c = self.clusters.shape[:2]
        seg = traverse(self.history).reshape(n, c, -1)
        per_cluster = np.concatenate(
            [self.clusters[:, :, :4], seg, self.clusters[:, :, 4:]], axis=2
        ).reshape(n, 1, -1)
        m = self.jobs.shape[1]
        return np.concatenate([np.repeat(per_cluster, m, axis=1), self.jobs], axis=2)


@dataclass(frozen=True, slots=True)
class LiuStateView:
    """Liu's state (Table 1; see the module docstring)."""

    name: ClassVar[str] = "liu-state"

    def observe(self, snapshot: MultiClusterSnapshot) -> LiuState:
        """The state of every buffered visible job of ``snapshot.envs``."""
        e, cfg, jobs = snapshot.envs, snapshot.config, snapshot.jobs
        c = cfg.n_clusters
        static = np.stack(
            [
                (np.arange(c) + 1) / c,
                np.asarray(cfg.capacities) / SCALE["capacity"],
                cfg.max_capacities() / SCALE["capacity"],
                np.asarray(cfg.hetero) / SCALE["hetero"],
            ],
            axis=1,
        )
        misses = snapshot.misses[e][:, :, None] / SCALE["misses"]
        clusters = np.concatenate([np.broadcast_to(static, (e.size, c, 4)), misses], axis=2)
        visible = snapshot.visible[e]
        valid = visible >= 0
        per_job = job_vectors(jobs, np.maximum(visible, 0).ravel()).reshape(*visible.shape, -1)
        return LiuState(
            envs=e,
            history=snapshot.history(cfg.history),
            clusters=clusters.astype(np.float32),
            jobs=np.where(valid[:, :, None], per_job, 0).astype(np.float32),
            valid=valid,
            rows=visible,
        )


def job_vectors(jobs: ClusterJobs, rows: np.ndarray) -> np.ndarray:
    """The job part of Liu's state for job ``rows``, float32 ``(n, 4 + 12·C)``."""
    c, deadline = jobs.n_clusters, jobs.deadline[rows]
    parts = [
        (jobs.category[rows, None] + 1) / SCALE["category"],
        jobs.hetero[rows, None] / SCALE["hetero"],
        jobs.sensitivity[rows, None] / SCALE["sensitivity"],
        jobs.requests[rows].reshape(rows.size, -1) / SCALE["requests"],
        np.repeat(jobs.standard_time[rows, None] / SCALE["time"], c, axis=1),
        np.where(deadline == NO_DEADLINE, -1.0, deadline / SCALE["time"]),
        jobs.duration[rows, None] / SCALE["duration"],
    ]
    return np.concatenate(parts, axis=1).astype(np.float32)
