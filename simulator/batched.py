"""The single-pool engine, compiled and batched over ``B`` environments (design.md §5, §8).

Same semantics as :class:`schedlab.simulator.engine.Engine` (tests check identical schedules),
held as arrays so that one compiled call advances every environment:

* ``M`` slots filled in arrival order, a FIFO backlog that never drops a job;
* action ``a`` (Gymnasium convention): ``0`` is void, ``i`` in ``1..M`` allocates the job in slot
  ``i − 1`` at the earliest offset ``0 .. max(0, T − duration)`` where it fits for its whole
  duration (time does not move); void or an invalid action advances one step (completions, then
  arrivals);
* the heuristics' start-now mode (:meth:`BatchedEngine.run_heuristic`), so every policy runs on it.

Rewards (seed 000 §3.2, §3.4; design.md §8 "Reward" and "Learning"): the step from ``t`` to
``t + 1`` earns ``−Σ w_j`` over the jobs in the system at ``t`` (arrived, not finished: waiting,
allocated or running), ``w_j = 1 / duration_j`` (objective ``slowdown``) or ``1``
(``completion``); allocations earn 0. An episode ends when every job has been allocated; the
reward still to come then (running jobs until they finish) is paid at once, so the return with
γ = 1 is exactly ``−Σ slowdown`` (or ``−Σ completion time``). With ``skip_forced`` the engine
also advances on its own while no action but void is valid (no choice to make), adding those
steps' rewards to the decision that led there; sums are unchanged.

Every job finishes: an environment still running at its time limit (by default the last arrival
plus the sum of all durations plus ``T``, i.e. slower than running the jobs one by one) is
finished by FCFS start-now placement, and the jobs so placed are counted in :attr:`forced`.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.batched_kernels import (
    State,
    job_means,
    reset_envs,
    run_heuristic_envs,
    step_envs,
    valid_mask,
)
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.observation import ObsGeometry, SparseObs, encode

Objective = Literal["slowdown", "completion"]


class BatchedEngine:
    """``B`` environments, each replaying the jobs in rows ``lo[b]:hi[b]``.

    Parameters
    ----------
    arrival, duration : int64, shape ``(n,)``
        Jobs, each env's rows contiguous and sorted by (arrival, job_id).
    demand : float64, shape ``(n, d)``
    lo, hi : int64, shape ``(B,)``
        Job rows of each env (several envs may replay the same rows).
    capacity : float64, shape ``(d,)``
    config : ClusterConfig
        ``M``, ``T`` and the backlog shown.
    objective : ``"slowdown"`` or ``"completion"``
        Reward weight ``1 / duration`` or ``1`` per job in the system and step.
    skip_forced : bool
        Advance on its own while only the void action is valid.
    time_limit : int64 array, shape ``(B,)``, optional
        Step at which an unfinished env is completed by FCFS (default: last arrival + Σ duration
        + T of its jobs).
    max_jobs : int, optional
        Most jobs an env will replay (default: the largest ``hi − lo``); needed when ``lo`` and
        ``hi`` are set later (Gymnasium adapters).
    """

    def __init__(
        self,
        arrival: np.ndarray,
        duration: np.ndarray,
        demand: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        capacity: np.ndarray,
        config: ClusterConfig,
        *,
        objective: Objective = "slowdown",
        skip_forced: bool = True,
        time_limit: np.ndarray | None = None,
        max_jobs: int | None = None,
    ) -> None:
        if objective not in ("slowdown", "completion"):
            msg = f"objective must be 'slowdown' or 'completion', got {objective!r}"
            raise ValueError(msg)
        arrival = np.ascontiguousarray(arrival, dtype=np.int64)
        duration = np.ascontiguousarray(duration, dtype=np.int64)
        demand = np.ascontiguousarray(demand, dtype=np.float64).reshape(arrival.size, -1)
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        capacity = np.asarray(capacity, dtype=np.float64)
        self.config, self.objective, self.skip_forced = config, objective, skip_forced
        self.geometry = ObsGeometry.for_cluster(capacity, config)
        B, d = lo.size, capacity.size
        n_max = int((hi - lo).max(initial=1)) if max_jobs is None else max_jobs
        longest = int(duration.max(initial=1))
        weight = 1.0 / duration if objective == "slowdown" else np.ones(arrival.size)
        if time_limit is None:
            time_limit = default_time_limit(arrival, duration, lo, hi, config.horizon)
        self.state = State(
            arrival, duration, demand, weight.astype(np.float64), lo, hi,
            np.asarray(time_limit, dtype=np.int64), capacity, config.horizon,
            np.zeros(B, np.int64), np.zeros((B, config.horizon + 2 * longest + 1, d)),
            np.zeros((B, config.horizon + 2 * longest + 1)), np.zeros(B),
            np.full((B, config.slots), -1, np.int64), np.zeros((B, max(n_max, 1)), np.int64),
            np.zeros(B, np.int64), np.zeros(B, np.int64), lo.copy(), np.zeros(B, np.int64),
            np.zeros(B, np.int64), np.full((B, max(n_max, 1)), -1, np.int64),
            np.zeros(B, np.bool_), np.zeros(B, np.int64), np.zeros(B, np.int64),
            np.zeros(B, np.int64), np.zeros((B, longest + 1), np.int64),
        )  # fmt: skip
        self.reset()

    @classmethod
    def for_jobsets(
        cls,
        arrival: np.ndarray,
        duration: np.ndarray,
        demand: np.ndarray,
        bounds: np.ndarray,
        capacity: np.ndarray,
        config: ClusterConfig,
        *,
        repeats: int = 1,
        **kwargs: Any,
    ) -> BatchedEngine:
        """Envs ``k·repeats .. k·repeats + repeats − 1`` replay jobset ``k``, whose jobs are rows
        ``bounds[k]:bounds[k + 1]`` (``bounds``: int64, shape ``(K + 1,)``)."""
        lo = np.repeat(bounds[:-1], repeats)
        hi = np.repeat(bounds[1:], repeats)
        return cls(arrival, duration, demand, lo, hi, capacity, config, **kwargs)

    @classmethod
    def from_jobset(
        cls, jobset: JobSet, config: ClusterConfig, *, repeats: int = 1, **kwargs: Any
    ) -> BatchedEngine:
        """Envs replaying every jobset of ``jobset``, ``repeats`` envs each, in jobset order."""
        jobs = jobset.jobs
        ids = jobs.get_column("jobset").to_numpy()
        change = np.flatnonzero(np.diff(ids)) + 1
        bounds = np.concatenate([[0], change, [ids.size]]).astype(np.int64)
        return cls.for_jobsets(
            jobs.get_column("arrival").to_numpy(), jobs.get_column("duration").to_numpy(),
            jobset.demands(), bounds, jobset.capacity, config, repeats=repeats, **kwargs,
        )  # fmt: skip

    # -- episode control -------------------------------------------------------------------
    @property
    def n_envs(self) -> int:
        """B."""
        return int(self.state.lo.size)

    def _envs(self, envs: np.ndarray | None) -> np.ndarray:
        if envs is None:
            return np.arange(self.n_envs, dtype=np.int64)
        return np.asarray(envs, dtype=np.int64)

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` (all by default); returns the reward of skipped forced steps."""
        envs = self._envs(envs)
        rewards = np.empty(envs.size)
        reset_envs(self.state, envs, self.skip_forced, rewards)
        return rewards

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """Apply ``actions`` (int, shape ``(n,)``, 0 = void, ``i`` = slot ``i − 1``) to ``envs``.

        Returns the rewards, float64, shape ``(n,)``.
        """
        envs = self._envs(envs)
        rewards = np.empty(envs.size)
        step_envs(self.state, envs, np.asarray(actions, dtype=np.int64), self.skip_forced, rewards)
        return rewards

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Valid actions, bool, shape ``(n, M + 1)`` (see :func:`valid_mask`)."""
        envs = self._envs(envs)
        out = np.empty((envs.size, self.config.slots + 1), dtype=np.bool_)
        valid_mask(self.state, envs, out)
        return out

    def observe(self, envs: np.ndarray | None = None) -> SparseObs:
        """The DeepRM image of ``envs`` as sparse terms, with their action masks."""
        envs = self._envs(envs)
        s, g = self.state, self.geometry
        terms = np.empty((envs.size, g.n_terms), dtype=np.int32)
        weights = np.empty((envs.size, g.n_terms), dtype=np.float32)
        encode(
            envs, s.free, s.capacity, np.array(g.cap_units, dtype=np.int64), s.slot,
            s.duration, s.demand, s.bq_tail - s.bq_head, s.now - s.last_arr, g.bases,
            min(g.backlog_view, g.horizon * g.backlog_width), terms, weights,
        )  # fmt: skip
        return SparseObs(terms, weights, self.action_mask(envs), g)

    def run_heuristic(
        self, code: int, knob: float = 0.0, uniforms: np.ndarray | None = None
    ) -> None:
        """Schedule every env from its current state with a work-conserving heuristic."""
        u = np.zeros(self.state.arrival.size) if uniforms is None else uniforms
        run_heuristic_envs(self.state, code, float(knob), np.asarray(u, dtype=np.float64))

    # -- results ---------------------------------------------------------------------------
    @property
    def done(self) -> np.ndarray:
        """bool, shape ``(B,)``: every job of the env has been placed."""
        return self.state.done

    @property
    def forced(self) -> np.ndarray:
        """int64, shape ``(B,)``: jobs placed by the time-limit fallback."""
        return self.state.forced

    def starts(self, env: int) -> np.ndarray:
        """Start step of every job of ``env`` (its rows in order), int64."""
        s = self.state
        return s.start[env, : s.hi[env] - s.lo[env]].copy()

    def all_starts(self) -> np.ndarray:
        """Start steps of all envs concatenated (the job rows in order when each env replays
        its own jobset)."""
        s = self.state
        keep = np.arange(s.start.shape[1])[None, :] < (s.hi - s.lo)[:, None]
        return s.start[keep]

    def job_means(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean slowdown and mean completion time (steps) per env, float64, shape ``(B,)`` each
        (nan for an env without jobs); valid once the env is done."""
        return job_means(self.state)

    def withholding(self, envs: np.ndarray | None = None) -> dict[str, Any]:
        """Totals over ``envs`` (all by default): time steps advanced by the agent, steps that
        left a visible job waiting although it fitted now, withheld jobs by length (steps ->
        count, one count per job and step), and jobs placed by the time-limit fallback."""
        s, envs = self.state, self._envs(envs)
        counts = s.withheld[envs].sum(axis=0)
        return {
            "time_steps": int(s.steps[envs].sum()),
            "withholding_steps": int(s.withhold_steps[envs].sum()),
            "withheld_lengths": {int(k): int(v) for k, v in enumerate(counts) if v},
            "forced_jobs": int(s.forced[envs].sum()),
        }


def default_time_limit(
    arrival: np.ndarray, duration: np.ndarray, lo: np.ndarray, hi: np.ndarray, horizon: int
) -> np.ndarray:
    """Per env: last arrival + Σ duration + T (slower than running the jobs one at a time)."""
    csum = np.concatenate([[0], np.cumsum(duration)])
    last = np.where(hi > lo, arrival[np.maximum(hi - 1, 0)] if arrival.size else 0, 0)
    return (last + csum[hi] - csum[lo] + horizon).astype(np.int64)
