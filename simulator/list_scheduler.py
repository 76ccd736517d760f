"""Event-driven, compiled list scheduler: the heuristics' fast path through the engine semantics.

It implements exactly the single-pool semantics of :class:`schedlab.simulator.engine.Engine` in
start-now mode (tests check identical schedules): ``M`` visible slots filled in arrival order (a new
job takes the lowest free slot, else joins the backlog; a freed slot takes the backlog head), and at
every decision time the heuristic starts, in its preference order, every visible job that fits now.
Time jumps from event to event (an arrival or a completion): nothing else can change a decision,
so no per-step work and no images are built.
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.scoring import RANDOM, better, fits, score

STALLED = -1


@numba.njit(cache=True, inline="always")
def _heap_push(key: np.ndarray, val: np.ndarray, size: int, k: int, v: int) -> int:
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
def _heap_pop(key: np.ndarray, val: np.ndarray, size: int) -> int:
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


@numba.njit(cache=True)
def _one_jobset(
    arrival: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    slots: int,
    code: int,
    knob: float,
    uniforms: np.ndarray,
    start: np.ndarray,
) -> int:
    n = arrival.shape[0]
    if n == 0:
        return 0
    free = capacity.copy()
    slot_job = np.full(slots, -1, dtype=np.int64)
    backlog = np.empty(n, dtype=np.int64)
    b_head = 0
    b_tail = 0
    heap_key = np.empty(n, dtype=np.int64)
    heap_val = np.empty(n, dtype=np.int64)
    heap_size = 0
    nxt = 0
    started = 0
    draws = 0
    t = arrival[0]
    while started < n:
        while heap_size > 0 and heap_key[0] <= t:
            j = heap_val[0]
            heap_size = _heap_pop(heap_key, heap_val, heap_size)
            free += demand[j]
        while nxt < n and arrival[nxt] <= t:
            placed = False
            for s in range(slots):
                if slot_job[s] < 0:
                    slot_job[s] = nxt
                    placed = True
                    break
            if not placed:
                backlog[b_tail] = nxt
                b_tail += 1
            nxt += 1
        while True:
            best = -1
            if code == RANDOM:
                count = 0
                for s in range(slots):
                    j = slot_job[s]
                    if j >= 0 and fits(free, demand[j]):
                        count += 1
                if count > 0:
                    pick = min(int(uniforms[draws] * count), count - 1)
                    draws += 1
                    for s in range(slots):
                        j = slot_job[s]
                        if j >= 0 and fits(free, demand[j]):
                            if pick == 0:
                                best = s
                                break
                            pick -= 1
            else:
                best_score = -np.inf
                for s in range(slots):
                    j = slot_job[s]
                    if j >= 0 and fits(free, demand[j]):
                        sc = score(
                            code, knob, free, capacity, demand[j], duration[j], arrival[j], j, t
                        )
                        if better(sc, best_score):
                            best_score = sc
                            best = s
            if best < 0:
                break
            j = slot_job[best]
            start[j] = t
            free -= demand[j]
            heap_size = _heap_push(heap_key, heap_val, heap_size, t + duration[j], j)
            started += 1
            if b_head < b_tail:
                slot_job[best] = backlog[b_head]
                b_head += 1
            else:
                slot_job[best] = -1
        if started == n:
            break
        t_next = np.iinfo(np.int64).max
        if heap_size > 0:
            t_next = heap_key[0]
        if nxt < n and arrival[nxt] < t_next:
            t_next = arrival[nxt]
        if t_next == np.iinfo(np.int64).max:
            return STALLED
        t = t_next
    return 0


@numba.njit(cache=True)
def run_jobsets(
    arrival: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    bounds: np.ndarray,
    capacity: np.ndarray,
    slots: int,
    code: int,
    knob: float,
    uniforms: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Schedule every jobset with one heuristic.

    Parameters
    ----------
    arrival, duration : int64 arrays, shape ``(n,)``
        Jobs of all jobsets, each jobset contiguous and sorted by (arrival, job_id).
    demand : float64 array, shape ``(n, d)``
    bounds : int64 array, shape ``(k + 1,)``
        Jobset ``i`` holds rows ``bounds[i]:bounds[i + 1]``.
    capacity : float64 array, shape ``(d,)``
    slots : int
        Visible job slots M.
    code, knob : heuristic code (see :mod:`scoring`) and its Tetris* knob.
    uniforms : float64 array, shape ``(n,)``
        Uniform draws in [0, 1) consumed, per jobset in order, by the Random heuristic.

    Returns
    -------
    start : int64 array, shape ``(n,)``
        Start step of every job.
    status : int64 array, shape ``(k,)``
        0 for a completed jobset, ``STALLED`` if jobs were left that could never start.
    """
    k = bounds.shape[0] - 1
    start = np.full(arrival.shape[0], -1, dtype=np.int64)
    status = np.zeros(k, dtype=np.int64)
    for i in range(k):
        lo = bounds[i]
        hi = bounds[i + 1]
        status[i] = _one_jobset(
            arrival[lo:hi],
            duration[lo:hi],
            demand[lo:hi],
            capacity,
            slots,
            code,
            knob,
            uniforms[lo:hi],
            start[lo:hi],
        )
    return start, status
