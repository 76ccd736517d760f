"""Compiled kernels of :mod:`schedlab.simulator.cluster.batched` (numba, ``cache=True``).

Every kernel takes the batched :data:`State` (a namedtuple of arrays) and env indices; the
semantics are documented in :mod:`schedlab.simulator.cluster.batched`. Helpers that run inside
loops take plain arrays and are inlined: passing the state by value to a non-inlined call costs
more than the work itself.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import heap, precedence
from schedlab.simulator.cluster.disciplines import GREEDY, STRICT
from schedlab.simulator.cluster.dispatch import choose
from schedlab.simulator.cluster.placement import EPS, FIRST_FIT, earliest_fit, fits_for

State = namedtuple(
    "State",
    "arrival duration seen demand weight lo hi limit capacity horizon alpha beta gamma "
    "now free dep alloc_w queue_w backlog_w slot bq bq_head bq_tail nxt last_arr n_started "
    "start machine done forced steps withhold_steps withheld queue "
    "release n_parents task task_rows child_offsets children task_lo task_left task_end "
    "waiting ready rel_t rel_r rel_n",
)
"""Arrays of the batched state (``B`` envs, ``n`` jobs, ``H`` tracked steps, ``m`` machines,
``d`` resources).

Jobs (shared by envs that replay the same jobset): ``arrival``, ``duration`` (steps run), ``seen``
(the length heuristics' scores see: the estimate, or ``duration``) (int64, ``(n,)``),
``demand`` (float64, ``(n, d)``), ``weight`` (float64, ``(n,)``: reward weight). Reward weights of
where a job is: ``alpha`` (``(m,)``: allocated to machine ``i``), ``beta`` (visible slots),
``gamma`` (backlog). Per env: ``lo``, ``hi`` (its job rows), ``limit`` (time limit), ``now``,
``free`` (``(B, H, m, d)``: free capacity at ``now + k``), ``dep`` (``(B, H)``: α-weighted weight
of jobs finishing at ``now + k``), ``alloc_w``/``queue_w``/``backlog_w`` (weight allocated and
unfinished (α-weighted), in the slots, in the backlog), ``slot`` (``(B, M)``, job row or -1),
``bq`` (``(B, n_max)``, backlog ring), ``bq_head``/``bq_tail``, ``nxt`` (next job row to arrive),
``last_arr``, ``n_started``, ``start``/``machine`` (``(B, n_max)``, per job, -1 before),
``done``, ``forced``, ``steps`` (time steps advanced by void or invalid actions),
``withhold_steps`` (of those, steps that left a visible job waiting that the agent could have
started now), ``withheld`` (``(B, Dmax + 1)``: withheld job counts by duration). Shared:
``queue`` (int64, ``(1,)``: the queue discipline, a code of
:data:`~schedlab.simulator.cluster.disciplines.DISCIPLINES`: greedy, strict or easy).

Precedence of a DAG workload (:mod:`.precedence`; empty arrays without one, and jobs then
arrive in row order through ``nxt``; with one, ``arrival`` (a copy) becomes each task's ready
time when it is admitted, what scores and views see): shared ``release``, ``n_parents``,
``task`` (per job), ``task_rows``, ``child_offsets``, ``children`` (the graph); per env
``task_lo`` (its first task), ``task_left``/``task_end`` (``(B, tasks)``: rows of each task not
started, latest finish), ``waiting``/``ready`` (``(B, n_max)``: parent tasks each job waits
for, its ready time so far) and the heap of known ready times ``rel_t``/``rel_r``
(``(B, n_max)``), ``rel_n``.
"""

NO_RESERVATION = (-1, 0, 0, False)
""":func:`_reservation` where none is needed (greedy): no head."""


@numba.njit(cache=True, inline="always")
def _fits_any_now(free: np.ndarray, b: int, dem: np.ndarray, dur: int) -> bool:
    for i in range(free.shape[2]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if fits_for(free[b], 0, i, dem, dur):
            return True
    return False


@numba.njit(cache=True, inline="always")
def _head(slot: np.ndarray) -> int:
    """The slot (of ``slot``, shape ``(M,)``) holding the earliest-arrived waiting job, or -1:
    slot jobs arrived before backlog jobs, so it is the smallest job row."""
    h = -1
    for q in range(slot.shape[0]):
        if slot[q] >= 0 and (h < 0 or slot[q] < slot[h]):
            h = q
    return h


@numba.njit(cache=True)
def _start_beside(
    profile: np.ndarray, i: int, demand: np.ndarray, dur: int, taken: np.ndarray, until: int
) -> int:
    """Earliest offset in the whole ``profile`` (shape ``(H, m, d)``) where ``demand`` fits on
    machine ``i`` for ``dur`` steps while ``taken`` (shape ``(d,)``) is also used there at offsets
    ``0 .. until − 1`` (a job tentatively started now; ``until = 0``: none), or ``H`` if none.
    The profile is read, never written: ``free − taken`` is what :func:`_place` would leave."""
    run = 0
    for k in range(profile.shape[0]):
        ok = True
        for r in range(demand.shape[0]):
            used = taken[r] if k < until else 0.0
            if demand[r] > profile[k, i, r] - used + EPS:
                ok = False
                break
        run = run + 1 if ok else 0
        if run >= dur:
            return k - dur + 1
    return int(profile.shape[0])


@numba.njit(cache=True)
def _reservation(
    profile: np.ndarray, slot: np.ndarray, demand: np.ndarray, duration: np.ndarray
) -> tuple[int, int, int, bool]:
    """EASY's reservation for the head job of one env (``profile``: its free capacity, shape
    ``(H, m, d)``; ``slot``: its slots, shape ``(M,)``): ``(head slot, earliest start offset
    over every machine, a machine where it is reached, whether another machine reaches it
    too)``; :data:`NO_RESERVATION` without a waiting job.

    The start is looked for over the whole tracked profile, not only the horizon ``T``: every
    allocation ends within ``max(T, longest duration)`` steps and ``H = T + 2·longest + 1``, so
    the head always has a reservation, even beyond the image the agent sees."""
    h = _head(slot)
    if h < 0:
        return NO_RESERVATION
    j = slot[h]
    best, where, tie = profile.shape[0], 0, False
    for i in range(profile.shape[1]):
        t = _start_beside(profile, i, demand[j], duration[j], demand[j], 0)
        if t < best:
            best, where, tie = t, i, False
        elif t == best:
            tie = True
    return h, best, where, tie


@numba.njit(cache=True, inline="always")
def _offset(s: State, b: int, q: int, i: int, res: tuple[int, int, int, bool]) -> int:
    """Where action (slot ``q``, machine ``i``) places its job under env ``b``'s discipline, or
    -1 if the action is not allowed (it then acts as void). ``res``: :func:`_reservation` of
    the env (any value under greedy).

    greedy: the earliest fit within the horizon. strict: the head job only, and only now.
    easy: the head now; another job now if it does not delay the head's reservation (it leaves
    it on another machine that reaches it, or the head still starts by then beside it)."""
    j = s.slot[b, q]
    if j < 0:
        return -1
    if s.queue[0] == GREEDY:
        return earliest_fit(s.free[b], i, s.demand[j], s.duration[j], s.horizon)
    if not fits_for(s.free[b], 0, i, s.demand[j], s.duration[j]):
        return -1
    h, t, where, tie = res
    if q == h:
        return 0
    if s.queue[0] == STRICT:
        return -1
    if i != where or tie:
        return 0
    k = s.slot[b, h]
    later = _start_beside(s.free[b], i, s.demand[k], s.duration[k], s.demand[j], s.duration[j])
    return 0 if later <= t else -1


@numba.njit(cache=True, inline="always")
def _env_reservation(s: State, b: int) -> tuple[int, int, int, bool]:
    """:func:`_reservation` of env ``b`` (none needed under greedy)."""
    if s.queue[0] == GREEDY:
        return NO_RESERVATION
    return _reservation(s.free[b], s.slot[b], s.demand, s.duration)


@numba.njit(cache=True, inline="always")
def _startable_now(s: State, b: int, q: int, res: tuple[int, int, int, bool]) -> bool:
    """Whether the job in slot ``q`` (not empty) could start now on some machine under the
    env's discipline (greedy: it fits now somewhere)."""
    j = s.slot[b, q]
    if s.queue[0] == GREEDY:
        return _fits_any_now(s.free, b, s.demand[j], s.duration[j])
    for i in range(s.free.shape[2]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if _offset(s, b, q, i, res) == 0:
            return True
    return False


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
        j - s.lo[b], s.now[b] + off + dur, s.lo[b], s.release, s.task, s.task_left[b],
        s.task_end[b], s.child_offsets, s.children, s.waiting[b], s.ready[b], s.rel_t[b],
        s.rel_r[b], s.rel_n[b], s.task_lo[b],
    )  # fmt: skip
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
        res = _env_reservation(s, b)
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            if j >= 0 and _startable_now(s, b, q, res):
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
                s.slot[b], s.free[b], scratch, s.capacity, s.demand, s.duration, s.seen, s.arrival,
                s.lo[b], s.now[b], score, dynamic, FIRST_FIT, no_tree, 0.0,
            )  # fmt: skip
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
        res = _env_reservation(s, b)
        pick, machine = -1, -1
        for q in range(s.slot.shape[1]):
            j = s.slot[b, q]
            if j < 0 or (pick >= 0 and j > s.slot[b, pick]):
                continue
            for i in range(s.free.shape[2]):
                if _offset(s, b, q, i, res) == 0:
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
    res = _env_reservation(s, b)
    for q in range(s.slot.shape[1]):
        for i in range(s.free.shape[2]):
            if _offset(s, b, q, i, res) >= 0:
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
            s.rel_n[b] = precedence.roots(s.release[s.lo[b] : s.hi[b]], s.waiting[b, :n],
                                          s.rel_t[b], s.rel_r[b])  # fmt: skip
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
    s: State, envs: np.ndarray, actions: np.ndarray, skip_forced: bool, fallback: Any,
    rewards: np.ndarray,
) -> None:  # fmt: skip
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
            off = _offset(s, b, q, i, _env_reservation(s, b))
            if off >= 0:
                _place(s, b, q, i, off)
                placed = True
        r = 0.0 if placed else _advance(s, b, True)
        rewards[x] = r + settle(s, b, skip_forced, fallback)


@numba.njit(cache=True)
def valid_mask(s: State, envs: np.ndarray, out: np.ndarray) -> None:
    """``out[x, 0]`` (void) is True; ``out[x, 1 + i·M + q]``: slot ``q`` holds a job that fits on
    machine ``i`` within the horizon and the discipline allows it there (:func:`_offset`)."""
    M = s.slot.shape[1]
    for x in range(envs.shape[0]):
        b = envs[x]
        out[x, 0] = True
        res = NO_RESERVATION if s.done[b] else _env_reservation(s, b)
        for i in range(s.free.shape[2]):
            for q in range(M):
                out[x, 1 + i * M + q] = not s.done[b] and _offset(s, b, q, i, res) >= 0


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
