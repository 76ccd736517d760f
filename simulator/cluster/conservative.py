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
from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import core, heap, profiles
from schedlab.simulator.cluster.order import order_now, ranking
from schedlab.simulator.cluster.placement import EPS, FIRST_FIT

Prec = core.Precedence


@numba.njit(cache=True, inline="always")
def _reserve_each(
    order: np.ndarray,
    again: bool,
    void: bool,
    t: int,
    demand: np.ndarray,
    estimate: np.ndarray,
    rule: int,
    capacity: np.ndarray,
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    theta: np.ndarray,
    low: np.ndarray,
    res_t: np.ndarray,
    res_m: np.ndarray,
    rh_t: np.ndarray,
    rh_j: np.ndarray,
    rh: int,
    avail: np.ndarray,
    fits_at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """Reserve the jobs of ``order`` in turn at ``t``, each the earliest slot that delays no
    reservation (:func:`.profiles.reserve`), its time on the reservation heap
    ``rh_t``/``rh_j`` (``rh`` items): arrivals, or ``again`` the jobs reserved before (those
    never fitting skipped), each giving its slot back first (a compression) unless ``void``
    (a remake: the profile holds the running jobs only). The new ``(times, vals, rh_t, rh_j,
    rh)`` and whether a reservation moved (or was remade)."""
    moved = False
    for x in range(order.shape[0]):
        j = order[x]
        t0, i0 = res_t[j], res_m[j]
        if again and (t0 == core.NEVER or (t0 < 0 and not void)):
            continue
        need, dur = demand[j], estimate[j]
        if again and not void:  # compression: give the slot back first
            times, vals = profiles.change(
                times, vals, cnt, theta, low, i0, t0, t0 + dur, need, -1.0, t
            )
        tj, ij, times, vals = profiles.reserve(
            times, vals, cnt, theta, low, need, dur, t, rule, capacity, avail, fits_at
        )
        res_t[j], res_m[j] = tj, ij
        if ij >= 0 and (void or tj != t0 or ij != i0):  # an arrival's t0 is -1
            moved = True
            rh_t, rh_j, rh = heap.add(rh_t, rh_j, rh, tj, j)
    return times, vals, rh_t, rh_j, rh, moved


@numba.njit(cache=True)
def _jobset(
    arrival: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    draw: np.ndarray,
    start: np.ndarray,
    machine: np.ndarray,
    reserved: np.ndarray,
    ready: np.ndarray,
    lo: int,
    capacity: np.ndarray,
    m: int,
    score: Any,
    rule: int,
    knob: float,
    static: bool,
    prec: Prec,
) -> int:
    """One jobset under conservative backfilling (its :class:`.core.Jobs`, :class:`.core.Out`
    and :class:`.core.Setting` one field each: see :func:`run`); returns the status."""
    jobs = core.Jobs(arrival, runtime, estimate, seen, demand, draw)
    out = core.Out(start, machine, reserved, ready)
    how = core.Setting(capacity, m, score, rule, knob, static, 0, False, False)
    n, d = jobs.runtime.shape[0], capacity.shape[0]
    c, g, r = core.new(jobs, out, how, lo, prec)
    free, runtime, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, ended_by = c
    t = core.next_event(core.NEVER, 0, r, end_t, rel_t)
    times, vals, cnt, theta, low = profiles.new(capacity, m, t)
    avail, fits_at = np.empty((m, d)), np.empty(m, dtype=np.int64)  # work space
    rank, in_rows = ranking(jobs, ready, pos, how)
    # jobs are admitted in row order without a DAG: an order that never ranks a later row
    # higher (FCFS) keeps the queue and the arrivals in order, with nothing to sort
    in_rows = in_rows and g.task.shape[0] == 0
    res_t = np.full(n, -1, dtype=np.int64)  # reservation: time (-1: none yet) and machine
    res_m = np.full(n, -1, dtype=np.int64)
    exp_t = np.empty(n + 1, dtype=np.int64)  # expected ends (lazy: expected[j] is current)
    exp_j = np.empty(n + 1, dtype=np.int64)
    expected = np.zeros(n, dtype=np.int64)
    running = np.zeros(n, dtype=np.bool_)
    run = np.empty(n, dtype=np.int64)  # the running jobs, any order (where[j]: j's index)
    where = np.empty(n, dtype=np.int64)
    nr = 0
    rh_t = np.empty(n + 1, dtype=np.int64)  # reservation times (lazy: res_t[j] is current)
    rh_j = np.empty(n + 1, dtype=np.int64)
    due = np.empty(n, dtype=np.int64)  # due now; listed[j]: when j was last
    listed = np.full(n, -1, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    e = rh = live = 0
    settled = True  # compression would move nothing
    h = q = started = 0
    while started < n and t != core.NEVER:
        h, k = core.complete(t, h, end_t, end_j, free, demand, machine, ended_by)
        q0 = q
        r, q = core.admit(t, r, q, (rel_t, rel_r), (queue, pos))
        ended = k > 0
        for x in range(k):
            j = ended_by[x]
            running[j] = False
            nr -= 1
            run[where[j]] = run[nr]
            where[run[nr]] = where[j]
            if expected[j] > t:  # before its expected end: capacity comes back
                times, vals = profiles.change(
                    times, vals, cnt, theta, low, machine[j], t, expected[j], demand[j], -1.0, t
                )
                settled = False
        nt = 0
        while e and exp_t[0] <= t:  # running past their estimates: held one step more
            j = exp_j[0]
            key = exp_t[0]
            e = heap.pop(exp_t, exp_j, e)
            if not running[j] or expected[j] != key:
                continue
            i = machine[j]
            times, vals = profiles.change(
                times, vals, cnt, theta, low, i, t, t + 1, demand[j], 1.0, t
            )
            expected[j] = t + 1
            exp_t, exp_j, e = heap.add(exp_t, exp_j, e, t + 1, j)  # not popped again at t
            touched[nt] = i
            nt += 1
        nd = 0
        while rh and rh_t[0] <= t:  # reservations due now (lazy heap: current ones only)
            j = rh_j[0]
            key = rh_t[0]
            rh = heap.pop(rh_t, rh_j, rh)
            if start[j] < 0 and res_t[j] == key and listed[j] != t:
                listed[j] = t
                due[nd] = j
                nd += 1
        nf = 0
        for x in range(q0, q):
            fresh[nf] = queue[x]
            nf += 1
        live += nf
        if not live:
            settled = True
        else:
            void = False
            for x in range(nt):  # a reservation due now on a machine past its capacity
                i = touched[x]
                s = profiles.locate(times, i, cnt[i], t)
                over = False
                for y in range(d):
                    over = over or vals[i, s, y] < -EPS
                for z in range(nd if over else 0):
                    j = due[z]
                    void = void or (res_m[j] == i and estimate[j] > 0)
            qn = 0
            if void or (ended and (not settled or rule != FIRST_FIT)):
                q = qn = core.compact(q, queue, pos, start)  # the waiting jobs, then in order
                for x in range(qn):
                    order[x] = queue[x]
            if void:  # every reservation again, in order, over the running jobs only
                for i in range(m):
                    cnt[i] = 1
                    times[i, 0] = t
                    for y in range(d):
                        vals[i, 0, y] = free[i, y]
                for x in range(nr):
                    j = run[x]
                    times, vals = profiles.take(
                        times, vals, cnt, machine[j], expected[j], core.NEVER, demand[j], -1.0, t
                    )
                for i in range(m):
                    profiles.index(times, vals, cnt, i, theta, low, t)
            nf0 = nf
            if void:
                nf = 0  # the arrivals are in the queue, reserved with it in order
            # the waiting jobs compressed (all of them if void), then the arrivals, each in order
            for part in range(2):
                first = part == 0
                these = order[:qn] if first else fresh[:nf]
                if not in_rows:
                    order_now(these, rank, free, t)
                times, vals, rh_t, rh_j, rh, moved = _reserve_each(
                    these,
                    first,
                    void and first,
                    t,
                    demand,
                    estimate,
                    rule,
                    capacity,
                    times,
                    vals,
                    cnt,
                    theta,
                    low,
                    res_t,
                    res_m,
                    rh_t,
                    rh_j,
                    rh,
                    avail,
                    fits_at,
                )
                if first and qn:
                    settled = void or not moved
            for x in range(nf0):  # the first reservation of each arrival
                reserved[fresh[x]] = res_t[fresh[x]]
            while rh and rh_t[0] <= t:  # (re)made at t: start now
                j = rh_j[0]
                key = rh_t[0]
                rh = heap.pop(rh_t, rh_j, rh)
                if start[j] < 0 and res_t[j] == key:
                    due[nd] = j
                    nd += 1
            order_now(due[:nd], rank, free, t)
            for x in range(nd):
                j = due[x]
                if start[j] >= 0 or res_t[j] != t:  # listed twice, or moved by a remake
                    continue
                h, r = core.begin(
                    j, t, res_m[j], h, r, free, demand, runtime, start, machine, end_t, end_j, g
                )
                started += 1
                running[j] = True
                run[nr], where[j] = j, nr
                nr += 1
                expected[j] = t + estimate[j]
                exp_t, exp_j, e = heap.add(exp_t, exp_j, e, expected[j], j)
                live -= 1
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
    of a first run's 13), and it takes the jobs', outputs' and setting's fields one by one
    (typing three namedtuples more at every call made many small jobsets 2x slower)."""
    n = jobs.arrival.shape[0]
    out = core.Out(*(np.full(n, v, dtype=np.int64) for v in (-1, -1, core.NEVER, -1)))
    status = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
        arrival, runtime, estimate, seen, demand, draw = (a[lo:hi] for a in jobs)
        start, machine, reserved, ready = (a[lo:hi] for a in out)
        rows = (arrival, runtime, estimate, seen, demand, draw, start, machine, reserved, ready)
        status[b] = _jobset(*rows, lo, *how[:6], prec)
    return out, status
