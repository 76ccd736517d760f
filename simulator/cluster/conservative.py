"""Conservative backfilling (Mu'alem & Feitelson 2001), compiled on :mod:`.core`.

Every job gets a **reservation** when it becomes ready: the earliest slot in the profile of
free capacity (the running jobs' expected ends, ``start + estimate``, and the reservations
already made) that delays no reservation, on the machine the placement rule picks among those
fitting then. When a job ends, the waiting jobs are **compressed** in order (the order's score,
ties in admission order): each gives its slot back and takes the earliest one, so
reservations only move earlier and no job starts after its first reservation while jobs end by
their estimates. The jobs whose reservation is *now* start (reservation times are events).

Kept incrementally (:mod:`.profiles`): one profile per machine, where a reservation touches its
machine only; a job starting at its reservation or ending at its expected end changes nothing,
one ending earlier gives capacity back, one past its estimate holds its machine one step more.
Compression runs only where it can move a job: under first fit, only after capacity came back
or after a compression that moved a job (``settled``); otherwise it would move nothing — a
compression that moved nothing leaves a fixed point, and so does a remake (reservations made in
order, each the earliest given those before it), and the fixed point holds while the profile
only loses capacity (new reservations, a job past its estimate whose reservations still fit) or
keeps it (time passing, starts at reservations, ends at expected ends): each job's slot is
still free and nothing earlier appeared, and under first fit the machines fitting then are
fewer but include its own, the lowest before, whatever the order. Other placement rules may
move a job to another machine at the same time, so they compress whenever a job ends. A
reservation made void (a job past its estimate on a reserved machine) remakes all.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

import numba
import numpy as np

from schedlab.simulator.cluster import core, heap, profiles
from schedlab.simulator.cluster.order import order_now, static_scores
from schedlab.simulator.cluster.placement import EPS, FIRST_FIT
from schedlab.simulator.cluster.profiles import Profile

Prec = core.Precedence


Book = namedtuple("Book", "res_t res_m expected running run where due listed touched")
"""Conservative's own arrays of one jobset (``(n,)``, int64 unless said): each job's
reservation ``res_t`` (time; -1: none yet) and ``res_m`` (machine), its ``expected`` end and
whether it is ``running`` (bool); the running jobs ``run`` in any order (``where[j]``: j's
index there); the jobs ``due`` now (``listed[j]``: when j last was); and the machines
``touched`` by jobs past their estimates."""


@numba.njit(cache=True)
def _book(n: int) -> Book:
    """A :class:`Book` for ``n`` jobs, nothing reserved, nothing running."""
    return Book(
        np.full(n, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.bool_),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )


@numba.njit(cache=True)
def _ended(
    ended: np.ndarray, k: int, t: int, p: Profile, b: Book, nr: int, c: core.Core
) -> tuple[Profile, int, bool]:
    """The ``k`` jobs of ``ended`` that ended at ``t`` leave the ``nr`` running ones, those
    before their expected end giving that capacity back: the profile, the jobs running and
    whether capacity came back."""
    back = False
    for x in range(k):
        j = ended[x]
        b.running[j] = False
        nr -= 1
        b.run[b.where[j]] = b.run[nr]
        b.where[b.run[nr]] = b.where[j]
        if b.expected[j] > t:
            p = profiles.change(p, c.machine[j], t, b.expected[j], c.demand[j], -1.0, t)
            back = True
    return p, nr, back


@numba.njit(cache=True)
def _overran(
    t: int, p: Profile, b: Book, exp_t: np.ndarray, exp_j: np.ndarray, e: int, c: core.Core
) -> tuple[Profile, np.ndarray, np.ndarray, int, int]:
    """The running jobs past their estimates at ``t`` (the lazy heap ``exp_t``/``exp_j`` of
    expected ends, ``e`` items: ``b.expected[j]`` is current) hold their machine one step
    more, each machine listed in ``b.touched``: ``(profile, exp_t, exp_j, e, machines)``."""
    nt = 0
    while e and exp_t[0] <= t:
        j = exp_j[0]
        key = exp_t[0]
        e = heap.pop(exp_t, exp_j, e)
        if not b.running[j] or b.expected[j] != key:
            continue
        i = c.machine[j]
        p = profiles.change(p, i, t, t + 1, c.demand[j], 1.0, t)
        b.expected[j] = t + 1
        exp_t, exp_j, e = heap.add(exp_t, exp_j, e, t + 1, j)  # not popped again at t
        b.touched[nt] = i
        nt += 1
    return p, exp_t, exp_j, e, nt


@numba.njit(cache=True, inline="always")
def _due(
    t: int, rh_t: np.ndarray, rh_j: np.ndarray, rh: int, b: Book, nd: int, once: bool, c: core.Core
) -> tuple[int, int]:
    """Pop the reservations due by ``t`` off the lazy heap ``rh_t``/``rh_j`` (``rh`` items:
    ``b.res_t[j]`` is current) onto ``b.due`` (``nd`` listed): of the jobs not started, each
    ``once`` at ``t`` or as often as it is due. The new ``(rh, nd)``."""
    while rh and rh_t[0] <= t:
        j = rh_j[0]
        key = rh_t[0]
        rh = heap.pop(rh_t, rh_j, rh)
        if c.start[j] < 0 and b.res_t[j] == key and (not once or b.listed[j] != t):
            if once:
                b.listed[j] = t
            b.due[nd] = j
            nd += 1
    return rh, nd


@numba.njit(cache=True)
def _void(t: int, p: Profile, b: Book, nt: int, nd: int, estimate: np.ndarray) -> bool:
    """Whether a reservation due now (``b.due[:nd]``) is on a machine that a job past its
    estimate put past its capacity (``b.touched[:nt]``)."""
    for x in range(nt):
        i = b.touched[x]
        s = profiles.locate(p.times, i, p.cnt[i], t)
        over = False
        for y in range(p.vals.shape[2]):
            over = over or p.vals[i, s, y] < -EPS
        for z in range(nd if over else 0):
            j = b.due[z]
            if b.res_m[j] == i and estimate[j] > 0:
                return True
    return False


@numba.njit(cache=True)
def _running_only(t: int, p: Profile, b: Book, nr: int, c: core.Core) -> Profile:
    """The profile from ``t`` on holding the ``nr`` running jobs only (to their expected
    ends), no reservation."""
    for i in range(p.cnt.shape[0]):
        p.cnt[i] = 1
        p.times[i, 0] = t
        for y in range(p.vals.shape[2]):
            p.vals[i, 0, y] = c.free[i, y]
    for x in range(nr):
        j = b.run[x]
        p = profiles.take(p, c.machine[j], b.expected[j], core.NEVER, c.demand[j], -1.0, t)
    for i in range(p.cnt.shape[0]):
        profiles.index(p, i, t)
    return p


@numba.njit(cache=True)
def _reserve_each(
    order: np.ndarray,
    again: bool,
    void: bool,
    t: int,
    p: Profile,
    b: Book,
    rh_t: np.ndarray,
    rh_j: np.ndarray,
    rh: int,
    jobs: core.Jobs,
    how: core.Setting,
) -> tuple[Profile, np.ndarray, np.ndarray, int, bool]:
    """Reserve the jobs of ``order`` in turn at ``t``, each the earliest slot that delays no
    reservation (:func:`.profiles.reserve`), its time on the reservation heap
    ``rh_t``/``rh_j`` (``rh`` items): arrivals, or ``again`` the jobs reserved before (those
    never fitting skipped), each giving its slot back first (a compression) unless ``void``
    (a remake: the profile holds the running jobs only). The new ``(profile, rh_t, rh_j,
    rh)`` and whether a reservation moved (or was remade)."""
    moved = False
    for x in range(order.shape[0]):
        j = order[x]
        t0, i0 = b.res_t[j], b.res_m[j]
        if again and (t0 == core.NEVER or (t0 < 0 and not void)):
            continue
        need, dur = jobs.demand[j], jobs.estimate[j]
        if again and not void:  # compression: give the slot back first
            p = profiles.change(p, i0, t0, t0 + dur, need, -1.0, t)
        tj, ij, p = profiles.reserve(p, need, dur, t, how.rule)
        b.res_t[j], b.res_m[j] = tj, ij
        if ij >= 0 and (void or tj != t0 or ij != i0):  # an arrival's t0 is -1
            moved = True
            rh_t, rh_j, rh = heap.add(rh_t, rh_j, rh, tj, j)
    return p, rh_t, rh_j, rh, moved


@numba.njit(cache=True)
def _start_due(
    t: int,
    nd: int,
    h: int,
    r: int,
    nr: int,
    b: Book,
    exp_t: np.ndarray,
    exp_j: np.ndarray,
    e: int,
    estimate: np.ndarray,
    c: core.Core,
    g: core.Graph,
) -> tuple[int, int, int, np.ndarray, np.ndarray, int, int]:
    """Start the jobs of ``b.due[:nd]`` (in order) whose reservation is ``t`` on its machine
    (:func:`.core.begin`), each running to its expected end by its ``estimate`` (on the lazy
    heap ``exp_t``/``exp_j``, ``e`` items): ``(h, r, nr, exp_t, exp_j, e, jobs started)``."""
    begun = 0
    for x in range(nd):
        j = b.due[x]
        if c.start[j] >= 0 or b.res_t[j] != t:  # listed twice, or moved by a remake
            continue
        h, r = core.begin(j, t, b.res_m[j], h, r, c, g)
        begun += 1
        b.running[j] = True
        b.run[nr], b.where[j] = j, nr
        nr += 1
        b.expected[j] = t + estimate[j]
        exp_t, exp_j, e = heap.add(exp_t, exp_j, e, b.expected[j], j)
    return h, r, nr, exp_t, exp_j, e, begun


@numba.njit(cache=True)
def _jobset(jobs: core.Jobs, out: core.Out, lo: int, how: core.Setting, prec: Prec) -> int:
    """One jobset under conservative backfilling; returns the status."""
    capacity, m, score, rule, knob, static, _, _, _ = how
    estimate, ready, reserved = jobs.estimate, out.ready, out.reserved
    n = jobs.runtime.shape[0]
    c, g, r = core.new(jobs, out, how, lo, prec)
    free, _, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, ended_by = c
    t = core.next_event(core.NEVER, 0, r, end_t, rel_t)
    p = profiles.new(capacity, m, t)
    b = _book(n)
    res_t, due = b.res_t, b.due
    # the order's scores (a dynamic order's: at the current decision)
    keys, in_rows = static_scores(score, jobs, knob, static, n)
    # jobs are admitted in row order without a DAG: an order that never ranks a later row
    # higher (FCFS) keeps the queue and the arrivals in order, with nothing to sort
    in_rows = in_rows and g.task.shape[0] == 0
    exp_t = np.empty(n + 1, dtype=np.int64)  # expected ends (lazy: expected[j] is current)
    exp_j = np.empty(n + 1, dtype=np.int64)
    rh_t = np.empty(n + 1, dtype=np.int64)  # reservation times (lazy: res_t[j] is current)
    rh_j = np.empty(n + 1, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    e = rh = live = nr = 0
    settled = True  # compression would move nothing
    h = q = started = 0
    while started < n and t != core.NEVER:
        h, k = core.complete(t, h, end_t, end_j, free, demand, machine, ended_by)
        q0 = q
        r, q = core.admit(t, r, q, rel_t, rel_r, queue, pos)
        p, nr, back = _ended(ended_by, k, t, p, b, nr, c)
        settled = settled and not back
        p, exp_t, exp_j, e, nt = _overran(t, p, b, exp_t, exp_j, e, c)
        rh, nd = _due(t, rh_t, rh_j, rh, b, 0, True, c)  # due now (listed once)
        nf = 0
        for x in range(q0, q):
            fresh[nf] = queue[x]
            nf += 1
        live += nf
        if not live:
            settled = True
        else:
            void = _void(t, p, b, nt, nd, estimate)
            qn = 0
            if void or (k > 0 and (not settled or rule != FIRST_FIT)):
                q = qn = core.compact(q, queue, pos, start)  # the waiting jobs, then in order
                for x in range(qn):
                    order[x] = queue[x]
                if not in_rows:
                    order_now(order[:qn], pos, keys, jobs, ready, free, t, how)
            if void:  # every reservation again, in order, over the running jobs only
                p = _running_only(t, p, b, nr, c)
            p, rh_t, rh_j, rh, moved = _reserve_each(
                order[:qn], True, void, t, p, b, rh_t, rh_j, rh, jobs, how
            )
            if qn:
                settled = void or not moved
            nf0 = nf
            if void:
                nf = 0  # the arrivals were reserved too, in order
            if not in_rows:
                order_now(fresh[:nf], pos, keys, jobs, ready, free, t, how)
            p, rh_t, rh_j, rh, _ = _reserve_each(
                fresh[:nf], False, False, t, p, b, rh_t, rh_j, rh, jobs, how
            )
            for x in range(nf0):  # the first reservation of each arrival
                reserved[fresh[x]] = res_t[fresh[x]]
            rh, nd = _due(t, rh_t, rh_j, rh, b, nd, False, c)  # (re)made at t: start now
            order_now(due[:nd], pos, keys, jobs, ready, free, t, how)
            h, r, nr, exp_t, exp_j, e, begun = _start_due(
                t, nd, h, r, nr, b, exp_t, exp_j, e, estimate, c, g
            )
            started += begun
            live -= begun
            if q > 2 * live + 64:  # drop the started jobs from the queue
                q = core.compact(q, queue, pos, start)
        while rh and (start[rh_j[0]] >= 0 or res_t[rh_j[0]] != rh_t[0]):
            rh = heap.pop(rh_t, rh_j, rh)
        t = core.next_event(rh_t[0] if rh else core.NEVER, h, r, end_t, rel_t)
    return 0 if started == n else core.STALLED


def run(
    jobs: core.Jobs, bounds: np.ndarray, how: core.Setting, prec: Prec
) -> tuple[core.Out, np.ndarray]:
    """Every jobset under conservative backfilling, as :func:`.core.each_jobset` (see
    :func:`.disciplines.run_jobsets`), but the loop over jobsets is Python's: the compiled rule
    is :func:`_jobset` alone (a compiled loop around it would compile all of it once more, 2 s
    of a first run's 13)."""
    out, status = core.outputs(jobs.arrival.shape[0], bounds.shape[0] - 1)
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
        rows = (core.Jobs(*(a[lo:hi] for a in jobs)), core.Out(*(a[lo:hi] for a in out)))
        status[b] = _jobset(*rows, lo, how, prec)
    return out, status
