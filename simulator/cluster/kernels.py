"""Compiled kernels of :mod:`schedlab.simulator.cluster.batched` (numba, ``cache=True``).

Every kernel takes the batched :data:`~schedlab.simulator.cluster.batched_state.State` (a
namedtuple of arrays) and env indices; the semantics are documented in
:mod:`schedlab.simulator.cluster.batched`. Where an action places its job under the env's queue
discipline is :mod:`schedlab.simulator.cluster.agent_disciplines`'s. Helpers that run inside
loops take plain arrays and are inlined: passing the state by value to a non-inlined call costs
more than the work itself.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import heap, precedence
from schedlab.simulator.cluster.agent_disciplines import (
    NO_RESERVATION,
    action_offset,
    env_reservation,
    startable_now,
)
from schedlab.simulator.cluster.batched_state import State
from schedlab.simulator.cluster.disciplines import GREEDY
from schedlab.simulator.cluster.dispatch import choose
from schedlab.simulator.cluster.placement import FIRST_FIT


@numba.njit(cache=True, inline="always")
def _enqueue(s: State, b: int, j: int) -> None:
    """Job row ``j`` joins env ``b``'s queue: the lowest free slot, else the backlog."""
    for q in range(s.slot.shape[1]):
        if s.slot[b, q] < 0:
            s.slot[b, q] = j
            s.queue_w[b] += s.weight[j]
            return
    s.bq[b, s.bq_tail[b] % s.bq.shape[1]] = j
    s.bq_tail[b] += 1
    s.backlog_w[b] += s.weight[j]


@numba.njit(cache=True)
def _admit(s: State, b: int) -> None:
    t = s.now[b]
    if s.task.shape[0]:  # a DAG workload: jobs ready by now, in (ready time, row) order
        while s.rel_n[b] > 0 and s.rel_t[b, 0] <= t:
            j = s.lo[b] + s.rel_r[b, 0]
            s.arrival[j] = s.rel_t[b, 0]  # a task arrives (is visible) when it is ready
            s.rel_n[b] = heap.pop(s.rel_t[b], s.rel_r[b], s.rel_n[b])
            _enqueue(s, b, j)
            s.last_arr[b] = t
        return
    while s.nxt[b] < s.hi[b] and s.arrival[s.nxt[b]] <= t:
        _enqueue(s, b, s.nxt[b])
        s.last_arr[b] = t
        s.nxt[b] += 1


@numba.njit(cache=True)
def _place(s: State, b: int, q: int, i: int, off: int) -> None:
    j = s.slot[b, q]
    dur = s.duration[j]
    for k in range(off, off + dur):
        for r in range(s.demand.shape[1]):
            s.free[b, k, i, r] -= s.demand[j, r]
    w = s.alpha[i] * s.weight[j]
    s.dep[b, off + dur] += w
    s.alloc_w[b] += w
    s.queue_w[b] -= s.weight[j]
    s.start[b, j - s.lo[b]] = s.now[b] + off
    s.machine[b, j - s.lo[b]] = i
    s.n_started[b] += 1
    s.rel_n[b] = precedence.on_start(
        j - s.lo[b],
        s.now[b] + off + dur,
        s.lo[b],
        s.release,
        s.task,
        s.task_left[b],
        s.task_end[b],
        s.child_offsets,
        s.children,
        s.waiting[b],
        s.ready[b],
        s.rel_t[b],
        s.rel_r[b],
        s.rel_n[b],
        s.task_lo[b],
    )
    if s.bq_head[b] < s.bq_tail[b]:
        h = s.bq[b, s.bq_head[b] % s.bq.shape[1]]
        s.slot[b, q] = h
        s.bq_head[b] += 1
        s.backlog_w[b] -= s.weight[h]
        s.queue_w[b] += s.weight[h]
    else:
        s.slot[b, q] = -1


