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

from collections import namedtuple
from typing import Any, Literal

import numba
import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.observation import ObsGeometry, SparseObs, encode
from schedlab.simulator.scoring import EPS, FCFS, RANDOM, better, score

Objective = Literal["slowdown", "completion"]

State = namedtuple(
    "State",
    "arrival duration demand weight lo hi limit capacity horizon "
    "now free dep sys slot bq bq_head bq_tail nxt last_arr n_started start done forced "
    "steps withhold_steps withheld",
)
"""Arrays of the batched state (``B`` envs, ``n`` jobs, ``H`` tracked steps, ``d`` resources).

Jobs (shared by envs that replay the same jobset): ``arrival``, ``duration`` (int64, ``(n,)``),
``demand`` (float64, ``(n, d)``), ``weight`` (float64, ``(n,)``: reward weight). Per env:
``lo``, ``hi`` (its job rows), ``limit`` (time limit), ``now``, ``free`` (``(B, H, d)``: free
capacity at ``now + k``), ``dep`` (``(B, H)``: weight of jobs finishing at ``now + k``), ``sys``
(weight in the system), ``slot`` (``(B, M)``, job row or -1), ``bq`` (``(B, n_max)``, backlog
ring), ``bq_head``/``bq_tail``, ``nxt`` (next job row to arrive), ``last_arr``, ``n_started``,
``start`` (``(B, n_max)``, start step per job, -1 before), ``done``, ``forced``, ``steps`` (time
steps advanced by void or invalid actions), ``withhold_steps`` (of those, steps that left a
visible job waiting that fitted now), ``withheld`` (``(B, Dmax + 1)``: withheld job counts by
duration).
"""


@numba.njit(cache=True, inline="always")
def _fits(free: np.ndarray, b: int, first: int, dem: np.ndarray, dur: int) -> bool:
    for k in range(first, first + dur):
        for r in range(dem.shape[0]):
            if dem[r] > free[b, k, r] + EPS:
                return False
    return True


@numba.njit(cache=True)
def earliest_fit(s: State, b: int, j: int) -> int:
    """Smallest offset in ``[0, max(0, T − duration)]`` where job ``j`` fits in env ``b``, or -1."""
    return _earliest(s.free, s.demand, b, j, s.duration[j], s.horizon)


@numba.njit(cache=True, inline="always")
def _earliest(free: np.ndarray, demand: np.ndarray, b: int, j: int, dur: int, horizon: int) -> int:
    run = 0
    for k in range(max(0, horizon - dur) + dur):
        ok = True
        for r in range(demand.shape[1]):
            if demand[j, r] > free[b, k, r] + EPS:
                ok = False
                break
        run = run + 1 if ok else 0
        if run >= dur:
            return k - dur + 1
    return -1


@numba.njit(cache=True)
def _admit(s: State, b: int) -> None:
    M = s.slot.shape[1]
    t = s.now[b]
    while s.nxt[b] < s.hi[b] and s.arrival[s.nxt[b]] <= t:
        j = s.nxt[b]
        placed = False
        for q in range(M):
            if s.slot[b, q] < 0:
                s.slot[b, q] = j
                placed = True
                break
        if not placed:
            s.bq[b, s.bq_tail[b] % s.bq.shape[1]] = j
            s.bq_tail[b] += 1
        s.sys[b] += s.weight[j]
        s.last_arr[b] = t
        s.nxt[b] += 1


@numba.njit(cache=True)
def _place(s: State, b: int, q: int, off: int) -> None:
    j = s.slot[b, q]
    dur = s.duration[j]
    for k in range(off, off + dur):
        for r in range(s.demand.shape[1]):
            s.free[b, k, r] -= s.demand[j, r]
    s.dep[b, off + dur] += s.weight[j]
    s.start[b, j - s.lo[b]] = s.now[b] + off
    s.n_started[b] += 1
    if s.bq_head[b] < s.bq_tail[b]:
        s.slot[b, q] = s.bq[b, s.bq_head[b] % s.bq.shape[1]]
        s.bq_head[b] += 1
    else:
        s.slot[b, q] = -1


