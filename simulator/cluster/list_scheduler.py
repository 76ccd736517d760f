"""Event-driven, compiled list scheduler: the heuristics' fast path through the cluster semantics.

It implements the start-now semantics of :class:`~schedlab.simulator.cluster.engine.Engine`
exactly (tests check identical schedules): at every decision time the heuristic starts, in its
preference order, every visible job that fits now on some machine (:func:`.dispatch.choose`).
Time jumps from event to event (an arrival or a completion); nothing else can change a decision,
so no per-step work and no images are built.

The queue is either ``M`` visible slots filled in arrival order (a new job takes the lowest free
slot, else the FIFO backlog; a freed slot takes the backlog head) or, with ``slots = 0``, the
**whole queue** (every waiting job visible, ties to the earlier arrival). For the whole queue and
a **static** job order (a score that depends only on the job, like SJF and FCFS) the waiting jobs
sit in a segment tree in score order holding each subtree's component-wise smallest demand, and
the machines in a segment tree holding each subtree's component-wise largest free capacity: the
next job to start is the first leaf whose demand fits some machine, found in O(log n) (plus
O(log m) for a first-fit machine), instead of a scan of the queue.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import precedence
from schedlab.simulator.cluster.dispatch import TREE_FROM, choose, machine_for, static_keys
from schedlab.simulator.cluster.trees import first_dominating, leq, next_subtree, tree_set

STALLED = -1
"""Status of a jobset whose waiting jobs could never start (every engine's kernel; 0: all ran)."""
WHOLE_QUEUE = 0
"""``slots`` value of the whole queue."""


@numba.njit(cache=True, inline="always")
def _pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (at least 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


@numba.njit(cache=True, inline="always")
def heap_push(key: np.ndarray, val: np.ndarray, size: int, k: int, v: int) -> int:
    """Push ``(k, v)`` on the binary min-heap ``key``/``val`` of ``size`` items; the new size."""
    i = size
    key[i] = k
    val[i] = v
    while i > 0:
        parent = (i - 1) // 2
        if key[parent] <= key[i]:
            break
        key[parent], key[i] = key[i], key[parent]
        val[parent], val[i] = val[i], val[parent]
        i = parent
    return size + 1


@numba.njit(cache=True, inline="always")
def heap_pop(key: np.ndarray, val: np.ndarray, size: int) -> int:
    """Remove the smallest key (the root) of the binary min-heap; the new size."""
    size -= 1
    key[0] = key[size]
    val[0] = val[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and key[left + 1] < key[left]:
            child = left + 1
        if key[i] <= key[child]:
            break
        key[child], key[i] = key[i], key[child]
        val[child], val[i] = val[i], val[child]
        i = child
    return size


# -- the whole queue in a static order ---------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _fits_some_machine(vector: np.ndarray, free: np.ndarray, mtree: np.ndarray) -> bool:
    """Some machine has at least ``vector`` free in every resource."""
    if free.shape[0] == 1:
        return leq(vector, free[0])
    return first_dominating(mtree, vector) >= 0


@numba.njit(cache=True)
def _next_in_order(
    jtree: np.ndarray, mtree: np.ndarray, order: np.ndarray, demand: np.ndarray,
    free: np.ndarray, capacity: np.ndarray, rule: int,
) -> tuple[int, int]:  # fmt: skip
    """First waiting job in score order that fits now on some machine: ``(rank, machine)`` or
    ``(-1, -1)``. ``jtree`` (a min-tree) holds waiting jobs' demands by rank (inf when absent),
    ``mtree`` (a max-tree) the machines' free capacity; ``order[rank]`` is the job row. A subtree
    is skipped unless some machine fits its component-wise smallest demand."""
    P = jtree.shape[0] // 2
    i = 1
    while i > 0:
        if not _fits_some_machine(jtree[i], free, mtree):
            i = next_subtree(i)
        elif i < P:
            i = 2 * i
        else:
            machine = machine_for(free, capacity, demand[order[i - P]], rule, mtree)
            if machine >= 0:
                return i - P, machine
            i = next_subtree(i)
    return -1, -1


# -- one jobset --------------------------------------------------------------------------------
@numba.njit(cache=True)
def _one_jobset(
    arrival: np.ndarray,
    duration: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    machines: int,
    slots: int,
    score: Any,
    rule: int,
    knob: float,
    uniform: bool,
    uniforms: np.ndarray,
    static: bool,
    start: np.ndarray,
    machine_of: np.ndarray,
    ready: np.ndarray,
    lo: int,
    prec: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> int:
    n = arrival.shape[0]
    if n == 0:
        return 0
    release, n_parents, task, task_left, child_offsets, children = prec
    release = release[lo : lo + n]
    waiting = n_parents[lo : lo + n].copy()  # parent tasks each job still waits for
    task_end = np.zeros(task_left.shape[0], dtype=np.int64)
    ready[:] = release  # becomes max(release, parents' ends): the job's admission time
    rel_t = np.empty(n, dtype=np.int64)  # known ready times, (time, row) order
    rel_r = np.empty(n, dtype=np.int64)
    rel = precedence.roots(release, waiting, rel_t, rel_r)
    d = capacity.shape[0]
    profile = np.empty((1, machines, d))  # nothing is reserved ahead: free now is all
    free = profile[0]
    for i in range(machines):
        free[i] = capacity
    scratch = np.empty((machines, d))
    gone = np.full(d, np.inf)
    whole = slots == WHOLE_QUEUE
    tree = whole and static and not uniform
    # visible jobs: the slots, or the whole queue in arrival order (-1 = started or empty,
    # -2 = not ready yet)
    view = np.full(n if whole else slots, -2 if whole else -1, dtype=np.int64)
    top = 0  # whole queue: one past the last ready row
    v_head = 0  # whole queue: first entry of view that may still wait
    backlog = np.empty(0 if whole else n, dtype=np.int64)
    b_head = 0
    b_tail = 0
    # a static order's scores, once; in tree mode the rank of each job (ties by arrival)
    keys = np.empty(0)
    if static and not uniform:
        keys = static_keys(score, seen, arrival, demand, np.zeros(n, dtype=np.int64), knob)
    order = np.empty(0, dtype=np.int64)
    rank = np.empty(0, dtype=np.int64)
    if tree:
        order = np.argsort(-keys, kind="mergesort")
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        keys = np.empty(0)  # the tree holds the order now: free the scores
    jtree = np.full((2 * _pow2(n) if tree else 0, d), np.inf)
    # machines' free capacity now: first fit in O(log m) on many machines, and the whole
    # queue's test "some machine fits this subtree" (not needed with one machine)
    keep = machines > 1 and (tree or machines > TREE_FROM)
    mtree = np.full((2 * _pow2(machines) if keep else 0, d), -np.inf)
    for i in range(machines if keep else 0):
        tree_set(mtree, i, capacity, False)
    heap_key = np.empty(n, dtype=np.int64)
    heap_val = np.empty(n, dtype=np.int64)
    heap_size = 0
    started = 0
    draws = 0
    t = rel_t[0]
    while started < n:
        while heap_size > 0 and heap_key[0] <= t:
            j = heap_val[0]
            heap_size = heap_pop(heap_key, heap_val, heap_size)
            i = machine_of[j]
            free[i] += demand[j]
            if mtree.shape[0]:
                tree_set(mtree, i, free[i], False)
        while rel > 0 and rel_t[0] <= t:  # jobs ready by now, in (ready time, row) order
            nxt = rel_r[0]
            rel = precedence.pop(rel_t, rel_r, rel)
            if whole:
                view[nxt] = nxt
                top = max(top, nxt + 1)
                if tree:
                    tree_set(jtree, rank[nxt], demand[nxt], True)
            else:
                placed = False
                for s in range(slots):
                    if view[s] < 0:
                        view[s] = nxt
                        placed = True
                        break
                if not placed:
                    backlog[b_tail] = nxt
                    b_tail += 1
        while True:
            if tree:
                r, machine = _next_in_order(jtree, mtree, order, demand, free, capacity, rule)
                if r < 0:
                    break
                j = order[r]
                tree_set(jtree, r, gone, True)
            else:
                while whole and v_head < top and view[v_head] == -1:
                    v_head += 1
                u = uniforms[draws] if uniform else 0.0
                first = v_head if whole else 0
                last = top if whole else slots
                k, machine = choose(
                    view[first:last], profile, scratch, capacity, demand, duration, seen, ready,
                    0, t, score, keys, rule, mtree, knob, uniform, u,
                )  # fmt: skip
                if k < 0:
                    break
                if uniform:
                    draws += 1
                j = view[first + k]
                if whole:
                    view[first + k] = -1
                elif b_head < b_tail:
                    view[k] = backlog[b_head]
                    b_head += 1
                else:
                    view[k] = -1
            start[j] = t
            machine_of[j] = machine
            free[machine] -= demand[j]
            if mtree.shape[0]:
                tree_set(mtree, machine, free[machine], False)
            heap_size = heap_push(heap_key, heap_val, heap_size, t + duration[j], j)
            rel = precedence.on_start(j, t + duration[j], lo, release, task, task_left, task_end,
                                      child_offsets, children, waiting, ready, rel_t, rel_r,
                                      rel)  # fmt: skip
            started += 1
        if started == n:
            break
        t_next = np.iinfo(np.int64).max
        if heap_size > 0:
            t_next = heap_key[0]
        if rel > 0 and rel_t[0] < t_next:
            t_next = rel_t[0]
        if t_next == np.iinfo(np.int64).max:
            return STALLED
        t = t_next
    return 0


@numba.njit(cache=True)
def run_jobsets(
    arrival: np.ndarray,
    duration: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    bounds: np.ndarray,
    capacity: np.ndarray,
    machines: int,
    slots: int,
    score: Any,
    rule: int,
    knob: float,
    uniform: bool,
    uniforms: np.ndarray,
    static: bool,
    prec: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Schedule every jobset with one heuristic.

    Parameters
    ----------
    arrival, duration, seen : int64 arrays, shape ``(n,)``
        Jobs of all jobsets, each jobset contiguous and sorted by (arrival, job_id): arrival
        step, steps each job runs, and the length the job order sees (its estimate, or
        ``duration``).
    demand : float64 array, shape ``(n, d)``
    bounds : int64 array, shape ``(k + 1,)``
        Jobset ``i`` holds rows ``bounds[i]:bounds[i + 1]``.
    capacity : float64 array, shape ``(d,)``
        One machine's capacity.
    machines : int
        m, identical machines.
    slots : int
        Visible job slots M, or ``WHOLE_QUEUE`` (0).
    score: Any, rule: int, knob: float, uniform: bool
        The heuristic: job order, placement rule, parameter, Random mode (:mod:`.dispatch`).
    uniforms : float64 array, shape ``(n,)`` (or ``(0,)`` unless ``uniform``)
        Uniform draws in [0, 1) consumed, per jobset in order, by the Random mode.
    static : bool
        The score depends only on the job (the whole queue may use the ordered tree, and a
        first-fit machine tree).
    prec : tuple
        :func:`.precedence.engine_arrays`: release (int64, ``(n,)``), parent tasks per job,
        task per job, jobs per task (a copy: it is consumed), and the CSR of the jobs waiting
        for each task (empty arrays without precedence).

    Returns
    -------
    start, machine, ready : int64 arrays, shape ``(n,)``
        Start step and machine of every job, and when it became ready (its arrival, or for a
        DAG task its release and parents' finish).
    status : int64 array, shape ``(k,)``
        0 for a completed jobset, ``STALLED`` if jobs were left that could never start.
    """
    k = bounds.shape[0] - 1
    start = np.full(arrival.shape[0], -1, dtype=np.int64)
    machine = np.full(arrival.shape[0], -1, dtype=np.int64)
    ready = np.empty(arrival.shape[0], dtype=np.int64)
    status = np.zeros(k, dtype=np.int64)
    for i in range(k):
        lo = bounds[i]
        hi = bounds[i + 1]
        status[i] = _one_jobset(
            arrival[lo:hi], duration[lo:hi], seen[lo:hi], demand[lo:hi], capacity, machines,
            slots, score, rule, knob, uniform, uniforms[lo:hi], static, start[lo:hi],
            machine[lo:hi], ready[lo:hi], lo, prec,
        )  # fmt: skip
    return start, machine, ready, status