@numba.njit(cache=True)
def _advance(s: State, b: int, agent: bool) -> float:
    """One step; returns its reward. In agent mode, records withheld fitting jobs first."""
    reward = -(s.alloc_w[b] + s.beta * s.queue_w[b] + s.gamma * s.backlog_w[b])
    if agent:
        s.steps[b] += 1
        held = False
        res = env_reservation(s, b)
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            if j >= 0 and startable_now(s, b, q, res):
                held = True
                s.withheld[b, min(s.duration[j], s.withheld.shape[1] - 1)] += 1
        if held:
            s.withhold_steps[b] += 1
    H = s.free.shape[1]
    for k in range(H - 1):
        s.free[b, k] = s.free[b, k + 1]
        s.dep[b, k] = s.dep[b, k + 1]
    for i in range(s.free.shape[2]):
        s.free[b, H - 1, i] = s.capacity
    s.dep[b, H - 1] = 0.0
    s.now[b] += 1
    s.alloc_w[b] -= s.dep[b, 0]
    s.dep[b, 0] = 0.0
    _admit(s, b)
    return float(reward)


@numba.njit(cache=True)
def _tail(s: State, b: int) -> float:
    """Reward still to come once every job is placed: each job pays until it finishes."""
    total = 0.0
    for k in range(1, s.dep.shape[1]):
        total += k * s.dep[b, k]
    return -total


@numba.njit(cache=True)
def _finish_work_conserving(s: State, b: int, score: Any) -> tuple[float, int]:
    """Start-now list scheduling of env ``b`` by ``score`` on first-fit machines until every job
    is placed (the time-limit fallback); (reward, jobs started)."""
    reward = 0.0
    started = 0
    n = s.hi[b] - s.lo[b]
    scratch = np.empty(s.free.shape[2:])
    dynamic = np.empty(0)
    no_tree = np.empty((0, s.free.shape[3]))
    while s.n_started[b] < n:
        while True:
            q, i = choose(
                s.slot[b],
                s.free[b],
                scratch,
                s.capacity,
                s.demand,
                s.duration,
                s.seen,
                s.arrival,
                s.lo[b],
                s.now[b],
                score,
                dynamic,
                FIRST_FIT,
                no_tree,
                0.0,
                -1.0,
            )
            if q < 0:
                break
            _place(s, b, q, i, 0)
            started += 1
        if s.n_started[b] == n:
            break
        reward += _advance(s, b, False)
    return reward + _tail(s, b), started


@numba.njit(cache=True)
def _finish_under_discipline(s: State, b: int) -> tuple[float, int]:
    """FCFS start-now placement of env ``b`` under its strict or easy discipline (the
    earliest-arrived job it allows now, on the lowest machine it allows) until every job is
    placed; (reward, jobs started)."""
    reward = 0.0
    started = 0
    n = s.hi[b] - s.lo[b]
    while s.n_started[b] < n:
        res = env_reservation(s, b)
        pick, machine = -1, -1
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            if j < 0 or (pick >= 0 and j > s.slot[b, pick]):
                continue
            for i in range(s.free.shape[2]):
                if action_offset(s, b, q, i, res) == 0:
                    pick, machine = q, i
                    break
        if pick >= 0:
            _place(s, b, pick, machine, 0)
            started += 1
        else:
            reward += _advance(s, b, False)
    return reward + _tail(s, b), started


@numba.njit(cache=True)
def _any_valid(s: State, b: int) -> bool:
    res = env_reservation(s, b)
    for q in range(s.slot.shape[1]):
        for i in range(s.free.shape[2]):
            if action_offset(s, b, q, i, res) >= 0:
                return True
    return False


@numba.njit(cache=True)
def reset_envs(
    s: State, envs: np.ndarray, skip_forced: bool, fallback: Any, rewards: np.ndarray
) -> None:
    """Empty cluster at step 0 for each env in ``envs``, arrivals at 0 admitted, then
    :func:`settle` (its reward, 0 unless jobs wait for nothing, in ``rewards``)."""
    for x in range(envs.shape[0]):
        b = envs[x]
        s.now[b] = 0
        for k in range(s.free.shape[1]):
            for i in range(s.free.shape[2]):
                s.free[b, k, i] = s.capacity
        s.dep[b, :] = 0.0
        s.alloc_w[b] = 0.0
        s.queue_w[b] = 0.0
        s.backlog_w[b] = 0.0
        s.slot[b, :] = -1
        s.bq_head[b] = 0
        s.bq_tail[b] = 0
        s.nxt[b] = s.lo[b]
        s.last_arr[b] = 0
        s.n_started[b] = 0
        s.start[b, :] = -1
        s.machine[b, :] = -1
        s.done[b] = s.hi[b] == s.lo[b]
        s.forced[b] = 0
        s.steps[b] = 0
        s.withhold_steps[b] = 0
        s.withheld[b, :] = 0
        if s.task.shape[0]:
            n = s.hi[b] - s.lo[b]
            tasks = min(s.task_left.shape[1], s.task_rows.shape[0] - s.task_lo[b])
            s.task_left[b, :tasks] = s.task_rows[s.task_lo[b] : s.task_lo[b] + tasks]
            s.task_end[b, :] = 0
            s.waiting[b, :n] = s.n_parents[s.lo[b] : s.hi[b]]
            s.ready[b, :n] = s.release[s.lo[b] : s.hi[b]]
            s.rel_n[b] = precedence.roots(
                s.release[s.lo[b] : s.hi[b]], s.waiting[b, :n], s.rel_t[b], s.rel_r[b]
            )
        _admit(s, b)
        rewards[x] = 0.0 if s.done[b] else settle(s, b, skip_forced, fallback)


