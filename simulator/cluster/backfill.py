"""Queue disciplines of production batch schedulers: strict FCFS-style queues, EASY and
conservative backfilling, over any job order and placement rule (compiled, whole queue).

A **queue discipline** decides which waiting jobs may start now, given a **job order** (a
heuristic's compiled score, :mod:`.dispatch`) and a **placement rule** (:mod:`.placement`):

``strict``        jobs start in order while the first one fits; a job that does not fit blocks
                  every job behind it.
``easy``          (EASY backfilling, Lifka 1995) as strict, then the first waiting job (the
                  *head*) gets a **reservation**: the earliest time its demand is free on some
                  machine, assuming running jobs end at ``start + estimate``. A later job may
                  start now if it fits now and does not delay that reservation: it ends (by its
                  estimate) before the reservation, or it uses only capacity of the reserved
                  machine the head will not need then, or another machine.
``conservative``  (Mu'alem & Feitelson 2001) every job gets a reservation when it arrives: the
                  earliest slot in the profile of free capacity (the running jobs' estimated
                  ends and the reservations already made) that delays no reservation. When a
                  job ends the waiting jobs are *compressed* in order: each
                  gives its slot back and takes the earliest one, so reservations only move
                  earlier and no job starts after its first reservation while jobs end by their
                  estimates. The jobs whose reservation is *now* start.

Where reservations live: EASY's (a time and a machine for the head job) is recomputed at every
decision from the running jobs' ``start + estimate`` (a job that runs past its estimate is
expected to end at the next step); conservative's are kept per waiting job across decisions
(``res_t``, ``res_m``), compressed when jobs end and made again, all of them, when a job past
its estimate voids one. Under a static order and first fit (:func:`_conservative_jobset`) they
live in one persistent profile per machine (sorted segments: the running jobs' expected ends and
the reservations on it), and compression runs only where it can move a job; otherwise
(:func:`_one_jobset`) they are laid over a profile of all machines rebuilt from the running
jobs at each decision. The first reservation each job got is returned (``reserved``) so that
:func:`~schedlab.simulator.check.check_discipline` can verify that jobs start no later.

Events are arrivals, (actual) completions and, for conservative, reservation times (a job moved
earlier by compression can leave a later reservation at a time nothing ends); jobs run for
their ``runtime`` (the caller passes the recorded duration, or its minimum with the estimate
when jobs are killed at their request: :attr:`~schedlab.simulator.config.ClusterConfig.overrun`);
order and reservations see only ``estimate``. Per decision: EASY costs ``O(k log k + Q·m·d)``
(``k`` the running jobs expected to end before the head's reservation, walked in order on a
persistent heap of expected ends; Q waiting jobs, m machines, d resources). Conservative under a
static order and first fit: ``O(m + Σ s_i·d)`` per arrival's reservation (a pass over the
machines' level index, then a scan of the ``s_i`` segments of each machine not ruled out, up to
the best time so far), ``O(p·d)`` to lay it on its machine (``p`` that machine's segments),
``O(log n)`` per start, completion and reservation event (heaps), and a compression (``O(Q)``
reservations remade, plus sorting the queue) only after capacity came back early; otherwise
``O(Q·P·m·d)`` with ``P ≤ R + 2Q`` profile segments (R running jobs), rebuilt at every decision
with the Q reservations laid over it. :mod:`.backfill_steps` is the same semantics written to be
read (the step engine's path), which the tests hold this module to, and both compiled paths to
each other.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import precedence
from schedlab.simulator.cluster.dispatch import alignment_of
from schedlab.simulator.cluster.list_scheduler import STALLED, heap_pop, heap_push
from schedlab.simulator.cluster.placement import EPS, FIRST_FIT, fits, place

GREEDY, STRICT, EASY, CONSERVATIVE = range(4)
DISCIPLINES = {"greedy": GREEDY, "strict": STRICT, "easy": EASY, "conservative": CONSERVATIVE}
"""Queue discipline name -> code; ``greedy`` is the work-conserving list scheduler
(:mod:`.list_scheduler`: start any job that fits, in order), the others are this module's."""
NEVER = np.iinfo(np.int64).max // 4
"""A time later than any event."""