@numba.njit(cache=True)
def _advance(s: State, b: int, agent: bool) -> float:
    """One step; returns its reward. In agent mode, records withheld fitting jobs first."""
    reward = -s.sys[b]
    if agent:
        s.steps[b] += 1
        held = False
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            if j >= 0 and _fits(s.free, b, 0, s.demand[j], s.duration[j]):
                held = True
                s.withheld[b, min(s.duration[j], s.withheld.shape[1] - 1)] += 1
        if held:
            s.withhold_steps[b] += 1
    H, d = s.free.shape[1], s.free.shape[2]
    for k in range(H - 1):
        for r in range(d):
            s.free[b, k, r] = s.free[b, k + 1, r]
        s.dep[b, k] = s.dep[b, k + 1]
    for r in range(d):
        s.free[b, H - 1, r] = s.capacity[r]
    s.dep[b, H - 1] = 0.0
    s.now[b] += 1
    s.sys[b] -= s.dep[b, 0]
    s.dep[b, 0] = 0.0
    _admit(s, b)
    return reward


@numba.njit(cache=True)
def _tail(s: State, b: int) -> float:
    """Reward still to come once every job is placed: each job pays until it finishes."""
    total = 0.0
    for k in range(1, s.dep.shape[1]):
        total += k * s.dep[b, k]
    return -total


@numba.njit(cache=True)
def _best_now(s: State, b: int, code: int, knob: float, u: float) -> int:
    """Slot a work-conserving heuristic starts now (-1: nothing fits); ``u`` for Random."""
    M = s.slot.shape[1]
    free0 = s.free[b, 0]
    best = -1
    if code == RANDOM:
        count = 0
        for q in range(M):
            j = s.slot[b, q]
            if j >= 0 and _fits(s.free, b, 0, s.demand[j], s.duration[j]):
                count += 1
        pick = min(int(u * count), count - 1)
        for q in range(M):
            j = s.slot[b, q]
            if j >= 0 and _fits(s.free, b, 0, s.demand[j], s.duration[j]):
                if pick == 0:
                    return q
                pick -= 1
        return -1
    best_score = -np.inf
    for q in range(M):
        j = s.slot[b, q]
        if j >= 0 and _fits(s.free, b, 0, s.demand[j], s.duration[j]):
            sc = score(
                code, knob, free0, s.capacity, s.demand[j], s.duration[j], s.arrival[j],
                j - s.lo[b], s.now[b],
            )  # fmt: skip
            if better(sc, best_score):
                best_score = sc
                best = q
    return best


@numba.njit(cache=True)
def _any_fits_now(s: State, b: int) -> bool:
    for q in range(s.slot.shape[1]):
        j = s.slot[b, q]
        if j >= 0 and _fits(s.free, b, 0, s.demand[j], s.duration[j]):
            return True
    return False


@numba.njit(cache=True)
def _finish_work_conserving(
    s: State, b: int, code: int, knob: float, uniforms: np.ndarray
) -> tuple[float, int]:
    """Start-now list scheduling of env ``b`` until every job is placed; (reward, jobs started)."""
    reward = 0.0
    started = 0
    while s.n_started[b] < s.hi[b] - s.lo[b]:
        while True:
            u = uniforms[s.lo[b] + started] if code == RANDOM else 0.0
            q = _best_now(s, b, code, knob, u)
            if q < 0:
                break
            _place(s, b, q, 0)
            started += 1
        if s.n_started[b] == s.hi[b] - s.lo[b]:
            break
        reward += _advance(s, b, False)
    return reward + _tail(s, b), started


@numba.njit(cache=True)
def _any_valid(s: State, b: int) -> bool:
    for q in range(s.slot.shape[1]):
        j = s.slot[b, q]
        if j >= 0 and _earliest(s.free, s.demand, b, j, s.duration[j], s.horizon) >= 0:
            return True
    return False


@numba.njit(cache=True)
def reset_envs(s: State, envs: np.ndarray, skip_forced: bool, rewards: np.ndarray) -> None:
    """Empty cluster at step 0 for each env in ``envs``, arrivals at 0 admitted, then
    :func:`settle` (its reward, 0 unless jobs wait for nothing, in ``rewards``)."""
    for i in range(envs.shape[0]):
        b = envs[i]
        s.now[b] = 0
        s.free[b, :, :] = s.capacity
        s.dep[b, :] = 0.0
        s.sys[b] = 0.0
        s.slot[b, :] = -1
        s.bq_head[b] = 0
        s.bq_tail[b] = 0
        s.nxt[b] = s.lo[b]
        s.last_arr[b] = 0
        s.n_started[b] = 0
        s.start[b, :] = -1
        s.done[b] = s.hi[b] == s.lo[b]
        s.forced[b] = 0
        s.steps[b] = 0
        s.withhold_steps[b] = 0
        s.withheld[b, :] = 0
        _admit(s, b)
        rewards[i] = 0.0 if s.done[b] else settle(s, b, skip_forced)