@numba.njit(cache=True)
def settle(s: State, b: int, skip_forced: bool, fallback: Any) -> float:
    """After an action: skip forced steps, close a finished episode, enforce the time limit
    (``fallback``: the order that finishes an env at its limit on first-fit machines: FCFS;
    under strict or easy, FCFS under the discipline: :func:`_finish_under_discipline`)."""
    reward = 0.0
    n = s.hi[b] - s.lo[b]
    while skip_forced and s.n_started[b] < n and s.now[b] < s.limit[b] and not _any_valid(s, b):
        reward += _advance(s, b, True)
    if s.n_started[b] == n:
        reward += _tail(s, b)
        s.done[b] = True
    elif s.now[b] >= s.limit[b]:
        if s.queue[0] == GREEDY:
            extra, started = _finish_work_conserving(s, b, fallback)
        else:
            extra, started = _finish_under_discipline(s, b)
        s.forced[b] += started
        reward += extra
        s.done[b] = True
    return reward


@numba.njit(cache=True)
def step_envs(
    s: State,
    envs: np.ndarray,
    actions: np.ndarray,
    skip_forced: bool,
    fallback: Any,
    rewards: np.ndarray,
) -> None:
    """Apply ``actions[x]`` to env ``envs[x]`` (done envs are left alone, reward 0)."""
    M = s.slot.shape[1]
    m = s.free.shape[2]
    for x in range(envs.shape[0]):
        b = envs[x]
        rewards[x] = 0.0
        if s.done[b]:
            continue
        a = actions[x] - 1
        placed = False
        if 0 <= a < m * M:
            i, q = a // M, a % M
            off = action_offset(s, b, q, i, env_reservation(s, b))
            if off >= 0:
                _place(s, b, q, i, off)
                placed = True
        r = 0.0 if placed else _advance(s, b, True)
        rewards[x] = r + settle(s, b, skip_forced, fallback)


@numba.njit(cache=True)
def valid_mask(s: State, envs: np.ndarray, out: np.ndarray) -> None:
    """``out[x, 0]`` (void) is True; ``out[x, 1 + i·M + q]``: slot ``q`` holds a job that fits on
    machine ``i`` within the horizon and the discipline allows it there (:func:`action_offset`)."""
    M = s.slot.shape[1]
    for x in range(envs.shape[0]):
        b = envs[x]
        out[x, 0] = True
        res = NO_RESERVATION if s.done[b] else env_reservation(s, b)
        for i in range(s.free.shape[2]):
            for q in range(M):
                out[x, 1 + i * M + q] = not s.done[b] and action_offset(s, b, q, i, res) >= 0


@numba.njit(cache=True)
def job_means(s: State) -> tuple[np.ndarray, np.ndarray]:
    """Mean slowdown and completion time per env (nan without jobs)."""
    slowdown = np.full(s.lo.shape[0], np.nan)
    completion = np.full(s.lo.shape[0], np.nan)
    for b in range(s.lo.shape[0]):
        n = s.hi[b] - s.lo[b]
        if n == 0:
            continue
        sd = 0.0
        ct = 0.0
        for x in range(n):
            j = s.lo[b] + x
            c = s.start[b, x] + s.duration[j] - s.arrival[j]
            sd += c / s.duration[j]
            ct += c
        slowdown[b] = sd / n
        completion[b] = ct / n
    return slowdown, completion
