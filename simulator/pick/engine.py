"""The pick engine: ``B`` replays of trace windows where an agent picks, from the first ``K``
waiting jobs, the next one the queue discipline handles (:class:`PickEngine`, a
:class:`~schedlab.simulator.model.Model`; semantics in :mod:`.kernels`).

Actions follow schedlab's convention: ``1 + q`` picks candidate ``q``; ``0`` (void) picks
candidate 0, the earliest-arrived one (the queue's own order), and so does an action without a
candidate. Jobs run :func:`~schedlab.simulator.config.job_times`' steps (killed at their
estimate under ``overrun="kill"``) and the scheduler, agent included, sees their estimates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import jobset_bounds
from schedlab.simulator.cluster.placement import PLACEMENTS
from schedlab.simulator.config import Overrun, job_times
from schedlab.simulator.model import Placements, View
from schedlab.simulator.pick import kernels as k
from schedlab.simulator.pick.features import N_FEATURES, PickSnapshot, step_observe
from schedlab.simulator.pick.state import PickState, pack, unpack
from schedlab.simulator.state_sizes import StateSizes

PickQueue = Literal["greedy", "strict", "easy"]
"""Queue disciplines an agent picks under (:data:`.kernels.QUEUES`)."""
Objective = Literal["bounded_slowdown", "wait", "utilisation"]
"""Rewards (:data:`.kernels.OBJECTIVES`)."""
Placement = Literal["firstfit", "bestfit", "worstfit", "align"]
"""Machine-choice rules (:data:`~schedlab.simulator.cluster.placement.PLACEMENTS`)."""


def candidates(mask: np.ndarray) -> np.ndarray:
    """The candidates an agent picks among, bool ``(n, K)``, from the engine's action mask
    (``(n, K + 1)``, :meth:`PickEngine.action_mask`): column ``q`` for action ``1 + q``; where
    none is valid, candidate 0 (the earliest arrived, what void starts)."""
    rows = np.asarray(mask, dtype=bool)[:, 1:].copy()
    rows[:, 0] |= ~rows.any(axis=1)
    return rows


@dataclass(frozen=True, kw_only=True, slots=True)
class PickConfig:
    """How the pick engine replays a JobSet."""

    visible: int = 128
    """K: candidates an agent chooses among (the first K in arrival order)."""
    queue: PickQueue = "greedy"
    """Queue discipline around the picks (:mod:`.kernels`)."""
    placement: Placement = "firstfit"
    """Machine a started job runs on."""
    objective: Objective = "bounded_slowdown"
    """Reward: ``−bsld/n`` per started job (the return is minus the window's mean bounded
    slowdown), ``−wait/(3600 s · n)`` (minus the mean wait in hours), or the window's
    utilisation, paid at its end."""
    tau: float = 10.0
    """τ of the bounded slowdown, seconds."""
    skip_forced: bool = True
    """Take decisions with a single candidate without asking."""
    machines: int | None = None
    """m (None: the JobSet's own count)."""
    overrun: Overrun = "kill"
    """A job past its estimate is ended there (``kill``) or runs on (``extend``)."""

    def __post_init__(self) -> None:
        if self.visible < 1:
            msg = f"PickConfig.visible must be >= 1, got {self.visible}"
            raise ValueError(msg)
        if not self.tau > 0:
            msg = f"PickConfig.tau must be > 0 seconds, got {self.tau}"
            raise ValueError(msg)
        for name, known in (
            ("queue", k.QUEUES),
            ("placement", PLACEMENTS),
            ("objective", k.OBJECTIVES),
        ):
            if getattr(self, name) not in known:
                msg = f"PickConfig.{name}: {getattr(self, name)!r} is not one of {list(known)}"
                raise ValueError(msg)


def refuse_dag(jobset: JobSet) -> None:
    """The pick engine has no precedence: refuse a DAG workload."""
    if "parents" in jobset.jobs.columns:
        msg = "the pick engine does not model DAG precedence; simulate DAG workloads otherwise"
        raise ValueError(msg)


class PickEngine(StateSizes):
    """``n_envs`` envs over the rows of ``jobset`` (an env replays the rows ``assign`` gives
    it, at most ``max_jobs`` of them; default: the largest jobset).

    Parameters
    ----------
    jobset : JobSet
        The jobs (any number of jobsets; an env replays a contiguous run of rows of one).
    config : PickConfig
        Candidates, discipline, placement, reward, machines, overrun.
    n_envs : int
        B.
    max_jobs : int, optional
        The most rows an env replays.
    """

    kind: ClassVar[str] = "cluster"
    state: PickState

    def __init__(
        self, jobset: JobSet, config: PickConfig, n_envs: int, *, max_jobs: int | None = None
    ) -> None:
        refuse_dag(jobset)
        self.jobset, self.config = jobset, config
        jobs = jobset.jobs
        self.bounds = jobset_bounds(jobs.get_column("jobset").to_numpy())
        width = int(max_jobs or max(int(np.diff(self.bounds).max(initial=0)), 1))
        runtime, estimate = job_times(jobset, config.overrun)
        self.step_s = float(jobset.meta.time_step_seconds or 1.0)
        m = config.machines if config.machines is not None else jobset.meta.machines
        capacity = np.asarray(jobset.machine_capacity, dtype=np.float64)
        d, n, K = capacity.size, len(jobset), config.visible
        self.packed = pack(n, d, n_envs, m, width, K)
        self.state = s = unpack(self.packed)
        s.arrival[:] = jobs.get_column("arrival").to_numpy()
        s.runtime[:], s.estimate[:] = runtime, estimate
        s.demand[:], s.run_s[:] = jobset.demands(), runtime * self.step_s
        s.capacity[:], s.fparams[:] = capacity, (self.step_s, config.tau)
        s.iparams[:] = (
            K,
            PLACEMENTS[config.placement],
            config.skip_forced,
            k.OBJECTIVES[config.objective],
        )
        s.queue[:], s.done[:], s.hm[:], s.head[:] = k.QUEUES[config.queue], 1, -1, -1
        self.width = width

    @classmethod
    def for_jobsets(cls, jobset: JobSet, config: PickConfig) -> PickEngine:
        """One env per jobset of ``jobset``, each assigned its whole jobset (not reset)."""
        bounds = jobset_bounds(jobset.jobs.get_column("jobset").to_numpy())
        engine = cls(jobset, config, max(bounds.size - 1, 1))
        n = bounds.size - 1
        engine.assign(np.arange(n), bounds[:-1], bounds[1:])
        return engine

    # -- the Model contract ---------------------------------------------------------------------
    @property
    def n_actions(self) -> int:
        """``K + 1`` (0 is void: the earliest-arrived candidate)."""
        return self.config.visible + 1

    @property
    def done(self) -> np.ndarray:
        """bool, shape ``(B,)``: every job of the env has started."""
        done: np.ndarray = self.state.done != 0
        return done

    def _envs(self, envs: np.ndarray | None) -> np.ndarray:
        if envs is None:
            return np.arange(self.n_envs, dtype=np.int64)
        return np.asarray(envs, dtype=np.int64).reshape(-1)

    def assign(
        self, envs: np.ndarray, lo: np.ndarray, hi: np.ndarray, queue: np.ndarray | None = None
    ) -> None:
        """Env ``envs[x]`` replays rows ``lo[x] .. hi[x] − 1`` (one jobset's, at most
        ``max_jobs``) from its next reset, under discipline code ``queue[x]`` if given."""
        envs = self._envs(envs)
        lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        if envs.size and int((hi - lo).max()) > self.width:
            msg = f"a window of {int((hi - lo).max())} jobs exceeds the engine's {self.width}"
            raise ValueError(msg)
        self.state.lo[envs], self.state.hi[envs] = lo, hi
        if queue is not None:
            self.state.queue[envs] = queue

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` up to their first decision; the rewards paid before it."""
        envs = self._envs(envs)
        k.reset_envs(self.packed, envs)
        paid: np.ndarray = self.state.paid[envs].copy()
        return paid

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """One pick per env (int, ``(n,)``); the rewards paid up to the next decision."""
        envs = self._envs(envs)
        k.step_envs(self.packed, envs, np.asarray(actions, dtype=np.int64).reshape(-1))
        paid: np.ndarray = self.state.paid[envs].copy()
        return paid

    def step_observe(
        self, actions: np.ndarray, envs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`step` of ``envs`` (int64), then their observations ``(n, K, F)`` and
        candidates (bool ``(n, K)``; position 0 alone where none), in one compiled call."""
        n, K = envs.size, self.config.visible
        obs = np.empty((n, K, N_FEATURES), dtype=np.float32)
        mask = np.empty((n, K), dtype=bool)
        step_observe(self.packed, envs, np.asarray(actions, dtype=np.int64), obs, mask)
        paid: np.ndarray = self.state.paid[envs]
        return paid, obs, mask

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """bool, ``(n, K + 1)``: column ``1 + q`` for each candidate ``q``; column 0 always."""
        envs = self._envs(envs)
        out = np.zeros((envs.size, self.n_actions), dtype=bool)
        k.masks(self.packed, envs, out)
        return out

    def snapshot(self, envs: np.ndarray | None = None) -> PickSnapshot:
        """What views read of ``envs``."""
        return PickSnapshot(self.packed, self._envs(envs), self.config.visible)

    def observe(self, view: View[Any], envs: np.ndarray | None = None) -> Any:
        """What ``view`` shows of ``envs``."""
        return view.observe(self.snapshot(envs))

    def placements(self) -> Placements:
        """Start, finish and machine of every job row, as its last env replayed it (-1 for
        rows no env replayed)."""
        s = self.state
        n = s.arrival.size
        start, machine = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        for b in range(self.n_envs):
            lo, hi = int(s.lo[b]), int(s.hi[b])
            start[lo:hi], machine[lo:hi] = s.start[b, : hi - lo], s.machine[b, : hi - lo]
        finish = np.where(start >= 0, start + s.runtime, -1)
        return Placements(start=start, finish=finish, target=machine)

    # -- what training reads -----------------------------------------------------------------
    def window_means(self, envs: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per env (done), over its jobs: mean ``bounded_slowdown`` (τ = ``config.tau``, in
        seconds) and mean ``wait`` (seconds), float64 ``(n,)`` each (NaN for no jobs)."""
        s = self.state
        out: dict[str, list[float]] = {"bounded_slowdown": [], "wait": []}
        for b in self._envs(envs):
            lo, hi = int(s.lo[b]), int(s.hi[b])
            wait = (s.start[b, : hi - lo] - s.arrival[lo:hi]) * self.step_s
            run = s.run_s[lo:hi]
            bsld = np.maximum(1.0, (wait + run) / np.maximum(run, self.config.tau))
            out["wait"].append(wait.mean() if hi > lo else np.nan)
            out["bounded_slowdown"].append(bsld.mean() if hi > lo else np.nan)
        return {key: np.asarray(v, dtype=np.float64) for key, v in out.items()}