@numba.njit(cache=True)
def settle(s: State, b: int, skip_forced: bool) -> float:
    """After an action: skip forced steps, close a finished episode, enforce the time limit."""
    reward = 0.0
    n = s.hi[b] - s.lo[b]
    while skip_forced and s.n_started[b] < n and s.now[b] < s.limit[b] and not _any_valid(s, b):
        reward += _advance(s, b, True)
    if s.n_started[b] == n:
        reward += _tail(s, b)
        s.done[b] = True
    elif s.now[b] >= s.limit[b]:
        extra, started = _finish_work_conserving(s, b, FCFS, 0.0, s.arrival.astype(np.float64))
        s.forced[b] += started
        reward += extra
        s.done[b] = True
    return reward


@numba.njit(cache=True)
def step_envs(
    s: State, envs: np.ndarray, actions: np.ndarray, skip_forced: bool, rewards: np.ndarray
) -> None:
    """Apply ``actions[i]`` to env ``envs[i]`` (done envs are left alone, reward 0)."""
    M = s.slot.shape[1]
    for i in range(envs.shape[0]):
        b = envs[i]
        rewards[i] = 0.0
        if s.done[b]:
            continue
        a = actions[i]
        placed = False
        if 1 <= a <= M and s.slot[b, a - 1] >= 0:
            off = earliest_fit(s, b, s.slot[b, a - 1])
            if off >= 0:
                _place(s, b, a - 1, off)
                placed = True
        r = 0.0 if placed else _advance(s, b, True)
        rewards[i] = r + settle(s, b, skip_forced)


@numba.njit(cache=True)
def valid_mask(s: State, envs: np.ndarray, out: np.ndarray) -> None:
    """``out[i, 0]`` (void) is True; ``out[i, q + 1]``: slot ``q`` holds a job that fits within
    the horizon."""
    for i in range(envs.shape[0]):
        b = envs[i]
        out[i, 0] = True
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            out[i, q + 1] = (
                j >= 0
                and not s.done[b]
                and _earliest(s.free, s.demand, b, j, s.duration[j], s.horizon) >= 0
            )


@numba.njit(cache=True)
def run_heuristic_envs(s: State, code: int, knob: float, uniforms: np.ndarray) -> None:
    """Schedule every env with one work-conserving heuristic (start-now mode)."""
    for b in range(s.now.shape[0]):
        if not s.done[b]:
            _finish_work_conserving(s, b, code, knob, uniforms)
            s.done[b] = True


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
        return _job_means(self.state)

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


@numba.njit(cache=True)
def _job_means(s: State) -> tuple[np.ndarray, np.ndarray]:
    slowdown = np.full(s.lo.shape[0], np.nan)
    completion = np.full(s.lo.shape[0], np.nan)
    for b in range(s.lo.shape[0]):
        n = s.hi[b] - s.lo[b]
        if n == 0:
            continue
        sd = 0.0
        ct = 0.0
        for i in range(n):
            j = s.lo[b] + i
            c = s.start[b, i] + s.duration[j] - s.arrival[j]
            sd += c / s.duration[j]
            ct += c
        slowdown[b] = sd / n
        completion[b] = ct / n
    return slowdown, completion


def default_time_limit(
    arrival: np.ndarray, duration: np.ndarray, lo: np.ndarray, hi: np.ndarray, horizon: int
) -> np.ndarray:
    """Per env: last arrival + Σ duration + T (slower than running the jobs one at a time)."""
    csum = np.concatenate([[0], np.cumsum(duration)])
    last = np.where(hi > lo, arrival[np.maximum(hi - 1, 0)] if arrival.size else 0, 0)
    return (last + csum[hi] - csum[lo] + horizon).astype(np.int64)
