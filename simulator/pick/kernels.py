"""Compiled kernels of the pick engine (:mod:`.engine`; numba, ``cache=True``).

Every kernel takes the :data:`~.state.Packed` arrays (through their named views,
:data:`~.state.PickState`) and env indices. The semantics, written once here and documented in
docs/environments.md:

* an env replays the job rows ``lo .. hi − 1`` of the shared job arrays (arrival order) from an
  empty cluster; time jumps from event to event (an arrival, or a job's end);
* at an event, completions free capacity, arrivals join the waiting queue (arrival order), and
  the env asks for **decisions** until its discipline has nothing left to decide now. A
  decision picks one of the first ``K`` *candidates* (waiting jobs, in arrival order, that the
  phase allows):

  ``greedy``  candidates are the jobs that fit now; the pick starts.
  ``strict``  (head phase) candidates are all waiting jobs, asked only when one of them fits
              now; the pick starts if it fits, else it blocks the queue until the next event.
  ``easy``    as strict, but a pick that does not fit becomes the head: it gets EASY's
              reservation (the first expected end of the running jobs, by ``start +
              estimate``, at which it fits on a machine, chosen by the placement rule) and the
              env enters the **backfill phase**: candidates are the waiting jobs that fit now
              and do not delay it (they end by the reservation, by their estimate, or fit in
              what the head leaves free on its machine then, or run on another machine); each
              pick starts, until none is left.

  A decision no pick can change is taken without asking (``skip_forced``): a single
  candidate, or, on one machine, candidates that all start now together whatever the order
  (:func:`_order_free`); candidate 0 is picked. The rules are
  those of :mod:`schedlab.simulator.cluster.backfill_steps` with the agent's picks as the job
  order, so an agent that always picks the job a heuristic's order puts first gets that
  heuristic's schedule under the same discipline.
* rewards are paid as time passes: every waiting job costs ``Δt / max(run_j, τ) / n``
  (``bounded_slowdown``) or ``Δt / (3600 s · n)`` (``wait``) per ``Δt`` it waits, and a job
  starting pays the rest of its bounded slowdown, ``(max(1, (wait + run) / max(run, τ)) −
  wait / max(run, τ)) / n``; or once at the end (``utilisation``: busy processor time over the
  window's span). An episode's return is minus the window's mean (or its utilisation), and a
  decision pays for the jobs it leaves waiting until the next one.
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster.placement import EPS, place
from schedlab.simulator.pick.state import Packed, PickState, views

QUEUES = {"greedy": 0, "strict": 1, "easy": 2}
"""Queue discipline name -> code."""
GREEDY, STRICT, EASY = 0, 1, 2
HEAD, BACKFILL, IDLE = 0, 1, 2
"""Phases: choosing the next job in order; choosing a backfill job around EASY's head; done
deciding until the next event."""
OBJECTIVES = {"bounded_slowdown": 0, "wait": 1, "utilisation": 2}
"""Reward name -> code."""
BSLD, WAIT, UTIL = 0, 1, 2
K_, RULE_, SKIP_, OBJ_ = 0, 1, 2, 3
"""Positions in ``iparams``."""
NEVER = np.iinfo(np.int64).max // 4
"""A time after every event."""


@numba.njit(cache=True, inline="always")
def _late(s: PickState, b: int, j: int) -> bool:
    """Whether job ``j`` would still run, by its estimate, at the head's reservation."""
    return bool(s.hm[b] >= 0 and s.now[b] + s.estimate[j] > s.shadow[b])


@numba.njit(cache=True, inline="always")
def _backfill_machine(s: PickState, b: int, j: int, room: np.ndarray) -> int:
    """The machine job ``j`` may backfill on now, or -1 (``room``: free capacity with the
    head's machine cut to what the head leaves free at its reservation)."""
    rule = s.iparams[RULE_]
    if _late(s, b, j):
        return place(rule, room, s.capacity, s.demand[j])
    return place(rule, s.free[b], s.capacity, s.demand[j])


