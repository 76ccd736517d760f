"""The state of a schedule at its events: the kernel of :mod:`schedlab.evaluation.timeline`.

A schedule changes only when a job arrives, starts or finishes, so its state over time is a step
function with at most ``3 n + 1`` pieces for ``n`` jobs: :func:`schedule_events` walks the
events of every schedule in time order and records the state after all the events of each
distinct time. Cost: ``O(n log n)`` time (sorting the events; each event updates a segment tree
of the waiting jobs in ``O(d log n)``) and ``O(n)`` memory per schedule, whatever the time step
or the makespan.

**Fragmentation** needs, at each event time, whether some waiting job fits into the free
capacity (its demand <= free in every resource). The waiting jobs are the active leaves of a
segment tree whose leaves are the schedule's jobs sorted by their demand of the first resource,
each node holding the component-wise least demand of its active leaves. A query visits only
leaves whose first demand fits (a prefix of the leaves, found by binary search) and prunes every
node whose least demands do not fit; with one or two resources a node inside that prefix
answers at once (its least second demand fits or no leaf of it does), so a query costs
``O(log n)``; with more resources the search is exact but may descend further.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _set_leaf(tree: np.ndarray, size: int, leaf: int, value: np.ndarray) -> None:
    """Set a leaf of the min-tree (``value``: its demands, or inf to remove it) and its
    ancestors."""
    i = size + leaf
    tree[i] = value
    i //= 2
    while i >= 1:
        for r in range(tree.shape[1]):
            tree[i, r] = min(tree[2 * i, r], tree[2 * i + 1, r])
        i //= 2


@numba.njit(cache=True)
def _any_fits(
    tree: np.ndarray, size: int, first: np.ndarray, free: np.ndarray, tol: np.ndarray
) -> bool:
    """Whether an active leaf's demand fits into ``free`` (within ``tol``) in every resource.

    ``first`` holds the leaves' first demands in leaf order (ascending).
    """
    d = tree.shape[1]
    limit = free + tol
    k = np.searchsorted(first, limit[0], side="right")  # leaves [0, k) fit in resource 0
    if k == 0:
        return False
    stack = np.empty(64, np.int64)
    lo_s = np.empty(64, np.int64)
    hi_s = np.empty(64, np.int64)
    top = 0
    stack[0], lo_s[0], hi_s[0] = 1, 0, size
    top = 1
    while top > 0:
        top -= 1
        node, lo, hi = stack[top], lo_s[top], hi_s[top]
        if lo >= k:
            continue
        ok = True
        for r in range(d):
            if tree[node, r] > limit[r]:
                ok = False
                break
        if not ok:
            continue
        if node >= size or (hi <= k and d <= 2):
            return True
        mid = (lo + hi) // 2
        stack[top], lo_s[top], hi_s[top] = 2 * node, lo, mid
        stack[top + 1], lo_s[top + 1], hi_s[top + 1] = 2 * node + 1, mid, hi
        top += 2
    return False


@numba.njit(cache=True)
def schedule_events(
    bounds: np.ndarray,
    jobs: tuple[np.ndarray, np.ndarray, np.ndarray],
    demand: np.ndarray,
    capacity: np.ndarray,
    work: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The state of every schedule after each of its distinct event times.

    Parameters
    ----------
    bounds
        int64 ``(G + 1,)``: the jobs of schedule ``g`` are rows ``bounds[g]:bounds[g + 1]``.
    jobs
        ``(arrival, start, finish)``, int64 ``(n,)`` each: each job's times (steps;
        ``arrival <= start < finish``).
    demand
        float64 ``(n, d)``: each job's demand per resource.
    capacity
        float64 ``(d,)``: the cluster's capacity per resource (> 0).
    work
        float64 ``(n,)``: each job's work while it waits (e.g. its share of the first resource
        times its run time), summed over the waiting jobs.

    Returns
    -------
    tuple of arrays
        ``schedule`` (int64, the row's schedule), ``time`` (int64 steps), ``running`` and
        ``queue`` (int64 jobs), ``used`` (float64 ``(m, d)``: demand of the running jobs),
        ``frag`` (float64 ``(m, d)``: free share of each resource at a time when jobs wait and
        none fits into the free capacity, else 0) and ``queued`` (float64: the waiting jobs'
        ``work``), one row per schedule and distinct event time, in time order; each schedule
        starts with a row at time 0 (all zero if its first arrival is later) and ends with the
        row of its last finish (all zero).
    """
    arrival, start, finish = jobs
    n_groups = bounds.size - 1
    n, d = demand.shape[0], demand.shape[1]
    cap = 3 * n + n_groups
    out_g = np.empty(cap, np.int64)
    out_t = np.empty(cap, np.int64)
    out_run = np.empty(cap, np.int64)
    out_q = np.empty(cap, np.int64)
    out_used = np.zeros((cap, d))
    out_frag = np.zeros((cap, d))
    out_work = np.zeros(cap)
    tol = 1e-9 * capacity
    m = 0
    for g in range(n_groups):
        lo, hi = bounds[g], bounds[g + 1]
        k = hi - lo
        if k == 0:
            continue
        times = np.empty(3 * k, np.int64)
        times[:k] = arrival[lo:hi]
        times[k : 2 * k] = start[lo:hi]
        times[2 * k :] = finish[lo:hi]
        order = np.argsort(times, kind="mergesort")
        by_first = np.argsort(demand[lo:hi, 0], kind="mergesort")
        leaf = np.empty(k, np.int64)
        for i in range(k):
            leaf[by_first[i]] = i
        first = demand[lo:hi, 0][by_first].copy()
        size = 1
        while size < k:
            size *= 2
        tree = np.full((2 * size, d), np.inf)
        gone = np.full(d, np.inf)
        used = np.zeros(d)
        running, queue, queued = 0, 0, 0.0
        if times[order[0]] > 0:
            out_g[m], out_t[m], out_run[m], out_q[m], out_work[m] = g, 0, 0, 0, 0.0
            m += 1
        e = 0
        while e < 3 * k:
            t = times[order[e]]
            while e < 3 * k and times[order[e]] == t:
                ev = order[e]
                kind, j = ev // k, ev % k
                row = lo + j
                if kind == 0:
                    queue += 1
                    queued += work[row]
                    _set_leaf(tree, size, leaf[j], demand[row])
                elif kind == 1:
                    queue -= 1
                    queued -= work[row]
                    _set_leaf(tree, size, leaf[j], gone)
                    running += 1
                    used += demand[row]
                else:
                    running -= 1
                    used -= demand[row]
                e += 1
            if running == 0:
                used[:] = 0.0  # no rounding residue while the cluster is idle
            if queue == 0:
                queued = 0.0
            out_g[m], out_t[m], out_run[m], out_q[m] = g, t, running, queue
            out_used[m] = used
            out_work[m] = queued
            if queue > 0:
                free = capacity - used
                if not _any_fits(tree, size, first, free, tol):
                    for r in range(d):
                        out_frag[m, r] = max(free[r], 0.0) / capacity[r]
            m += 1
    return (
        out_g[:m],
        out_t[:m],
        out_run[:m],
        out_q[:m],
        out_used[:m],
        out_frag[:m],
        out_work[:m],
    )
