"""Liu et al.'s heterogeneous, elastic multi-cluster as a batched :class:`Model` (ICPP'20).

``B`` environments (one per jobset) advance together through :func:`kernels.advance`
(the semantics of a moment are in :mod:`schedlab.simulator.multicluster.kernels`). A decision
exists at every moment where the global buffer holds a job; the model stops there and waits for
one action per env:

* ``a = 1 + i·M + q`` dispatches the job in buffer position ``q`` (arrival order, the first
  ``M = config.slots`` are selectable) to cluster ``i`` — the cluster model's convention with
  clusters for machines;
* ``a = 0`` (void) dispatches nothing at this moment: the jobs stay buffered and time advances.
  Liu's global scheduler always dispatches (its actions are the clusters); void exists for the
  common protocol, and no policy here uses it.

Each step returns ``−(missed deadlines during the moments it simulated)``, so an episode's
return is ``−TMDL`` (Liu's learner uses after-the-fact action values instead:
:mod:`schedlab.simulator.multicluster.values`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import SimulationError
from schedlab.jobset import JobSet
from schedlab.simulator.model import Placements, View
from schedlab.simulator.multicluster import kernels as k
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.jobs import ClusterJobs


@dataclass(frozen=True, slots=True)
class MultiClusterSnapshot:
    """What views may read of ``n`` environments (arrays are the model's own: read only)."""

    envs: np.ndarray
    """int64, ``(n,)``: the env ids observed."""
    now: np.ndarray
    """int64, ``(B,)``: current moment of every env."""
    capacity: np.ndarray
    """int64, ``(B, C)``: current capacity (elastic expansion included)."""
    used: np.ndarray
    """int64, ``(B, C)``: executors in use."""
    misses: np.ndarray
    """int64, ``(B, C)``: missed deadlines so far per cluster."""
    ring: np.ndarray
    """float32, ``(B, C, L)``: occupation ratio of moment ``t`` at ``t % L`` (moments < now)."""
    cumulative: np.ndarray
    """float64, ``(B, C, L)``: the ratio summed over moments ``0..t``, at ``t % L``."""
    visible: np.ndarray
    """int64, ``(B, M)``: job row in buffer position ``q`` (-1: empty)."""
    buffered: np.ndarray
    """int64, ``(B,)``: jobs in the global buffer (visible or not)."""
    jobs: ClusterJobs
    """The job arrays (shared by every env)."""
    config: MultiClusterConfig
    """The clusters."""

    def history(self, steps: int) -> np.ndarray:
        """Occupation ratio of the ``steps`` moments before now, oldest first; moments before
        the episode began are 0. float32, shape ``(n, C, steps)``."""
        if steps > self.ring.shape[2]:
            msg = f"history of {steps} steps asked, the model keeps {self.ring.shape[2]}"
            raise ValueError(msg)
        t = self.now[self.envs][:, None] - steps + np.arange(steps)[None, :]
        out = self.ring[
            self.envs[:, None, None],
            np.arange(self.ring.shape[1])[None, :, None],
            (t % self.ring.shape[2])[:, None, :],
        ]
        return np.where(t[:, None, :] >= 0, out, np.float32(0))

    def mean_occupation(self, window: int) -> np.ndarray:
        """Mean occupation ratio over the last ``min(window, now)`` moments (0 at moment 0),
        float64, shape ``(n, C)``; ``window`` must be below the ring's length."""
        size = self.cumulative.shape[2]
        if not 1 <= window < size:
            msg = f"window of {window} moments asked, the model averages up to {size - 1}"
            raise ValueError(msg)
        t = self.now[self.envs]
        e, c = self.envs[:, None], np.arange(self.cumulative.shape[1])[None, :]
        last = np.where(t[:, None] >= 1, self.cumulative[e, c, ((t - 1) % size)[:, None]], 0.0)
        back = t - 1 - window
        first = np.where(back[:, None] >= 0, self.cumulative[e, c, (back % size)[:, None]], 0.0)
        result: np.ndarray = (last - first) / np.maximum(np.minimum(t, window), 1)[:, None]
        return result


@dataclass(frozen=True, slots=True)
class ExecutionLog:
    """Every execution of every job (``E`` rows, job-major in row order); steps, executors."""

    job: np.ndarray
    """int64, ``(E,)``: job row."""
    cluster: np.ndarray
    """int64, ``(E,)``."""
    request_time: np.ndarray
    """int64, ``(E,)``: when it asked for executors."""
    start: np.ndarray
    """int64, ``(E,)``."""
    finish: np.ndarray
    """int64, ``(E,)``."""
    executors: np.ndarray
    """int64, ``(E,)``: executors it held."""
    missed: np.ndarray
    """bool, ``(E,)``: ``finish − request_time`` exceeded the cluster's deadline."""

    @property
    def waited(self) -> np.ndarray:
        """bool, ``(E,)``: it halted before starting (resource waiting at its beginning)."""
        return self.start > self.request_time


class MultiClusterModel:
    """``B`` episodes of the multi-cluster (see the module docstring)."""

    kind: ClassVar[str] = "multicluster"

    def __init__(self, jobs: ClusterJobs, config: MultiClusterConfig) -> None:
        self.jobs = jobs
        self.config = config
        b, c = jobs.bounds.size - 1, jobs.n_clusters
        per_env = int(np.diff(jobs.bounds).max())
        self._env = np.zeros((b, 8), dtype=np.int64)
        self._job = np.zeros((jobs.arrival.size, 7), dtype=np.int64)
        self._cl = np.zeros((b, c, 7), dtype=np.int64)
        self._ex = np.zeros((jobs.draws.size, 3), dtype=np.int64)
        self._buf = np.zeros((b, max(per_env, config.slots)), dtype=np.int64)
        self._act = np.zeros((b, per_env), dtype=np.int64)
        self._ring = np.zeros((b, c, config.history), dtype=np.float32)
        self._cum = np.zeros((b, c, config.history), dtype=np.float64)
        self._sums = np.zeros((b, c, 2), dtype=np.float64)
        self._limit = _time_limits(jobs)
        n_log = int(self._limit.max() // config.elastic_window + 2) if config.elastic else 0
        self._elog = np.zeros((b, c, n_log, 2), dtype=np.int64)
        self._elastic = config.elastic_mask()
        self._jobs = k.job_arrays(jobs)
        self.reset()

    @classmethod
    def from_jobset(
        cls, jobset: JobSet, config: MultiClusterConfig | None = None
    ) -> MultiClusterModel:
        """One env per jobset of ``jobset`` (in jobset order)."""
        config = config or MultiClusterConfig()
        return cls(ClusterJobs.from_jobset(jobset, config), config)

    # -- the Model protocol --------------------------------------------------------------------
    @property
    def n_envs(self) -> int:
        """B."""
        return int(self._env.shape[0])

    @property
    def n_actions(self) -> int:
        """``1 + C·M``."""
        return 1 + self.jobs.n_clusters * self.config.slots

    @property
    def done(self) -> np.ndarray:
        """bool, ``(B,)``: every job of the env has finished."""
        result: np.ndarray = self._env[:, k.DONE] == 1
        return result

    def _envs(self, envs: np.ndarray | None) -> np.ndarray:
        return np.arange(self.n_envs) if envs is None else np.asarray(envs, dtype=np.int64)

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` and run each to its first decision; returns ``−missed`` (0)."""
        e = self._envs(envs)
        j = self.jobs
        self._env[e] = 0
        self._env[e, k.NEXT] = j.bounds[e]
        self._env[e, k.LIMIT] = self._limit[e]
        self._cl[e] = 0
        self._cl[e, :, k.CAP] = np.asarray(self.config.capacities)
        self._cl[e, :, k.LAST_HIGH] = -self.config.elastic_window - 1
        self._cl[e, :, k.LAST_CHANGE] = -self.config.elastic_window
        self._ring[e] = 0
        self._cum[e] = 0
        self._sums[e] = 0
        for b in e:
            rows = slice(j.bounds[b], j.bounds[b + 1])
            self._job[rows] = -1
            self._job[rows, k.EXEC] = 0
            self._job[rows, k.RUNNING] = 0
            self._ex[j.exec_bounds[rows.start] : j.exec_bounds[rows.stop]] = -1
        return self._advance(e, np.zeros(e.size, dtype=np.int64), fresh=True)

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """One action per env (see the module docstring); returns ``−missed`` per env."""
        e = self._envs(envs)
        return self._advance(e, np.asarray(actions, dtype=np.int64), fresh=False)

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """bool, ``(n, 1 + C·M)``: void, and every cluster for each buffered visible job."""
        e = self._envs(envs)
        m = self.config.slots
        filled = np.arange(m)[None, :] < np.minimum(self._env[e, k.BUF_LEN], m)[:, None]
        filled &= ~self.done[e][:, None]
        mask = np.ones((e.size, self.n_actions), dtype=np.bool_)
        mask[:, 1:] = np.tile(filled, (1, self.jobs.n_clusters))
        return mask

    def snapshot(self, envs: np.ndarray | None = None) -> MultiClusterSnapshot:
        """The state views read."""
        m = self.config.slots
        visible = np.where(
            np.arange(m)[None, :] < self._env[:, k.BUF_LEN, None], self._buf[:, :m], -1
        )
        return MultiClusterSnapshot(
            envs=self._envs(envs),
            now=self._env[:, k.NOW],
            capacity=self._cl[:, :, k.CAP],
            used=self._cl[:, :, k.USED],
            misses=self._cl[:, :, k.MISSES],
            ring=self._ring,
            cumulative=self._cum,
            visible=visible,
            buffered=self._env[:, k.BUF_LEN],
            jobs=self.jobs,
            config=self.config,
        )

    def observe(self, view: View[MultiClusterSnapshot], envs: np.ndarray | None = None) -> Any:
        """What ``view`` shows of ``envs``."""
        return view.observe(self.snapshot(envs))

    def placements(self) -> Placements:
        """Per job row: first start, last finish and cluster (valid once ``done``)."""
        j, ex = self.jobs, self._ex
        return Placements(
            start=ex[j.exec_bounds[:-1], k.E_START].copy(),
            finish=ex[j.exec_bounds[1:] - 1, k.E_FINISH].copy(),
            target=self._job[:, k.CLUSTER].copy(),
        )

    # -- what the episode produced ---------------------------------------------------------
    def dispatch_times(self) -> np.ndarray:
        """int64, ``(N,)``: the moment each job was dispatched (-1: not yet)."""
        return self._job[:, k.DISPATCH].copy()

    def executions(self) -> ExecutionLog:
        """The execution log (valid for finished executions once ``done``)."""
        j = self.jobs
        job = np.repeat(np.arange(j.arrival.size), j.executions)
        cluster = self._job[job, k.CLUSTER]
        executors = j.requests[job, np.maximum(cluster, 0), j.draws]
        deadline = j.deadline[job, np.maximum(cluster, 0)]
        elapsed = self._ex[:, k.E_FINISH] - self._ex[:, k.E_REQUEST]
        return ExecutionLog(
            job=job,
            cluster=cluster,
            request_time=self._ex[:, k.E_REQUEST].copy(),
            start=self._ex[:, k.E_START].copy(),
            finish=self._ex[:, k.E_FINISH].copy(),
            executors=executors,
            missed=(deadline >= 0) & (elapsed > deadline),
        )

    def utilisation(self) -> np.ndarray:
        """float64, ``(B, C)``: executor-steps used over capacity-steps offered, so far."""
        return self._sums[:, :, 0] / np.maximum(self._sums[:, :, 1], 1)

    def elastic_log(self, env: int, cluster: int) -> np.ndarray:
        """int64, ``(n, 2)``: ``(moment, executors added in effect after it)`` per change."""
        n = min(int(self._cl[env, cluster, k.N_CHANGES]), self._elog.shape[2])
        return self._elog[env, cluster, :n].copy()

    def _advance(self, envs: np.ndarray, actions: np.ndarray, *, fresh: bool) -> np.ndarray:
        c = self.config
        missed, status = k.advance(
            envs,
            actions,
            fresh,
            c.slots,
            self._env,
            self._job,
            self._cl,
            self._ex,
            self._buf,
            self._act,
            self._ring,
            self._cum,
            self._sums,
            self._elog,
            self._jobs,
            self._elastic,
            c.elastic_step,
            c.elastic_limit,
            c.elastic_window,
            c.elastic_threshold,
        )
        if status != k.OK:
            msg = (
                f"multi-cluster envs {envs[:5].tolist()}: time passed the last arrival plus the "
                "serial execution of all jobs plus the void moments with jobs unfinished: a "
                "simulator defect"
            )
            raise SimulationError(msg)
        stuck = envs[self._env[envs, k.VOIDS] > self._env[envs, k.LIMIT]]
        if stuck.size:
            msg = (
                f"multi-cluster envs {stuck[:5].tolist()}: the policy keeps answering void "
                f"(more void moments than the serial bound {self._env[stuck[0], k.LIMIT]}) "
                "instead of dispatching buffered jobs"
            )
            raise SimulationError(msg)
        return -missed.astype(np.float64)


def _time_limits(jobs: ClusterJobs) -> np.ndarray:
    """Per env: last arrival + Σ executions · slowest execution time (a serial bound)."""
    serial = jobs.executions * jobs.exec_time.max(axis=1)
    ends = np.r_[0, np.cumsum(serial)]
    b = jobs.bounds
    result: np.ndarray = jobs.arrival[b[1:] - 1] + ends[b[1:]] - ends[b[:-1]] + 1
    return result