@numba.njit(cache=True, inline="always")
def _room(s: PickState, b: int) -> np.ndarray:
    """``free[b]`` with the head's machine capped at ``extra + EPS``, shape ``(m, d)``."""
    room: np.ndarray = s.free[b].copy()
    i = s.hm[b]
    if i >= 0:
        for r in range(room.shape[1]):
            room[i, r] = min(room[i, r], s.extra[b, r] + EPS)
    return room


@numba.njit(cache=True)
def _start(s: PickState, b: int, j: int, i: int) -> None:
    """Start job ``j`` on machine ``i`` now; pay its reward."""
    lo, now = s.lo[b], s.now[b]
    s.start[b, j - lo] = now
    s.machine[b, j - lo] = i
    for r in range(s.demand.shape[1]):
        s.free[b, i, r] -= s.demand[j, r]
    s.rq[b, s.rn[b]] = j
    s.rn[b] += 1
    w = s.wn[b]
    x = 0
    while s.wq[b, x] != j:
        x += 1
    for y in range(x, w - 1):
        s.wq[b, y] = s.wq[b, y + 1]
    s.wn[b] = w - 1
    s.n_started[b] += 1
    s.last[b] = max(s.last[b], now + s.runtime[j])
    m = s.free.shape[1]
    s.busy[b] += s.run_s[j] * s.demand[j, 0] / (s.capacity[0] * m)
    if s.iparams[OBJ_] == BSLD:  # the rest of its bounded slowdown (the wait was paid)
        wait_s, run, tau = (now - s.arrival[j]) * s.fparams[0], s.run_s[j], s.fparams[1]
        rest = max(1.0, (wait_s + run) / max(run, tau)) - wait_s / max(run, tau)
        s.paid[b] -= rest / (s.hi[b] - s.lo[b])


@numba.njit(cache=True, inline="always")
def _accrue(s: PickState, b: int, t: int) -> None:
    """Pay the waiting jobs' cost from now to ``t``: ``Δt / max(run, τ)`` each (bounded
    slowdown) or ``Δt / 3600 s`` (wait), over the window's jobs."""
    objective, dt = s.iparams[OBJ_], (t - s.now[b]) * s.fparams[0]
    if objective == UTIL or dt <= 0:
        return
    cost = 0.0
    for x in range(s.wn[b]):
        cost += dt / max(s.run_s[s.wq[b, x]], s.fparams[1]) if objective == BSLD else dt / 3600.0
    s.paid[b] -= cost / (s.hi[b] - s.lo[b])


@numba.njit(cache=True)
def _next_event(s: PickState, b: int) -> bool:
    """Move env ``b`` to its next event (ends, then arrivals); False if there is none."""
    t = NEVER
    if s.nxt[b] < s.hi[b]:
        t = s.arrival[s.nxt[b]]
    lo = s.lo[b]
    for x in range(s.rn[b]):
        j = s.rq[b, x]
        t = min(t, s.start[b, j - lo] + s.runtime[j])
    if t == NEVER:
        return False
    _accrue(s, b, t)
    s.now[b] = t
    x = 0
    while x < s.rn[b]:
        j = s.rq[b, x]
        if s.start[b, j - lo] + s.runtime[j] <= t:
            i = s.machine[b, j - lo]
            for r in range(s.demand.shape[1]):
                s.free[b, i, r] += s.demand[j, r]
            s.rn[b] -= 1
            s.rq[b, x] = s.rq[b, s.rn[b]]
        else:
            x += 1
    while s.nxt[b] < s.hi[b] and s.arrival[s.nxt[b]] <= t:
        s.wq[b, s.wn[b]] = s.nxt[b]
        s.wn[b] += 1
        s.nxt[b] += 1
    s.phase[b] = HEAD
    return True


