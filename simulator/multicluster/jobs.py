"""A JobSet of Liu's hybrid workload as the multi-cluster model's job arrays (ICPP'20, §4.2).

Execution time on cluster ``c`` (§4.2): a job with expected heterogeneity factor ``h``,
sensitivity ``sen`` and standard time ``SR`` runs each execution for
``max(1, round(SR · h / clamp(η_c, h − ζ·sen, h + ζ·sen)))`` steps (half up): proportional to
``h / η_c`` inside its range ``R``, no further gain (or loss) outside it. Its deadline there is
``deadline − transfer[c]`` (no deadline for general jobs). Every execution of a streaming job
draws its request from the cluster's 10-entry distribution; the draws (entry indices) are made
here, once per jobset, so every policy sees the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from schedlab.errors import InfeasibleJobError, JobSetError
from schedlab.jobset import JobSet
from schedlab.loaders.generators.liu_multicluster import CATEGORIES, ENTRIES
from schedlab.simulator.multicluster.config import MultiClusterConfig

COLUMNS = (
    "category",
    "deadline",
    "standard_time",
    "executions",
    "hetero",
    "sensitivity",
    "requests",
    "transfer",
)
"""Job columns the model needs besides the JobSet's required ones
(:mod:`schedlab.loaders.generators.liu_multicluster`)."""
NO_DEADLINE = -1
"""Deadline value of general jobs."""


@dataclass(frozen=True, slots=True)
class ClusterJobs:
    """Jobs of ``B`` episodes (one per jobset), rows in JobSet order; ``N`` jobs, ``C`` clusters,
    ``E`` executions. Times are in steps, requests in executors."""

    jobset_ids: np.ndarray
    """int64, ``(B,)``: jobset id of each env."""
    bounds: np.ndarray
    """int64, ``(B + 1,)``: rows of env ``b`` are ``bounds[b]:bounds[b + 1]``."""
    arrival: np.ndarray
    """int64, ``(N,)``."""
    category: np.ndarray
    """int64, ``(N,)``: index into :data:`CATEGORIES` (0 streaming, 1 critical, 2 general)."""
    executions: np.ndarray
    """int64, ``(N,)``: executions of each job."""
    standard_time: np.ndarray
    """int64, ``(N,)``: SR, steps per execution at the expected heterogeneity factor."""
    hetero: np.ndarray
    """int64, ``(N,)``: expected heterogeneity factor ``h``."""
    sensitivity: np.ndarray
    """int64, ``(N,)``: ``sen``."""
    duration: np.ndarray
    """int64, ``(N,)``: total standard run time, ``executions · SR``."""
    requests: np.ndarray
    """int64, ``(N, C, 10)``: request distribution per cluster."""
    usual: np.ndarray
    """int64, ``(N, C)``: the most likely request per cluster (smallest on ties)."""
    exec_time: np.ndarray
    """int64, ``(N, C)``: steps of one execution on each cluster."""
    deadline: np.ndarray
    """int64, ``(N, C)``: per-execution deadline on each cluster (``-1``: none)."""
    exec_bounds: np.ndarray
    """int64, ``(N + 1,)``: executions of job ``j`` are ``exec_bounds[j]:exec_bounds[j + 1]``."""
    draws: np.ndarray
    """int64, ``(E,)``: entry of the request distribution each execution requests."""

    @property
    def n_clusters(self) -> int:
        """C."""
        return int(self.requests.shape[1])

    def worker_request(self) -> np.ndarray:
        """float64, ``(N,)``: mean over clusters of the most likely request (§5)."""
        result: np.ndarray = self.usual.mean(axis=1)
        return result

    @classmethod
    def from_jobset(cls, jobset: JobSet, config: MultiClusterConfig) -> ClusterJobs:
        """Check ``jobset`` against ``config``'s clusters and derive the arrays.

        Raises
        ------
        JobSetError
            A column is missing or has the wrong number of clusters.
        InfeasibleJobError
            A request exceeds its cluster's normal capacity (it could never start there).
        """
        jobs = jobset.jobs
        if jobs.height == 0:
            msg = "the multi-cluster model needs at least one job; the JobSet is empty"
            raise JobSetError(msg)
        missing = [c for c in COLUMNS if c not in jobs.columns]
        if missing:
            msg = (
                f"the multi-cluster model needs job columns {missing} (generate with "
                f"`liu-multicluster`); have {jobs.columns}"
            )
            raise JobSetError(msg)
        c = config.n_clusters
        requests = np.asarray(jobs.get_column("requests").to_numpy(), dtype=np.int64)
        transfer = np.asarray(jobs.get_column("transfer").to_numpy(), dtype=np.int64)
        if requests.shape[1:] != (c, ENTRIES) or transfer.shape[1:] != (c,):
            msg = (
                f"jobs were made for {requests.shape[1]} clusters (requests {requests.shape[1:]}, "
                f"transfer {transfer.shape[1:]}) but the model has {c}: {config.capacities}"
            )
            raise JobSetError(msg)
        _check_requests(jobs, requests, config)
        category = _categories(jobs)
        arr = {k: jobs.get_column(k).to_numpy().astype(np.int64) for k in COLUMNS[2:6]}
        if np.any(arr["executions"] < 1) or np.any(arr["standard_time"] < 1):
            msg = "columns 'executions' and 'standard_time' must be >= 1"
            raise JobSetError(msg)
        deadline = jobs.get_column("deadline").fill_null(NO_DEADLINE).to_numpy().astype(np.int64)
        ids = jobs.get_column("jobset").to_numpy().astype(np.int64)
        bounds = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True]).astype(np.int64)
        exec_bounds = np.r_[0, np.cumsum(arr["executions"])].astype(np.int64)
        return cls(
            jobset_ids=ids[bounds[:-1]],
            bounds=bounds,
            arrival=jobs.get_column("arrival").to_numpy().astype(np.int64),
            category=category,
            executions=arr["executions"],
            standard_time=arr["standard_time"],
            hetero=arr["hetero"],
            sensitivity=arr["sensitivity"],
            duration=jobs.get_column("duration").to_numpy().astype(np.int64),
            requests=requests,
            usual=most_likely(requests),
            exec_time=execution_times(
                arr["standard_time"], arr["hetero"], arr["sensitivity"], config
            ),
            deadline=np.where(
                deadline[:, None] == NO_DEADLINE, NO_DEADLINE, deadline[:, None] - transfer
            ),
            exec_bounds=exec_bounds,
            draws=_draws(ids[bounds[:-1]], bounds, exec_bounds, config.seed),
        )


def execution_times(
    standard_time: np.ndarray,
    hetero: np.ndarray,
    sensitivity: np.ndarray,
    config: MultiClusterConfig,
) -> np.ndarray:
    """Steps of one execution per job and cluster, int64 ``(N, C)`` (module docstring)."""
    eta = np.asarray(config.hetero, dtype=np.float64)[None, :]
    h = hetero.astype(np.float64)[:, None]
    reach = (config.zeta * sensitivity).astype(np.float64)[:, None]
    effective = np.clip(eta, h - reach, h + reach)
    return np.maximum(1, np.floor(standard_time[:, None] * h / effective + 0.5)).astype(np.int64)


def most_likely(requests: np.ndarray) -> np.ndarray:
    """The most frequent entry along the last axis (smallest on ties), int64."""
    counts = (requests[..., :, None] == requests[..., None, :]).sum(axis=-1)
    best = counts.max(axis=-1, keepdims=True)
    result: np.ndarray = np.where(counts == best, requests, np.iinfo(np.int64).max).min(axis=-1)
    return result


def _categories(jobs: pl.DataFrame) -> np.ndarray:
    col = jobs.get_column("category")
    bad = col.filter(~col.is_in(list(CATEGORIES)) | col.is_null())
    if bad.len():
        msg = f"column 'category' value {bad[0]!r} is not one of {list(CATEGORIES)}"
        raise JobSetError(msg)
    return col.replace_strict(list(CATEGORIES), list(range(3)), return_dtype=pl.Int64).to_numpy()


def _check_requests(jobs: pl.DataFrame, requests: np.ndarray, config: MultiClusterConfig) -> None:
    caps = np.asarray(config.capacities, dtype=np.int64)
    over = (requests > caps[None, :, None]) | (requests < 1)
    if over.any():
        row, cluster, entry = (int(x) for x in np.argwhere(over)[0])
        value = int(requests[row, cluster, entry])
        where = f"row {row} (jobset {jobs['jobset'][row]}, job_id {jobs['job_id'][row]})"
        msg = (
            f"job at {where} requests {value} executors on cluster {cluster} (entry {entry}) "
            f"but requests must be in 1..{int(caps[cluster])}, its normal capacity"
        )
        raise InfeasibleJobError(msg)


def _draws(
    jobset_ids: np.ndarray, bounds: np.ndarray, exec_bounds: np.ndarray, seed: int
) -> np.ndarray:
    """Entry index of every execution: ``default_rng([seed, jobset])`` per jobset."""
    out = np.empty(int(exec_bounds[-1]), dtype=np.int64)
    for b, jid in enumerate(jobset_ids):
        lo, hi = exec_bounds[bounds[b]], exec_bounds[bounds[b + 1]]
        out[lo:hi] = np.random.default_rng([seed, int(jid)]).integers(0, ENTRIES, hi - lo)
    return out