@numba.njit(cache=True)
def _order(
    queue: np.ndarray, q: int, seen: np.ndarray, arrival: np.ndarray, demand: np.ndarray,
    free: np.ndarray, capacity: np.ndarray, now: int, score: Any, knob: float,
    static: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The ``q`` waiting jobs of ``queue`` (kept in arrival order) by score, highest first; ties
    keep arrival order. Scores see the estimate as the job's duration; packing scores see the
    first machine's free capacity. ``static``: the negated scores of a static order, computed
    once (empty for a dynamic one); already in order (FCFS) they need no sort."""
    keys = np.empty(q)
    if static.shape[0]:
        for k in range(q):
            keys[k] = static[queue[k]]
        ordered = True
        for k in range(1, q):
            if keys[k] < keys[k - 1]:
                ordered = False
                break
        if ordered:  # a view: the queue is compacted only once the order is used
            return queue[:q]
    else:
        capacity2 = 0.0
        for r in range(capacity.shape[0]):
            capacity2 += capacity[r] * capacity[r]
        for k in range(q):
            j = queue[k]
            al = alignment_of(free[0], demand[j])
            keys[k] = -score(seen[j], arrival[j], j, now, knob, al, capacity2, demand[j, 0])
    return queue[:q][np.argsort(keys, kind="mergesort")]


@numba.njit(cache=True)
def _most_free(free: np.ndarray) -> np.ndarray:
    """Per resource, the most any machine has free (shape ``(d,)``): a job whose demand exceeds
    it fits on no machine."""
    top: np.ndarray = free[0].copy()
    for i in range(1, free.shape[0]):
        for y in range(free.shape[1]):
            top[y] = max(top[y], free[i, y])
    return top


@numba.njit(cache=True)
def _expected_ends(
    run: np.ndarray, r: int, start: np.ndarray, estimate: np.ndarray, now: int
) -> np.ndarray:
    """When each running job is expected to end: ``start + estimate``, or the next step for one
    already past its estimate."""
    ends = np.empty(r, dtype=np.int64)
    for k in range(r):
        j = run[k]
        ends[k] = max(start[j] + estimate[j], now + 1)
    return ends


@numba.njit(cache=True)
def _head_reservation(
    head: int, ends: np.ndarray, ended_by: np.ndarray, e: int, done: np.ndarray,
    machine_of: np.ndarray, demand: np.ndarray, free: np.ndarray, capacity: np.ndarray,
    rule: int, now: int, frontier_t: np.ndarray, frontier_p: np.ndarray,
) -> tuple[int, int, np.ndarray]:  # fmt: skip
    """EASY's reservation of ``head``: ``(time, machine, extra)``, ``extra`` the capacity of
    that machine left then beside the head's demand; ``(NEVER, -1, _)`` if it never fits.

    ``ends``/``ended_by`` is the min-heap (``e`` items) of the started jobs' expected ends
    (``start + estimate``; ``done`` marks those already finished, skipped). It is walked in
    time order without being changed, through a second heap of its positions
    (``frontier_*``): ``O(k log k)`` for the ``k`` expected ends before the reservation,
    instead of sorting every running job. A job past its estimate is expected to end at
    ``now + 1``. Only machines freed at a time can newly fit the head, so the placement rule
    runs once, at the reservation time."""
    avail = free.copy()
    f = 0
    if e:
        f = heap_push(frontier_t, frontier_p, f, ends[0], 0)
    t = -1
    fit = False
    while f:
        p = frontier_p[0]
        key = max(frontier_t[0], now + 1)
        if key != t and fit:  # every job ending at t is counted: the head fits then
            i = place(rule, avail, capacity, demand[head])
            return t, i, avail[i] - demand[head]
        f = heap_pop(frontier_t, frontier_p, f)
        for c in (2 * p + 1, 2 * p + 2):
            if c < e:
                f = heap_push(frontier_t, frontier_p, f, ends[c], c)
        j = ended_by[p]
        if done[j]:
            continue
        t = key
        i = machine_of[j]
        avail[i] += demand[j]
        fit = fit or fits(avail[i], demand[head])
    if fit:
        i = place(rule, avail, capacity, demand[head])
        return t, i, avail[i] - demand[head]
    return NEVER, -1, np.zeros(demand.shape[1])


@numba.njit(cache=True)
def _profile(
    run: np.ndarray, r: int, machine_of: np.ndarray, start: np.ndarray, estimate: np.ndarray,
    demand: np.ndarray, free: np.ndarray, now: int, room: int,
) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    """Free capacity from ``now`` on as segments: times ``(P,)`` and free ``(P, m, d)``, segment
    ``k`` covering ``[times[k], times[k + 1])`` (the last one open), with ``room`` spare rows."""
    ends = _expected_ends(run, r, start, estimate, now)
    order = np.argsort(ends, kind="mergesort")
    times = np.empty(r + 1 + room, dtype=np.int64)
    prof = np.empty((r + 1 + room, free.shape[0], free.shape[1]))
    times[0] = now
    prof[0] = free
    p = 1
    for k in range(r):
        j = run[order[k]]
        t = ends[order[k]]
        if t != times[p - 1]:
            times[p] = t
            prof[p] = prof[p - 1]
            p += 1
        prof[p - 1, machine_of[j]] += demand[j]
    return times, prof, p


@numba.njit(cache=True)
def _split(times: np.ndarray, prof: np.ndarray, p: int, t: int) -> tuple[int, int]:
    """Make ``t`` a segment boundary; ``(index of the segment starting at t, new p)``."""
    k = int(np.searchsorted(times[:p], t, side="right")) - 1
    if times[k] == t:
        return k, p
    for s in range(p, k + 1, -1):  # shift right, from the end (overlapping rows)
        times[s] = times[s - 1]
        prof[s] = prof[s - 1]
    times[k + 1] = t
    prof[k + 1] = prof[k]
    return k + 1, p + 1


@numba.njit(cache=True)
def _occupy(
    times: np.ndarray, prof: np.ndarray, p: int, t0: int, dur: int, i: int, need: np.ndarray,
) -> tuple[bool, int]:  # fmt: skip
    """Take ``need`` from machine ``i`` over ``[t0, t0 + dur)`` (a negative ``need`` gives it
    back), splitting segments at both ends: ``(whether the profile stays >= 0 there, new p)``."""
    _, p = _split(times, prof, p, t0)
    _, p = _split(times, prof, p, t0 + dur)
    first = np.searchsorted(times[:p], t0, side="right") - 1
    last = np.searchsorted(times[:p], t0 + dur, side="right") - 1
    ok = True
    for s in range(first, last):
        prof[s, i] -= need
        for x in range(need.shape[0]):
            ok = ok and prof[s, i, x] >= -EPS
    return ok, p


@numba.njit(cache=True)
def _reserve(
    times: np.ndarray, prof: np.ndarray, p: int, need: np.ndarray, dur: int,
    capacity: np.ndarray, rule: int, avail: np.ndarray,
) -> tuple[int, int, int]:  # fmt: skip
    """The earliest segment start where ``need`` fits on some machine for ``dur`` steps (the
    machine by ``rule`` among those free for the whole interval), reserved in the profile:
    ``(time, machine, new p)``; ``(NEVER, -1, p)`` if it never fits."""
    for k in range(p):
        t0, t1 = times[k], times[k] + dur
        avail[:] = prof[k]
        e = k + 1
        while e < p and times[e] < t1:
            for i in range(avail.shape[0]):
                for x in range(avail.shape[1]):
                    avail[i, x] = min(avail[i, x], prof[e, i, x])
            e += 1
        i = place(rule, avail, capacity, need)
        if i >= 0:
            _, p = _occupy(times, prof, p, t0, dur, i, need)
            return t0, i, p
    return NEVER, -1, p


@numba.njit(cache=True)
def _conservative(
    order: np.ndarray, run: np.ndarray, r: int, machine_of: np.ndarray, start: np.ndarray,
    estimate: np.ndarray, demand: np.ndarray, free: np.ndarray, capacity: np.ndarray,
    rule: int, now: int, ended: bool, res_t: np.ndarray, res_m: np.ndarray, avail: np.ndarray,
) -> None:  # fmt: skip
    """Conservative backfilling's reservations at ``now`` (``res_t``/``res_m``: time and
    machine of each waiting job's reservation, ``-1`` for a job not reserved yet, ``NEVER``
    for one that fits nowhere), in the profile of the running jobs' expected ends:

    * a job gets its reservation when it arrives, the earliest slot that delays no reservation
      already made (arrivals of one time in ``order``);
    * when a job ended (``ended``; before its estimate, or at it after others moved), the
      waiting jobs are **compressed**, in ``order``: each in turn gives its slot back and takes
      the earliest one, never later (Mu'alem & Feitelson 2001; pyss does the same), so no job
      starts after its first reservation while jobs end by their estimates;
    * a reservation made void by a job running past its estimate (expected, when past it, to
      end at the next step) is made again, all of them, in ``order``."""
    q = order.shape[0]
    times, prof, p = _profile(run, r, machine_of, start, estimate, demand, free, now, 4 * q + 2)
    feasible = True
    for x in range(q):
        j = order[x]
        if res_t[j] >= 0 and res_t[j] != NEVER:
            if res_t[j] < now:
                feasible = False
            else:
                ok, p = _occupy(times, prof, p, res_t[j], estimate[j], res_m[j], demand[j])
                feasible = feasible and ok
    if not feasible:  # start over: every reservation again, in order
        times, prof, p = _profile(run, r, machine_of, start, estimate, demand, free, now,
                                  4 * q + 2)  # fmt: skip
        for x in range(q):
            j = order[x]
            if res_t[j] != NEVER:
                res_t[j], res_m[j], p = _reserve(times, prof, p, demand[j], estimate[j],
                                                 capacity, rule, avail)  # fmt: skip
    elif ended:
        for x in range(q):
            j = order[x]
            if res_t[j] >= 0 and res_t[j] != NEVER:
                _, p = _occupy(times, prof, p, res_t[j], estimate[j], res_m[j], -demand[j])
                res_t[j], res_m[j], p = _reserve(times, prof, p, demand[j], estimate[j],
                                                 capacity, rule, avail)  # fmt: skip
    for x in range(q):
        j = order[x]
        if res_t[j] < 0:
            res_t[j], res_m[j], p = _reserve(times, prof, p, demand[j], estimate[j], capacity,
                                             rule, avail)  # fmt: skip


@numba.njit(cache=True, inline="always")
def _next_event(rel_t: np.ndarray, rel: int, heap_t: np.ndarray, h: int) -> int:
    """The next time a job becomes ready (``rel_t``, ``rel`` entries) or ends (``heap_t``,
    ``h``), :data:`NEVER` if none."""
    t_next = rel_t[0] if rel > 0 else NEVER
    return min(t_next, heap_t[0]) if h else t_next


@numba.njit(cache=True, inline="always")
def _leave(
    j: int, machine_of: np.ndarray, free: np.ndarray, demand: np.ndarray, run: np.ndarray,
    where: np.ndarray, r: int,
) -> int:  # fmt: skip
    """Job ``j`` ends: its capacity back on its machine, out of the running set (``r`` jobs,
    any order; ``where[j]`` its index); the new ``r``."""
    free[machine_of[j]] += demand[j]
    last = run[r - 1]
    run[where[j]] = last
    where[last] = where[j]
    return r - 1


@numba.njit(cache=True, inline="always")
def _begin(
    j: int, t: int, i: int, runtime: np.ndarray, demand: np.ndarray, free: np.ndarray,
    start: np.ndarray, machine_of: np.ndarray, run: np.ndarray, where: np.ndarray, r: int,
    heap_t: np.ndarray, heap_j: np.ndarray, h: int, lo: int, graph: Any, rel: int,
) -> tuple[int, int, int]:  # fmt: skip
    """Start job ``j`` at ``t`` on machine ``i``: its capacity, the running set (``r`` jobs),
    the completion heap (``h``) and what its end tells the jobs waiting for it
    (:func:`.precedence.on_start`; ``graph`` its arrays, ``rel`` the ready heap's size). The
    new ``(r, h, rel)``."""
    start[j], machine_of[j] = t, i
    free[i] -= demand[j]
    run[r], where[j] = j, r
    h = heap_push(heap_t, heap_j, h, t + runtime[j], j)
    release, task, task_left, task_end, child_offsets, children, waiting, ready, rel_t, rel_r = (
        graph
    )
    rel = precedence.on_start(j, t + runtime[j], lo, release, task, task_left, task_end,
                              child_offsets, children, waiting, ready, rel_t, rel_r,
                              rel)  # fmt: skip
    return r + 1, h, rel


# Conservative backfilling, fast path (static orders, first fit): persistent per-machine profiles.
LEVELS = 16
"""Free-capacity levels of the first resource indexed per machine (``capacity[0] / 2**k``)."""


@numba.njit(cache=True, inline="always")
def _locate(times: np.ndarray, i: int, c: int, x: int) -> int:
    """Index of machine ``i``'s segment holding ``x`` (its first ``c`` segments; the first one
    starts no later than ``x``)."""
    lo, hi = 0, c
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if times[i, mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _grow(times: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-machine profile arrays with twice the room for segments."""
    m, c = times.shape
    t2 = np.empty((m, 2 * c), dtype=np.int64)
    v2 = np.empty((m, 2 * c, vals.shape[2]))
    t2[:, :c] = times
    v2[:, :c] = vals
    return t2, v2


@numba.njit(cache=True)
def _take(
    times: np.ndarray, vals: np.ndarray, cnt: np.ndarray, i: int, a: int, b: int,
    need: np.ndarray, sign: float, now: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Take ``sign · need`` from machine ``i``'s profile over ``[a, b)`` (``b = NEVER``: open
    ended), dropping its segments that ended by ``now`` first; the (maybe grown) arrays."""
    c = cnt[i]
    k0 = _locate(times, i, c, now)
    if k0 > 0:  # segments wholly in the past
        for s in range(k0, c):
            times[i, s - k0] = times[i, s]
            vals[i, s - k0] = vals[i, s]
        c -= k0
    if c + 2 > times.shape[1]:
        times, vals = _grow(times, vals)
    first = -1
    for x in (a, b):
        if x == NEVER:
            break
        k = _locate(times, i, c, x)
        if times[i, k] != x:
            for s in range(c, k + 1, -1):
                times[i, s] = times[i, s - 1]
                vals[i, s] = vals[i, s - 1]
            times[i, k + 1] = x
            vals[i, k + 1] = vals[i, k]
            c += 1
            k += 1
        if first < 0:
            first = k
    s = first
    while s < c and (b == NEVER or times[i, s] < b):
        for y in range(need.shape[0]):
            vals[i, s, y] -= sign * need[y]
        s += 1
    cnt[i] = c
    return times, vals


@numba.njit(cache=True)
def _index(
    times: np.ndarray, vals: np.ndarray, cnt: np.ndarray, i: int, theta: np.ndarray,
    low: np.ndarray, now: int,
) -> None:  # fmt: skip
    """``low[k, i]``: when machine ``i`` first has ``theta[k]`` of the first resource free, from
    ``now`` on (``NEVER``: never); a lower bound on any job's earliest fit that needs that much."""
    c = cnt[i]
    kmin = theta.shape[0]
    for s in range(_locate(times, i, c, now), c):
        v = vals[i, s, 0]
        while kmin > 0 and v >= theta[kmin - 1]:
            kmin -= 1
            low[kmin, i] = max(times[i, s], now)
        if kmin == 0:
            break
    for k in range(kmin):
        low[k, i] = NEVER


@numba.njit(cache=True)
def _machine_fit(
    times: np.ndarray, vals: np.ndarray, c: int, i: int, need: np.ndarray, dur: int, lo: int,
    bound: int, incl: bool,
) -> int:  # fmt: skip
    """Machine ``i``'s earliest time ``>= lo`` where ``need`` fits over ``[time, time + dur)``
    (at least the segment holding it), if earlier than ``bound`` (or equal, ``incl``); else
    ``NEVER``."""
    dd = max(dur, 1)
    run = -1
    k = _locate(times, i, c, lo)
    while k < c:
        s = max(times[i, k], lo)
        if run < 0 and (s > bound or (s == bound and not incl)):
            return NEVER
        if fits(vals[i, k], need):
            if run < 0:
                run = s
            if k + 1 == c or times[i, k + 1] >= run + dd:
                return run
        else:
            run = -1
        k += 1
    return NEVER


@numba.njit(cache=True)
def _first_fit(
    times: np.ndarray, vals: np.ndarray, cnt: np.ndarray, need: np.ndarray, dur: int,
    theta: np.ndarray, low: np.ndarray, now: int,
) -> tuple[int, int]:  # fmt: skip
    """The earliest time ``need`` fits for ``dur`` on some machine and the lowest-numbered
    machine fitting then (``_reserve`` under first fit), or ``(NEVER, -1)``. Each machine's
    earliest fit is its own, and machines whose level index says they cannot have the job's
    first resource free before the best time so far are skipped."""
    m = cnt.shape[0]
    level = -1
    for k in range(theta.shape[0]):
        if theta[k] <= need[0] - 2 * EPS:
            level = k
            break
    i0, lb0 = 0, NEVER
    if level >= 0:
        for i in range(m):
            if low[level, i] < lb0:
                i0, lb0 = i, low[level, i]
    lb0 = max(lb0, now) if level >= 0 else now
    best_t, best = NEVER, -1
    if lb0 != NEVER:
        best_t = _machine_fit(times, vals, cnt[i0], i0, need, dur, lb0, NEVER, True)
        if best_t != NEVER:
            best = i0
    for i in range(m):
        if i == i0:
            continue
        lo = max(low[level, i], now) if level >= 0 else now
        incl = i < best
        if lo > best_t or (lo == best_t and not incl):
            continue
        e = _machine_fit(times, vals, cnt[i], i, need, dur, lo, best_t, incl)
        if e != NEVER:
            best_t, best = e, i
    return best_t, best


@numba.njit(cache=True)
def _room(key: np.ndarray, val: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A heap's arrays with room for one more item (doubled when full)."""
    if size < key.shape[0]:
        return key, val
    k2 = np.empty(2 * key.shape[0], dtype=np.int64)
    v2 = np.empty(2 * key.shape[0], dtype=np.int64)
    k2[:size] = key
    v2[:size] = val
    return k2, v2


@numba.njit(cache=True, inline="always")
def _sort_small(jobs: np.ndarray, k: int, keys: np.ndarray, pos: np.ndarray) -> None:
    """Sort ``jobs[:k]`` by (``keys``, ``pos``) in place (insertion sort: a few jobs)."""
    for a in range(1, k):
        j = jobs[a]
        b = a - 1
        while b >= 0 and (keys[jobs[b]] > keys[j] or (keys[jobs[b]] == keys[j]
                                                      and pos[jobs[b]] > pos[j])):  # fmt: skip
            jobs[b + 1] = jobs[b]
            b -= 1
        jobs[b + 1] = j


@numba.njit(cache=True)
def _in_order(jobs: np.ndarray, k: int, keys: np.ndarray, pos: np.ndarray) -> None:
    """Sort ``jobs[:k]`` by (``keys``, ``pos``) in place: the static order, ties in queue
    order."""
    if k <= 32:
        _sort_small(jobs, k, keys, pos)
        return
    sub = jobs[:k].copy()
    p = np.empty(k, dtype=np.int64)
    for a in range(k):
        p[a] = pos[sub[a]]
    sub = sub[np.argsort(p, kind="mergesort")]
    kk = np.empty(k)
    for a in range(k):
        kk[a] = keys[sub[a]]
    jobs[:k] = sub[np.argsort(kk, kind="mergesort")]


@numba.njit(cache=True)
def _conservative_jobset(
    runtime: np.ndarray, estimate: np.ndarray, demand: np.ndarray, capacity: np.ndarray,
    machines: int, keys: np.ndarray, start: np.ndarray, machine_of: np.ndarray,
    reserved: np.ndarray, lo: int, graph: Any, rel: int,
) -> int:  # fmt: skip
    """Conservative backfilling of one jobset under a static order and first fit, with the
    semantics of the general path (:func:`_conservative` in :func:`_one_jobset`), kept
    incrementally:

    * one profile per machine (sorted segments, persistent): the running jobs' expected ends
      and the reservations; a reservation touches its machine only, a job starting at its
      reservation or ending at its expected end changes nothing, one ending earlier gives
      capacity back, one past its estimate holds its machine one step more;
    * a job's earliest fit is the least of each machine's own (a machine whose level index
      says it cannot have the job's first resource free before the best so far is skipped),
      the machine the lowest-numbered fitting then;
    * compression (every waiting job in order gives its slot back and takes the earliest) is
      run when a job ended and the reservations may not be a fixed point of it (``settled``):
      after capacity came back, or after a compression that moved a job. Otherwise it would
      move nothing: a compression that moved nothing leaves a fixed point, and so does a remake
      (reservations made in order, each the earliest given those before it); the fixed point
      holds while the profile only loses capacity (new reservations, a job past its estimate
      whose reservations still fit) or keeps it (time passing, starts at reservations, ends at
      expected ends): each job's slot is still free and nothing earlier appeared, and under
      first fit the machines fitting then are fewer but include its own, the lowest before;
    * a reservation made void (a job past its estimate on a reserved machine) remakes all;
    * reservation times and expected ends are heaps; the queue is kept in arrival order and
      put in order only to compress or remake.

    Returns the status (0 or ``STALLED``)."""
    n, d = runtime.shape[0], capacity.shape[0]
    rel_t, rel_r = graph[8], graph[9]  # known ready times, (time, row) order
    m = machines
    theta = np.empty(LEVELS)
    for k in range(LEVELS):
        theta[k] = capacity[0] / 2.0**k
    times = np.empty((m, 64), dtype=np.int64)
    vals = np.empty((m, 64, d))
    cnt = np.ones(m, dtype=np.int64)
    low = np.empty((LEVELS, m), dtype=np.int64)
    t = rel_t[0] if n else 0
    for i in range(m):
        times[i, 0] = t
        vals[i, 0] = capacity
        _index(times, vals, cnt, i, theta, low, t)
    free = np.empty((m, d))
    for i in range(m):
        free[i] = capacity
    res_t = np.full(n, -1, dtype=np.int64)
    res_m = np.full(n, -1, dtype=np.int64)
    pos = np.zeros(n, dtype=np.int64)  # admission rank: the queue's (ready time, row) order
    queue = np.empty(n, dtype=np.int64)  # admitted, in arrival order; started ones dropped lazily
    qn = live = 0
    run = np.empty(n, dtype=np.int64)
    where = np.empty(n, dtype=np.int64)
    heap_t = np.empty(n, dtype=np.int64)  # actual completions
    heap_j = np.empty(n, dtype=np.int64)
    h = 0
    exp_t = np.empty(n + 1, dtype=np.int64)  # expected ends (lazy: exp[j] is current)
    exp_j = np.empty(n + 1, dtype=np.int64)
    e = 0
    expected = np.zeros(n, dtype=np.int64)
    running = np.zeros(n, dtype=np.bool_)
    rh_t = np.empty(n + 1, dtype=np.int64)  # reservation times (lazy: res_t[j] is current)
    rh_j = np.empty(n + 1, dtype=np.int64)
    rh = 0
    due = np.empty(n, dtype=np.int64)  # due now; listed[j]: when j was last
    listed = np.full(n, -1, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    settled = True  # compression would move nothing
    r = done = 0
    while done < n:
        ended = False
        while h and heap_t[0] <= t:  # completions at t
            j = heap_j[0]
            h = heap_pop(heap_t, heap_j, h)
            i = machine_of[j]
            r = _leave(j, machine_of, free, demand, run, where, r)
            done += 1
            running[j] = False
            ended = True
            if expected[j] > t:  # before its expected end: capacity comes back
                times, vals = _take(times, vals, cnt, i, t, expected[j], demand[j], -1.0, t)
                _index(times, vals, cnt, i, theta, low, t)
                settled = False
        nt = 0
        while e and exp_t[0] <= t:  # running past their estimates: held one step more
            j = exp_j[0]
            key = exp_t[0]
            e = heap_pop(exp_t, exp_j, e)
            if not running[j] or expected[j] != key:
                continue
            i = machine_of[j]
            times, vals = _take(times, vals, cnt, i, t, t + 1, demand[j], 1.0, t)
            _index(times, vals, cnt, i, theta, low, t)
            expected[j] = t + 1
            exp_t, exp_j = _room(exp_t, exp_j, e)
            e = heap_push(exp_t, exp_j, e, t + 1, j)  # not popped again at t
            touched[nt] = i
            nt += 1
        nd = 0
        while rh and rh_t[0] <= t:  # reservations due now (lazy heap: current ones only)
            j = rh_j[0]
            key = rh_t[0]
            rh = heap_pop(rh_t, rh_j, rh)
            if start[j] < 0 and res_t[j] == key and listed[j] != t:
                listed[j] = t
                due[nd] = j
                nd += 1
        nf = 0
        while rel > 0 and rel_t[0] <= t:  # jobs ready by t
            j = rel_r[0]
            rel = precedence.pop(rel_t, rel_r, rel)
            queue[qn] = j
            pos[j] = qn
            qn += 1
            live += 1
            fresh[nf] = j
            nf += 1
        nf0 = nf
        if live:
            void = False
            for x in range(nt):  # a reservation due now on a machine past its capacity
                i = touched[x]
                k = _locate(times, i, cnt[i], t)
                over = False
                for y in range(d):
                    over = over or vals[i, k, y] < -EPS
                if over:
                    for z in range(nd):
                        j = due[z]
                        if res_m[j] == i and estimate[j] > 0:
                            void = True
            if void or (ended and not settled):
                w = 0
                for k in range(qn):  # the waiting jobs, in arrival order, then in order
                    if start[queue[k]] < 0:
                        queue[w] = queue[k]
                        pos[queue[k]] = w
                        w += 1
                qn = w
                order[:qn] = queue[:qn]
                _in_order(order, qn, keys, pos)
            if void:  # every reservation again, in order, over the running jobs only
                for i in range(m):
                    cnt[i] = 1
                    times[i, 0] = t
                    vals[i, 0] = free[i]
                for x in range(r):
                    j = run[x]
                    times, vals = _take(times, vals, cnt, machine_of[j], expected[j], NEVER,
                                        demand[j], -1.0, t)  # fmt: skip
                for i in range(m):
                    _index(times, vals, cnt, i, theta, low, t)
                for x in range(qn):
                    j = order[x]
                    if res_t[j] == NEVER:
                        continue
                    tj, ij = _first_fit(times, vals, cnt, demand[j], estimate[j], theta, low, t)
                    res_t[j], res_m[j] = tj, ij
                    if ij >= 0:
                        times, vals = _take(times, vals, cnt, ij, tj, tj + estimate[j],
                                            demand[j], 1.0, t)  # fmt: skip
                        _index(times, vals, cnt, ij, theta, low, t)
                        rh_t, rh_j = _room(rh_t, rh_j, rh)
                        rh = heap_push(rh_t, rh_j, rh, tj, j)
                settled = True
                nf = 0  # the arrivals were reserved too, in order
            elif ended and not settled:  # compression
                moved = False
                for x in range(qn):
                    j = order[x]
                    if res_t[j] < 0 or res_t[j] == NEVER:
                        continue
                    t0, i0 = res_t[j], res_m[j]
                    times, vals = _take(times, vals, cnt, i0, t0, t0 + estimate[j], demand[j],
                                        -1.0, t)  # fmt: skip
                    _index(times, vals, cnt, i0, theta, low, t)
                    tj, ij = _first_fit(times, vals, cnt, demand[j], estimate[j], theta, low, t)
                    res_t[j], res_m[j] = tj, ij
                    times, vals = _take(times, vals, cnt, ij, tj, tj + estimate[j], demand[j],
                                        1.0, t)  # fmt: skip
                    _index(times, vals, cnt, ij, theta, low, t)
                    if tj != t0 or ij != i0:
                        moved = True
                        rh_t, rh_j = _room(rh_t, rh_j, rh)
                        rh = heap_push(rh_t, rh_j, rh, tj, j)
                settled = not moved
            _in_order(fresh, nf, keys, pos)
            for x in range(nf):  # arrivals: the earliest slot that delays no reservation
                j = fresh[x]
                tj, ij = _first_fit(times, vals, cnt, demand[j], estimate[j], theta, low, t)
                res_t[j], res_m[j] = tj, ij
                if ij >= 0:
                    times, vals = _take(times, vals, cnt, ij, tj, tj + estimate[j], demand[j],
                                        1.0, t)  # fmt: skip
                    _index(times, vals, cnt, ij, theta, low, t)
                    rh_t, rh_j = _room(rh_t, rh_j, rh)
                    rh = heap_push(rh_t, rh_j, rh, tj, j)
            for x in range(nf0):  # the first reservation of each arrival
                j = fresh[x]
                reserved[j] = res_t[j]
            while rh and rh_t[0] <= t:  # (re)made at t: start now
                j = rh_j[0]
                key = rh_t[0]
                rh = heap_pop(rh_t, rh_j, rh)
                if start[j] < 0 and res_t[j] == key:
                    due[nd] = j
                    nd += 1
            _in_order(due, nd, keys, pos)
            for x in range(nd):
                j = due[x]
                if start[j] >= 0 or res_t[j] != t:  # listed twice, or moved by a remake
                    continue
                i = res_m[j]
                r, h, rel = _begin(j, t, i, runtime, demand, free, start, machine_of, run, where,
                                   r, heap_t, heap_j, h, lo, graph, rel)  # fmt: skip
                running[j] = True
                expected[j] = t + estimate[j]
                exp_t, exp_j = _room(exp_t, exp_j, e)
                e = heap_push(exp_t, exp_j, e, expected[j], j)
                live -= 1
            if qn > 2 * live + 64:  # drop the started jobs from the queue
                w = 0
                for k in range(qn):
                    if start[queue[k]] < 0:
                        queue[w] = queue[k]
                        pos[queue[k]] = w
                        w += 1
                qn = w
        else:
            settled = True
        if done == n:
            break
        t_next = _next_event(rel_t, rel, heap_t, h)
        while rh and (start[rh_j[0]] >= 0 or res_t[rh_j[0]] != rh_t[0]):
            rh = heap_pop(rh_t, rh_j, rh)
        if rh:
            t_next = min(t_next, rh_t[0])
        if t_next == NEVER:
            return STALLED
        t = t_next
    return 0


@numba.njit(cache=True)
def _one_jobset(
    arrival: np.ndarray, runtime: np.ndarray, estimate: np.ndarray, seen: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray, machines: int, score: Any, rule: int, knob: float, discipline: int,
    static: bool, start: np.ndarray, machine_of: np.ndarray, reserved: np.ndarray,
    ready: np.ndarray, lo: int,
    prec: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    fast: bool = True,
) -> int:  # fmt: skip
    """Schedule one jobset (rows in arrival order) under ``discipline``; fills ``start``,
    ``machine_of``, ``reserved`` (first reservation, ``NEVER`` if none) and ``ready`` (when each
    job became ready, :mod:`.precedence`) and returns the status."""
    n, d = arrival.shape[0], capacity.shape[0]
    release, n_parents, task, task_left, child_offsets, children = prec
    release = release[lo : lo + n]
    waiting = n_parents[lo : lo + n].copy()
    task_end = np.zeros(task_left.shape[0], dtype=np.int64)
    ready[:] = release
    rel_t = np.empty(n, dtype=np.int64)  # known ready times, (time, row) order
    rel_r = np.empty(n, dtype=np.int64)
    rel = precedence.roots(release, waiting, rel_t, rel_r)
    graph = (release, task, task_left, task_end, child_offsets, children, waiting, ready, rel_t,
             rel_r)  # fmt: skip
    free = np.empty((machines, d))
    for i in range(machines):
        free[i] = capacity
    queue = np.empty(n, dtype=np.int64)
    run = np.empty(n, dtype=np.int64)  # running jobs, any order; where[j]: j's index in it
    where = np.empty(n, dtype=np.int64)
    heap_t = np.empty(n, dtype=np.int64)  # completions, earliest first
    heap_j = np.empty(n, dtype=np.int64)
    h = 0  # heap size
    easy = discipline == EASY
    ends = np.empty(n if easy else 0, dtype=np.int64)  # EASY: expected ends, earliest first
    ended_by = np.empty(n if easy else 0, dtype=np.int64)
    frontier_t = np.empty(n if easy else 0, dtype=np.int64)
    frontier_p = np.empty(n if easy else 0, dtype=np.int64)
    e = 0
    done_flag = np.zeros(n, dtype=np.bool_)
    res_t = np.full(n if discipline == CONSERVATIVE else 0, -1, dtype=np.int64)
    res_m = np.full(n if discipline == CONSERVATIVE else 0, -1, dtype=np.int64)
    ended = False  # a job ended at this decision time
    avail = np.empty((machines, d))
    keys = np.empty(n if static else 0)
    for j in range(keys.shape[0]):  # a static order's scores, once
        keys[j] = -score(seen[j], arrival[j], j, 0, knob, 0.0, 0.0, demand[j, 0])
    if discipline == CONSERVATIVE and static and rule == FIRST_FIT and fast:
        return _conservative_jobset(runtime, estimate, demand, capacity, machines, keys, start,
                                    machine_of, reserved, lo, graph, rel)  # fmt: skip
    q = r = done = 0
    t = rel_t[0] if n else 0
    while done < n:
        while h and heap_t[0] <= t:  # completions at t
            j = heap_j[0]
            h = heap_pop(heap_t, heap_j, h)
            r = _leave(j, machine_of, free, demand, run, where, r)
            done += 1
            done_flag[j] = True
            ended = True
        while e and done_flag[ended_by[0]]:  # finished jobs leave the expected ends' top
            e = heap_pop(ends, ended_by, e)
        while rel > 0 and rel_t[0] <= t:  # jobs ready by t, in (ready time, row) order
            queue[q] = rel_r[0]
            q += 1
            rel = precedence.pop(rel_t, rel_r, rel)
        if q:
            r0 = r
            order = _order(queue, q, seen, ready, demand, free, capacity, t, score, knob,
                           keys)  # fmt: skip
            if discipline == CONSERVATIVE:
                _conservative(order, run, r, machine_of, start, estimate, demand, free, capacity,
                              rule, t, ended, res_t, res_m, avail)  # fmt: skip
                for x in range(q):
                    j = order[x]
                    if reserved[j] == NEVER:
                        reserved[j] = res_t[j]
                    if res_t[j] == t:
                        i = res_m[j]
                        r, h, rel = _begin(j, t, i, runtime, demand, free, start, machine_of,
                                           run, where, r, heap_t, heap_j, h, lo, graph,
                                           rel)  # fmt: skip
            else:
                head = -1
                for x in range(q):  # in order while the first fits
                    j = order[x]
                    i = place(rule, free, capacity, demand[j])
                    if i < 0:
                        head = x
                        break
                    r, h, rel = _begin(j, t, i, runtime, demand, free, start, machine_of, run,
                                         where, r, heap_t, heap_j, h, lo, graph, rel)  # fmt: skip
                    if easy:
                        e = heap_push(ends, ended_by, e, t + estimate[j], j)
                if head >= 0 and easy:
                    hj = order[head]
                    shadow, hm, extra = _head_reservation(
                        hj,
                        ends,
                        ended_by,
                        e,
                        done_flag,
                        machine_of,
                        demand,
                        free,
                        capacity,
                        rule,
                        t,
                        frontier_t,
                        frontier_p,
                    )
                    if reserved[hj] == NEVER:
                        reserved[hj] = shadow
                    top = _most_free(free)
                    held = np.empty(d)
                    for x in range(head + 1, q):
                        j = order[x]
                        if not fits(top, demand[j]):  # fits no machine: skip the scan
                            continue
                        late = t + estimate[j] > shadow and hm >= 0
                        if late:  # only what the head leaves free then, on its machine
                            held[:] = free[hm]
                            for y in range(d):
                                free[hm, y] = min(held[y], extra[y] + EPS)
                        i = place(rule, free, capacity, demand[j])
                        if late:
                            free[hm] = held
                        if i < 0:
                            continue
                        if late and i == hm:
                            extra -= demand[j]
                        r, h, rel = _begin(j, t, i, runtime, demand, free, start, machine_of,
                                           run, where, r, heap_t, heap_j, h, lo, graph,
                                           rel)  # fmt: skip
                        e = heap_push(ends, ended_by, e, t + estimate[j], j)
                        top = _most_free(free)
            if r > r0:  # some started: keep the waiting jobs, in arrival order
                w = 0
                for k in range(q):
                    if start[queue[k]] < 0:
                        queue[w] = queue[k]
                        w += 1
                q = w
        ended = False
        if done == n:
            break
        t_next = _next_event(rel_t, rel, heap_t, h)
        for k in range(q if discipline == CONSERVATIVE else 0):  # reservations are events too
            if t < res_t[queue[k]] < t_next:
                t_next = res_t[queue[k]]
        if t_next == NEVER:
            return STALLED
        t = t_next
    return 0


@numba.njit(cache=True)
def run_jobsets(
    arrival: np.ndarray, runtime: np.ndarray, estimate: np.ndarray, seen: np.ndarray,
    demand: np.ndarray,
    bounds: np.ndarray, capacity: np.ndarray, machines: int, score: Any, rule: int,
    knob: float, discipline: int, static: bool,
    prec: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    fast: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Schedule every jobset (rows ``bounds[b]:bounds[b + 1]``, each in arrival order) under a
    queue discipline (:data:`DISCIPLINES`, not ``greedy``).

    Parameters
    ----------
    arrival, runtime, estimate, seen : int64, shape ``(n,)``
        Arrival step, steps each job runs, the estimate (request) reservations see, and the
        length the order's score sees (the estimate; a DAG order's remaining critical path).
    demand : float64, shape ``(n, d)``
    bounds : int64, shape ``(J + 1,)``
    capacity : float64, shape ``(d,)``
        One machine's capacity; ``machines`` identical machines.
    score, rule, knob
        The job order (:data:`~.dispatch.SCORE_SIGNATURE`), placement rule and its parameter.
    static
        The order depends only on the job (its scores are computed once, not at every event).
    prec
        :func:`.precedence.engine_arrays` (DAG workloads; empty graph arrays otherwise).
    fast
        Conservative under a static order and first fit takes :func:`_conservative_jobset`
        (the same schedules; ``False``: the general path, for the tests).

    Returns
    -------
    start, machine, reserved, ready : int64, shape ``(n,)``
        Start step and machine of every job, the first reservation it got (``NEVER``: none) and
        when it became ready (its arrival, or a DAG task's release and parents' finish).
    status : int64, shape ``(J,)``
        0 (every job ran) or :data:`~.list_scheduler.STALLED` per jobset.
    """
    n = arrival.shape[0]
    start = np.full(n, -1, dtype=np.int64)
    machine = np.full(n, -1, dtype=np.int64)
    reserved = np.full(n, NEVER, dtype=np.int64)
    ready = np.empty(n, dtype=np.int64)
    status = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    for b in range(bounds.shape[0] - 1):
        lo, hi = bounds[b], bounds[b + 1]
        status[b] = _one_jobset(
            arrival[lo:hi], runtime[lo:hi], estimate[lo:hi], seen[lo:hi], demand[lo:hi],
            capacity, machines, score, rule, knob, discipline, static, start[lo:hi],
            machine[lo:hi], reserved[lo:hi], ready[lo:hi], lo, prec, fast,
        )  # fmt: skip
    return start, machine, reserved, ready, status