@numba.njit(cache=True)
def _reserve(s: PickState, b: int, h: int) -> None:
    """EASY's reservation for the head ``h``: walking the running jobs' expected ends
    (``start + estimate``, at least the next step), the first at which ``h`` fits."""
    rn, lo, now = s.rn[b], s.lo[b], s.now[b]
    ends = np.empty(rn, dtype=np.int64)
    for x in range(rn):
        j = s.rq[b, x]
        ends[x] = max(s.start[b, j - lo] + s.estimate[j], now + 1)
    order = np.argsort(ends)
    avail = s.free[b].copy()
    s.head[b], s.shadow[b], s.hm[b] = h, NEVER, -1
    x = 0
    while x < rn:
        t = ends[order[x]]
        while x < rn and ends[order[x]] == t:
            j = s.rq[b, order[x]]
            i = s.machine[b, j - lo]
            for r in range(avail.shape[1]):
                avail[i, r] += s.demand[j, r]
            x += 1
        i = place(s.iparams[RULE_], avail, s.capacity, s.demand[h])
        if i >= 0:
            s.shadow[b], s.hm[b] = t, i
            for r in range(avail.shape[1]):
                s.extra[b, r] = avail[i, r] - s.demand[h, r]
            return


@numba.njit(cache=True)
def _candidates(s: PickState, b: int) -> None:
    """Fill ``cand[b]`` with the first ``K`` jobs the phase lets env ``b`` pick now."""
    k, rule, c = s.iparams[K_], s.iparams[RULE_], 0
    phase = s.phase[b]
    if phase == HEAD and s.queue[b] == GREEDY:
        for x in range(s.wn[b]):
            j = s.wq[b, x]
            if place(rule, s.free[b], s.capacity, s.demand[j]) >= 0:
                s.cand[b, c] = j
                c += 1
                if c == k:
                    break
    elif phase == HEAD:
        for x in range(s.wn[b]):  # asked only when a waiting job can start now
            if place(rule, s.free[b], s.capacity, s.demand[s.wq[b, x]]) >= 0:
                c = min(s.wn[b], k)
                break
        for x in range(c):
            s.cand[b, x] = s.wq[b, x]
    elif phase == BACKFILL:
        room = _room(s, b)
        for x in range(s.wn[b]):
            j = s.wq[b, x]
            if j != s.head[b] and _backfill_machine(s, b, j, room) >= 0:
                s.cand[b, c] = j
                c += 1
                if c == k:
                    break
    s.cn[b] = c


@numba.njit(cache=True)
def _apply(s: PickState, b: int, q: int) -> None:
    """Env ``b`` picks its candidate ``q``."""
    j = s.cand[b, q]
    if s.phase[b] == HEAD:
        i = place(s.iparams[RULE_], s.free[b], s.capacity, s.demand[j])
        if i >= 0:
            _start(s, b, j, i)
        elif s.queue[b] == STRICT:
            s.phase[b] = IDLE
        else:
            _reserve(s, b, j)
            s.phase[b] = BACKFILL
        return
    i = _backfill_machine(s, b, j, _room(s, b))
    if _late(s, b, j) and i == s.hm[b]:
        for r in range(s.demand.shape[1]):
            s.extra[b, r] -= s.demand[j, r]
    _start(s, b, j, i)


@numba.njit(cache=True)
def _order_free(s: PickState, b: int) -> bool:
    """Whether no pick can change what env ``b`` does now: on one machine, every job the
    phase could start (the waiting jobs that fit now; in strict and EASY's head phase every
    waiting job; in the backfill phase every eligible one) fits together (backfill jobs that
    would run at the head's reservation also in what it leaves free), so all of them start,
    in any order."""
    if s.free.shape[1] != 1:
        return False
    d, rule, phase = s.demand.shape[1], s.iparams[RULE_], s.phase[b]
    total, late = np.zeros(d), np.zeros(d)
    room = _room(s, b) if phase == BACKFILL else s.free[b]
    for x in range(s.wn[b]):
        j = s.wq[b, x]
        if phase == BACKFILL:
            if j == s.head[b] or _backfill_machine(s, b, j, room) < 0:
                continue
            if _late(s, b, j):
                late += s.demand[j]
        elif s.queue[b] == GREEDY and place(rule, room, s.capacity, s.demand[j]) < 0:
            continue
        total += s.demand[j]
    for r in range(d):
        if total[r] > s.free[b, 0, r] + EPS or (phase == BACKFILL and late[r] > s.extra[b, r]):
            return False
    return True


