"""The greedy rule (work-conserving list scheduling): at every event, start every visible job that
fits now, in the order's preference, until none fits (the heuristics' semantics of
:class:`~schedlab.simulator.cluster.engine.Engine`, compiled on :mod:`.core`).

The visible jobs are ``M`` slots filled in arrival order (a new job takes the lowest free slot,
else the FIFO backlog; a freed slot takes the backlog head) or the **whole queue** (every waiting
job, ties to the lower row). The decision is :func:`.dispatch.choose` (the best score, or the
Random mode's uniform pick) over the visible jobs, except for the whole queue under a static order
(:func:`run_tree`): the waiting jobs then sit in a segment tree in score order holding each
subtree's component-wise smallest demand, and the machines in a tree of their largest free
capacity, so the next job to start is found in ``O(log n)`` instead of a scan of the queue.
The two are separate compiled functions: written once and compiled once per way to decide
(``numba.literally``), each variant compiled the other's code too, and a first replay took 3-4 s
longer (measured: 7.4 -> 11.3 s cold for FCFS on the KTH log).
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster import core
from schedlab.simulator.cluster.dispatch import TREE_FROM, choose, machine_for
from schedlab.simulator.cluster.order import static_scores
from schedlab.simulator.cluster.trees import first_dominating, leq, next_subtree, pow2, tree_set

WHOLE_QUEUE = 0
"""``slots`` value of the whole queue."""

Prec = core.Precedence


@numba.njit(cache=True)
def _machine_tree(free: np.ndarray, ended: np.ndarray, keep: bool) -> tuple[np.ndarray, np.ndarray]:
    """A max-tree of the machines' free capacity (``free``: ``(m, d)``) and the array
    :func:`.core.complete` lists the jobs that end in (``ended``: the core's), or, not
    ``keep``, an empty tree and an empty list."""
    mtree = np.full((2 * pow2(free.shape[0]) if keep else 0, free.shape[1]), -np.inf)
    for i in range(free.shape[0] if keep else 0):
        tree_set(mtree, i, free[i], False)
    return mtree, ended if keep else ended[:0]


@numba.njit(cache=True, inline="always")
def _freed(
    mtree: np.ndarray, ended: np.ndarray, e: int, machine: np.ndarray, free: np.ndarray
) -> None:
    """The machine tree after the ``e`` completions ``ended`` (empty tree: nothing to do)."""
    for x in range(e if mtree.shape[0] else 0):
        i = machine[ended[x]]
        tree_set(mtree, i, free[i], False)


@numba.njit(cache=True)
def _next_in_order(
    jtree: np.ndarray,
    mtree: np.ndarray,
    order: np.ndarray,
    demand: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    rule: int,
) -> tuple[int, int]:
    """First waiting job in score order that fits now on some machine: ``(rank, machine)`` or
    ``(-1, -1)``. ``jtree`` (a min-tree) holds waiting jobs' demands by rank (inf when absent),
    ``mtree`` (a max-tree, empty for one machine) the machines' free capacity; ``order[rank]``
    is the job row. A subtree is skipped unless some machine fits its smallest demand."""
    P = jtree.shape[0] // 2
    i = 1
    while i > 0:
        some = (
            leq(jtree[i], free[0])
            if mtree.shape[0] == 0
            else (first_dominating(mtree, jtree[i]) >= 0)
        )
        if not some:
            i = next_subtree(i)
        elif i < P:
            i = 2 * i
        else:
            machine = machine_for(free, capacity, demand[order[i - P]], rule, mtree)
            if machine >= 0:
                return i - P, machine
            i = next_subtree(i)
    return -1, -1


@numba.njit(cache=True)
def _tree_jobset(jobs: core.Jobs, out: core.Out, lo: int, how: core.Setting, prec: Prec) -> int:
    """One jobset, the whole queue, a static order; returns the status."""
    capacity, machines, score, rule, knob, _, _, _, _ = how
    n, d = jobs.runtime.shape[0], capacity.shape[0]
    c, g, r = core.new(jobs, out, how, lo, prec)
    free, runtime, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, ended = c
    keys, _ = static_scores(score, jobs, knob, True, 0)
    neg = np.empty(n)
    for j in range(n):
        neg[j] = -keys[j]
    order = np.argsort(neg, kind="mergesort")  # ties to the lower row
    rank = np.empty(n, dtype=np.int64)
    for x in range(n):
        rank[order[x]] = x
    jtree = np.full((2 * pow2(n), d), np.inf)
    mtree, listed = _machine_tree(free, ended, machines > 1)
    gone = np.full(d, np.inf)
    h = started = 0
    t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    while started < n and t != core.NEVER:
        h, e = core.complete(t, h, end_t, end_j, free, demand, machine, listed)
        _freed(mtree, listed, e, machine, free)
        r, q = core.admit(t, r, 0, (rel_t, rel_r), (queue, pos))
        for x in range(q):
            tree_set(jtree, rank[queue[x]], demand[queue[x]], True)
        while True:
            x, i = _next_in_order(jtree, mtree, order, demand, free, capacity, rule)
            if x < 0:
                break
            tree_set(jtree, x, gone, True)
            j = order[x]
            h, r = core.begin(j, t, i, h, r, free, demand, runtime, start, machine, end_t, end_j, g)
            if mtree.shape[0]:
                tree_set(mtree, i, free[i], False)
            started += 1
        t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    return 0 if started == n else core.STALLED


@numba.njit(cache=True)
def _scan_jobset(jobs: core.Jobs, out: core.Out, lo: int, how: core.Setting, prec: Prec) -> int:
    """One jobset, ``slots`` visible slots or the whole queue, any order (Random: ``uniform``,
    drawing ``jobs.draw``); returns the status."""
    capacity, machines, score, rule, knob, static, slots, uniform, _ = how
    seen, ready, draw = jobs.seen, out.ready, jobs.draw
    n, d = jobs.runtime.shape[0], capacity.shape[0]
    c, g, r = core.new(jobs, out, how, lo, prec)
    free, runtime, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, ended = c
    profile = free.reshape((1, machines, d))  # nothing is reserved ahead: free now is all
    scratch = np.empty((machines, d))
    whole = slots == WHOLE_QUEUE
    # visible jobs: the slots, or the whole queue by row (-1: started or empty, -2: not ready)
    view = np.full(n if whole else slots, -2 if whole else -1, dtype=np.int64)
    top = v_head = 0  # whole queue: one past the last ready row; the first that may wait
    backlog = np.empty(0 if whole else n, dtype=np.int64)
    b_head = b_tail = draws = 0
    keys, _ = static_scores(score, jobs, knob, static and not uniform, 0)
    us = draw if uniform else np.full(1, -1.0)  # choose's draws (-1: by the score)
    mtree, listed = _machine_tree(free, ended, machines > TREE_FROM)
    h = started = 0
    t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    while started < n and t != core.NEVER:
        h, e = core.complete(t, h, end_t, end_j, free, demand, machine, listed)
        _freed(mtree, listed, e, machine, free)
        r, q = core.admit(t, r, 0, (rel_t, rel_r), (queue, pos))
        for x in range(q):
            j = queue[x]
            if whole:
                view[j] = j
                top = max(top, j + 1)
                continue
            s = 0
            while s < slots and view[s] >= 0:
                s += 1
            if s < slots:
                view[s] = j
            else:
                backlog[b_tail] = j
                b_tail += 1
        while True:
            while whole and v_head < top and view[v_head] == -1:
                v_head += 1
            first, last = (v_head, top) if whole else (0, slots)
            k, i = choose(
                view[first:last],
                profile,
                scratch,
                capacity,
                demand,
                runtime,
                seen,
                ready,
                0,
                t,
                score,
                keys,
                rule,
                mtree,
                knob,
                us[draws],
            )
            if k < 0:
                break
            draws += uniform
            j = view[first + k]
            if whole or b_head == b_tail:
                view[first + k] = -1
            else:
                view[k] = backlog[b_head]
                b_head += 1
            h, r = core.begin(j, t, i, h, r, free, demand, runtime, start, machine, end_t, end_j, g)
            if mtree.shape[0]:
                tree_set(mtree, i, free[i], False)
            started += 1
        t = core.next_event(core.NEVER, h, r, end_t, rel_t)
    return 0 if started == n else core.STALLED


@numba.njit(cache=True)
def run_tree(
    jobs: core.Jobs, bounds: np.ndarray, how: core.Setting, prec: Prec
) -> tuple[core.Columns, np.ndarray]:
    """Every jobset on the whole queue under a static order: :func:`.core.each_jobset` of the
    tree rule (``how.slots`` and ``how.uniform`` ignored)."""
    return core.each_jobset(_tree_jobset, jobs, bounds, how, prec)


@numba.njit(cache=True)
def run_scan(
    jobs: core.Jobs, bounds: np.ndarray, how: core.Setting, prec: Prec
) -> tuple[core.Columns, np.ndarray]:
    """Every jobset under the greedy rule, ``how.slots`` visible slots (or the whole queue),
    any order: :func:`.core.each_jobset` of the scan rule (``jobs.draw``: the Random mode's
    draws, per jobset in order)."""
    return core.each_jobset(_scan_jobset, jobs, bounds, how, prec)
