"""Compiled kernels of the pick engine (:mod:`.engine`; numba, ``cache=True``).

Every kernel takes the :data:`PickState` (a namedtuple of arrays) and env indices. The
semantics, written once here and documented in :mod:`schedlab.simulator.pick`:

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

  A decision with a single candidate is taken without asking (``skip_forced``). The rules are
  those of :mod:`schedlab.simulator.cluster.backfill_steps` with the agent's picks as the job
  order, so an agent that always picks the job a heuristic's order puts first gets that
  heuristic's schedule under the same discipline.
* rewards are paid as jobs start (``bounded_slowdown``: ``−bsld_j / n``; ``wait``: ``−wait_j /
  (3600 s · n)``), or once at the end (``utilisation``: busy processor time over the window's
  span), so an episode's return is minus the window's mean (or its utilisation).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from schedlab.simulator.cluster.placement import EPS, place

PickState = namedtuple(
    "PickState",
    "arrival runtime estimate demand run_s capacity iparams fparams "
    "lo hi now nxt free wq wn rq rn start machine phase queue head shadow hm extra cand cn "
    "n_started done stalled paid first last busy",
)
"""Views of the pick engine's arrays by name (``B`` envs, ``n`` jobs, ``W`` jobs per env at most,
``m`` machines, ``d`` resources, ``K`` candidates); kernels and the engine read and write the
state through them (:func:`unpack`).

Jobs (shared): ``arrival``, ``runtime`` (steps it runs), ``estimate`` (steps the scheduler
sees) (int64, ``(n,)``), ``demand`` (float64, ``(n, d)``), ``run_s`` (float64, ``(n,)``: run time
in seconds), ``capacity`` (float64, ``(d,)``: one machine), ``iparams`` (int64: ``K``, placement
rule, skip forced decisions, objective), ``fparams`` (float64: seconds per step, τ of the
bounded slowdown in seconds). Per env: ``lo``/``hi`` (rows), ``now``, ``nxt`` (next row to
arrive), ``free`` (``(B, m, d)``), ``wq``/``wn`` (waiting rows in arrival order, ``(B, W)``, and
their count), ``rq``/``rn`` (running rows), ``start``/``machine`` (``(B, W)``, by row − lo, -1
before), ``phase`` (:data:`HEAD`, :data:`BACKFILL` or :data:`IDLE`), ``queue`` (the discipline,
:data:`QUEUES`), ``head`` (EASY's head row), ``shadow``/``hm``/``extra`` (its reservation: time,
machine, ``(B, d)`` capacity it leaves free there), ``cand``/``cn`` (``(B, K)`` candidate rows of
the pending decision, and their count), ``n_started``, ``done``, ``stalled`` (0 or 1), ``paid``
(reward since the last decision), ``first``/``last`` (first arrival, last finish), ``busy``
(processor seconds run, as a share of the cluster).
"""

Packed = namedtuple("Packed", "jobs_i jobs_f params iparams env_i env_f lists cand free")
"""The same arrays packed into nine, which is what crosses into compiled code (unboxing a
namedtuple costs about half a microsecond per array, per call): ``jobs_i`` (``(n, 3)``:
arrival, runtime, estimate), ``jobs_f`` (``(n, 1 + d)``: run_s, demand), ``params`` (``2 + d``:
fparams, capacity), ``iparams``, ``env_i`` (``(B, 17)``: the per-env integers in
:data:`ENV_INTS` order), ``env_f`` (``(B, 2 + d)``: paid, busy, extra), ``lists`` (``(B, 4, W)``:
wq, rq, start, machine), ``cand``, ``free``."""
ENV_INTS = (
    "lo", "hi", "now", "nxt", "wn", "rn", "phase", "queue", "head", "shadow", "hm", "cn",
    "n_started", "done", "stalled", "first", "last",
)  # fmt: skip
"""Columns of ``env_i``."""


def pack(n: int, d: int, n_envs: int, m: int, width: int, visible: int) -> Packed:
    """Zeroed arrays for ``n`` jobs, ``d`` resources, ``n_envs`` envs of ``m`` machines, at
    most ``width`` jobs each, ``visible`` candidates."""
    i64 = np.int64
    return Packed(
        np.zeros((n, 3), i64), np.zeros((n, 1 + d)), np.zeros(2 + d), np.zeros(4, i64),
        np.zeros((n_envs, len(ENV_INTS)), i64), np.zeros((n_envs, 2 + d)),
        np.zeros((n_envs, 4, width), i64), np.zeros((n_envs, visible), i64),
        np.zeros((n_envs, m, d)),
    )  # fmt: skip


@numba.njit(cache=True, inline="always")
def views(p: Packed) -> PickState:
    e, f, q = p.env_i, p.env_f, p.lists
    return PickState(
        p.jobs_i[:, 0], p.jobs_i[:, 1], p.jobs_i[:, 2], p.jobs_f[:, 1:], p.jobs_f[:, 0],
        p.params[2:], p.iparams, p.params[:2], e[:, 0], e[:, 1], e[:, 2], e[:, 3], p.free,
        q[:, 0], e[:, 4], q[:, 1], e[:, 5], q[:, 2], q[:, 3], e[:, 6], e[:, 7], e[:, 8], e[:, 9],
        e[:, 10], f[:, 2:], p.cand, e[:, 11], e[:, 12], e[:, 13], e[:, 14], f[:, 0], e[:, 15],
        e[:, 16], f[:, 1],
    )  # fmt: skip


def unpack(p: Packed) -> PickState:
    """The named views of ``p`` (numpy views: writing them writes ``p``)."""
    e, f, q = p.env_i, p.env_f, p.lists
    named = dict(zip(ENV_INTS, e.T, strict=True))
    return PickState(
        arrival=p.jobs_i[:, 0], runtime=p.jobs_i[:, 1], estimate=p.jobs_i[:, 2],
        demand=p.jobs_f[:, 1:], run_s=p.jobs_f[:, 0], capacity=p.params[2:], iparams=p.iparams,
        fparams=p.params[:2], free=p.free, wq=q[:, 0], rq=q[:, 1], start=q[:, 2],
        machine=q[:, 3], extra=f[:, 2:], cand=p.cand, paid=f[:, 0], busy=f[:, 1], **named,
    )  # fmt: skip


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


@numba.njit(cache=True, inline="always")
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
    n = s.hi[b] - s.lo[b]
    wait_s = (now - s.arrival[j]) * s.fparams[0]
    objective = s.iparams[OBJ_]
    if objective == BSLD:
        run = s.run_s[j]
        s.paid[b] -= max(1.0, (wait_s + run) / max(run, s.fparams[1])) / n
    elif objective == WAIT:
        s.paid[b] -= wait_s / 3600.0 / n


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
def _advance(s: PickState, b: int) -> None:
    """Run env ``b`` until a decision with several candidates (or one, without
    ``skip_forced``) is pending, or until every job has started."""
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