@numba.njit(cache=True)
def _advance(s: PickState, b: int) -> None:
    """Run env ``b`` until a decision with several candidates whose order matters (or, without
    ``skip_forced``, any decision) is pending, or until every job has started."""
    skip = s.iparams[SKIP_] != 0
    while True:
        if s.n_started[b] == s.hi[b] - s.lo[b]:
            s.done[b] = 1
            s.cn[b] = 0
            if s.iparams[OBJ_] == UTIL:
                span = (s.last[b] - s.first[b]) * s.fparams[0]
                s.paid[b] += s.busy[b] / max(span, 1e-12)
            return
        _candidates(s, b)
        c = s.cn[b]
        if c >= 2 and skip and _order_free(s, b):
            c = 1
        if c >= 2 or (c == 1 and not skip):
            return
        if c == 1:
            _apply(s, b, 0)
        elif not _next_event(s, b):
            s.done[b] = s.stalled[b] = 1  # waiting jobs that can never start
            return


@numba.njit(cache=True)
def reset_envs(p: Packed, envs: np.ndarray) -> None:
    """Restart ``envs`` on their rows ``lo .. hi − 1`` (empty cluster) up to their first
    decision; ``paid`` holds the reward of what started before it."""
    s = views(p)
    for b in envs:
        lo = s.lo[b]
        for i in range(s.free.shape[1]):
            s.free[b, i, :] = s.capacity
        s.wn[b] = s.rn[b] = s.n_started[b] = 0
        s.nxt[b] = lo
        s.start[b, :] = -1
        s.machine[b, :] = -1
        s.done[b] = s.stalled[b] = 0
        s.paid[b] = s.busy[b] = 0.0
        s.cn[b] = 0
        s.hm[b], s.head[b] = -1, -1
        if s.hi[b] == lo:
            s.done[b] = 1
            continue
        s.first[b] = s.last[b] = s.now[b] = s.arrival[lo]
        while s.nxt[b] < s.hi[b] and s.arrival[s.nxt[b]] <= s.now[b]:
            s.wq[b, s.wn[b]] = s.nxt[b]
            s.wn[b] += 1
            s.nxt[b] += 1
        s.phase[b] = HEAD
        _advance(s, b)


@numba.njit(cache=True)
def step_envs(p: Packed, envs: np.ndarray, actions: np.ndarray) -> None:
    """Env ``envs[x]`` takes action ``actions[x]`` (``1 + q``: its candidate ``q``; 0, or a
    position without a candidate: candidate 0, the earliest arrived) and runs to its next
    decision; ``paid`` holds the reward earned meanwhile (a done env earns 0)."""
    step_state(views(p), envs, actions)


@numba.njit(cache=True, inline="always")
def step_state(s: PickState, envs: np.ndarray, actions: np.ndarray) -> None:
    for x in range(envs.size):
        b = envs[x]
        s.paid[b] = 0.0
        if s.done[b]:
            continue
        q = actions[x] - 1
        if q < 0 or q >= s.cn[b]:
            q = 0
        _apply(s, b, q)
        _advance(s, b)


@numba.njit(cache=True)
def masks(p: Packed, envs: np.ndarray, out: np.ndarray) -> None:
    """``out[x, 1 + q]``: env ``envs[x]`` has a candidate ``q``; column 0 (void: the earliest
    arrived candidate) is always valid. ``out``: bool, ``(n, K + 1)``."""
    s = views(p)
    for x in range(envs.size):
        c = s.cn[envs[x]]
        out[x, 0] = True
        for q in range(out.shape[1] - 1):
            out[x, q + 1] = q < c
