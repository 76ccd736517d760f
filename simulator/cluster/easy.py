"""The strict queue and EASY backfilling (Lifka 1995), compiled on :mod:`.core`.

At every event the waiting jobs are put in order (:func:`.order.queue_order`: the order's
score, the estimate seen as the job's length, ties in admission order) and

``strict``  jobs start in order while the first one fits now (on the machine the placement rule
            picks); the first that does not fit blocks every job behind it;
``easy``    as strict, then the first waiting job (the *head*) gets a **reservation**: the
            earliest time its demand is free on some machine, assuming running jobs end at
            ``start + estimate`` (one past its estimate: at the next step). A later job starts
            now if it fits now and does not delay that reservation: it ends (by its estimate)
            before the reservation, or it uses only capacity of the reserved machine that the
            head will not need then, or another machine.

The reservation is recomputed at every decision by walking a persistent heap of the running
jobs' expected ends in time order (``O(k log k)`` for the ``k`` ends before it), then the
backfill scan costs ``O(Q·m·d)`` for ``Q`` waiting jobs. The first reservation each head got is
returned (``reserved``) so that :func:`~schedlab.simulator.check.check_discipline` can check
that it started no later.
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster import core, heap
from schedlab.simulator.cluster.order import queue_order, ranking
from schedlab.simulator.cluster.placement import EPS, fits, place

Prec = core.Precedence


@numba.njit(cache=True)
def _most_free(free: np.ndarray, top: np.ndarray) -> None:
    """``top``: per resource, the most any machine has free (a job whose demand exceeds it fits
    on no machine)."""
    for y in range(free.shape[1]):
        top[y] = free[0, y]
        for i in range(1, free.shape[0]):
            top[y] = max(top[y], free[i, y])


@numba.njit(cache=True)
def _reservation(
    head: int,
    ends: np.ndarray,
    ended_by: np.ndarray,
    e: int,
    start: np.ndarray,
    runtime: np.ndarray,
    machine: np.ndarray,
    demand: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    rule: int,
    now: int,
    frontier_t: np.ndarray,
    frontier_p: np.ndarray,
) -> tuple[int, int, np.ndarray]:
    """The head's reservation: ``(time, machine, extra)``, ``extra`` the capacity of that
    machine left then beside the head's demand; ``(NEVER, -1, _)`` if it never fits.

    ``ends``/``ended_by`` is the heap (``e`` items) of the started jobs' expected ends (those
    already finished by ``now``, ``start + runtime <= now``, are skipped). It is walked in time
    order without being changed, through a second heap of its positions (``frontier_*``).
    Only machines freed at a time can newly fit the head, so the placement rule runs once, at
    the reservation time."""
    avail = free.copy()
    f = heap.push(frontier_t, frontier_p, 0, ends[0], 0) if e else 0
    t = -1
    fit = False
    while f:
        p = frontier_p[0]
        key = max(frontier_t[0], now + 1)
        if key != t and fit:  # every job ending at t is counted: the head fits then
            break
        f = heap.pop(frontier_t, frontier_p, f)
        for child in (2 * p + 1, 2 * p + 2):
            if child < e:
                f = heap.push(frontier_t, frontier_p, f, ends[child], child)
        j = ended_by[p]
        if start[j] + runtime[j] <= now:  # finished
            continue
        t = key
        i = machine[j]
        for y in range(avail.shape[1]):
            avail[i, y] += demand[j, y]
        fit = fit or fits(avail[i], demand[head])
    if not fit:
        return core.NEVER, -1, np.zeros(demand.shape[1])
    i = place(rule, avail, capacity, demand[head])
    extra = np.empty(demand.shape[1])
    for y in range(extra.shape[0]):
        extra[y] = avail[i, y] - demand[head, y]
    return t, i, extra


@numba.njit(cache=True, inline="always")
def _backfill(
    order: np.ndarray,
    head: int,
    t: int,
    h: int,
    r: int,
    e: int,
    estimate: np.ndarray,
    capacity: np.ndarray,
    rule: int,
    reserved: np.ndarray,
    c: core.Core,
    g: core.Graph,
    ends: np.ndarray,
    ended_by: np.ndarray,
    frontier_t: np.ndarray,
    frontier_p: np.ndarray,
    top: np.ndarray,
    held: np.ndarray,
) -> tuple[int, int, int, int]:
    """EASY after the strict pass stopped at ``order[head]``: the head's reservation, then the
    later jobs that fit now and do not delay it start; the new ``(h, r, e)`` and the jobs
    started."""
    free, runtime, demand, start, machine, end_t, end_j, _, _, _, _, _ = c
    d = free.shape[1]
    hj = order[head]
    shadow, hm, extra = _reservation(
        hj,
        ends,
        ended_by,
        e,
        start,
        runtime,
        machine,
        demand,
        free,
        capacity,
        rule,
        t,
        frontier_t,
        frontier_p,
    )
    if reserved[hj] == core.NEVER:
        reserved[hj] = shadow
    _most_free(free, top)
    started = 0
    for x in range(head + 1, order.shape[0]):
        j = order[x]
        if not fits(top, demand[j]):  # fits no machine: skip the scan
            continue
        late = t + estimate[j] > shadow and hm >= 0
        if late:  # only what the head leaves free then, on its machine
            for y in range(d):
                held[y] = free[hm, y]
                free[hm, y] = min(held[y], extra[y] + EPS)
        i = place(rule, free, capacity, demand[j])
        if late:
            for y in range(d):
                free[hm, y] = held[y]
        if i < 0:
            continue
        if late and i == hm:
            for y in range(d):
                extra[y] -= demand[j, y]
        h, r = core.begin(j, t, i, h, r, free, demand, runtime, start, machine, end_t, end_j, g)
        started += 1
        e = heap.push(ends, ended_by, e, t + estimate[j], j)
        _most_free(free, top)
    return h, r, e, started


@numba.njit(cache=True)
def _jobset(jobs: core.Jobs, out: core.Out, lo: int, how: core.Setting, prec: Prec) -> int:
    """One jobset under strict (``how.backfill`` False) or EASY; returns the status."""
    capacity, _, _, rule, _, _, _, _, backfill = how
    estimate, ready, reserved = jobs.estimate, out.ready, out.reserved
    n, d = jobs.runtime.shape[0], capacity.shape[0]
    c, g, r = core.new(jobs, out, how, lo, prec)
    free, runtime, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, _ = c
    unlisted = np.empty(0, dtype=np.int64)  # the jobs that end need not be listed
    size = n if backfill else 0
    ends = np.empty(size, dtype=np.int64)  # expected ends of started jobs, earliest first
    ended_by = np.empty(size, dtype=np.int64)
    frontier_t = np.empty(size, dtype=np.int64)
    frontier_p = np.empty(size, dtype=np.int64)
    top, held = np.empty(d), np.empty(d)
    rank, in_rows = ranking(jobs, ready, pos, how)
    # jobs are admitted in row order without a DAG: an order that never ranks a later row
    # higher (FCFS) keeps the queue in order, and needs no sorting or check at decisions
    in_rows = in_rows and g.task.shape[0] == 0
    h = q = e = started = 0
    t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    while started < n and t != core.NEVER:
        h, _ = core.complete(t, h, end_t, end_j, free, demand, machine, unlisted)
        while e and start[ended_by[0]] + runtime[ended_by[0]] <= t:  # finished: off the top
            e = heap.pop(ends, ended_by, e)
        r, q = core.admit(t, r, q, (rel_t, rel_r), (queue, pos))
        before = started
        if q:
            order = queue[:q]
            if not in_rows:
                order = queue_order(queue, q, rank, free, t)
            head = -1
            for x in range(q):  # in order while the first fits
                j = order[x]
                i = place(rule, free, capacity, demand[j])
                if i < 0:
                    head = x
                    break
                h, r = core.begin(
                    j, t, i, h, r, free, demand, runtime, start, machine, end_t, end_j, g
                )
                started += 1
                if backfill:
                    e = heap.push(ends, ended_by, e, t + estimate[j], j)
            if head >= 0 and backfill:
                h, r, e, more = _backfill(
                    order,
                    head,
                    t,
                    h,
                    r,
                    e,
                    estimate,
                    capacity,
                    rule,
                    reserved,
                    c,
                    g,
                    ends,
                    ended_by,
                    frontier_t,
                    frontier_p,
                    top,
                    held,
                )
                started += more
        if started > before:
            q = core.compact(q, queue, pos, start)
        t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    return 0 if started == n else core.STALLED


@numba.njit(cache=True)
def run(
    jobs: core.Jobs, bounds: np.ndarray, how: core.Setting, prec: Prec
) -> tuple[core.Columns, np.ndarray]:
    """Every jobset under strict (``how.backfill`` False) or EASY: :func:`.core.each_jobset` of
    the rule (see :func:`.disciplines.run_jobsets`)."""
    return core.each_jobset(_jobset, jobs, bounds, how, prec)
