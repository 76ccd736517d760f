"""Compiled kernels of :mod:`schedlab.simulator.batched` (numba, ``cache=True``).

Every kernel takes the batched :data:`State` (a namedtuple of arrays) and env indices; the
semantics are documented in :mod:`schedlab.simulator.batched`. Helpers that run inside loops take
plain arrays and are inlined: passing the 27-array state by value to a non-inlined call costs
more than the work itself.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from schedlab.simulator.scoring import EPS, FCFS, RANDOM, better, score

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


@numba.njit(cache=True)
def job_means(s: State) -> tuple[np.ndarray, np.ndarray]:
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
