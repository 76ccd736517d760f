"""The job order of the waiting queue, for the compiled rules: a heuristic's score, highest first.

A score is a compiled function of scalar features (:data:`.dispatch.SCORE_SIGNATURE`). A
**static** order (FCFS, SJF, F1, …) depends only on the job: its scores are computed once per
jobset (:func:`static_scores`). A **dynamic** one (WFP3, UNICEP, HRRN: the wait so far; Packer,
Tetris*: the first machine's free capacity) is scored at every decision (:func:`now_scores`).
Ties keep the queue's admission order.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster.core import Jobs
from schedlab.simulator.cluster.dispatch import alignment_of


@numba.njit(cache=True)
def static_scores(
    score: Any, jobs: Jobs, knob: float, static: bool, size: int
) -> tuple[np.ndarray, bool]:
    """Under a static order, the score of every job of one jobset (float64, ``(n,)``; a job's
    index is its row) and whether they keep it in row order (never rank a later row higher:
    FCFS, whose queue needs no sorting); under a dynamic one (``static`` False), an empty
    array of ``size`` (work space for its scores) and False."""
    if not static:
        return np.empty(size), False
    seen, arrival, demand = jobs.seen, jobs.arrival, jobs.demand
    keys = np.empty(seen.shape[0])
    for j in range(seen.shape[0]):
        keys[j] = score(seen[j], arrival[j], j, 0, knob, 0.0, 0.0, demand[j, 0])
    in_rows = True
    for j in range(1, seen.shape[0]):
        in_rows = in_rows and keys[j] <= keys[j - 1]
    return keys, in_rows


@numba.njit(cache=True)
def now_scores(
    jobs: np.ndarray,
    seen: np.ndarray,
    ready: np.ndarray,
    demand: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    now: int,
    score: Any,
    knob: float,
    out: np.ndarray,
) -> None:
    """``out[j]`` = the dynamic score of each job ``j`` of ``jobs`` at ``now``, packing scores
    against the first machine's free capacity (``free``: ``(m, d)``)."""
    capacity2 = 0.0
    for r in range(capacity.shape[0]):
        capacity2 += capacity[r] * capacity[r]
    for j in jobs:
        al = alignment_of(free[0], demand[j])
        out[j] = score(seen[j], ready[j], j, now, knob, al, capacity2, demand[j, 0])


@numba.njit(cache=True)
def _before(keys: np.ndarray, pos: np.ndarray, a: int, b: int) -> bool:
    """Job ``a`` comes before job ``b``: a higher key, or as high and a lower position."""
    ka, kb = keys[a], keys[b]
    before: bool = (ka > kb) | ((ka == kb) & (pos[a] < pos[b]))  # no branch (:mod:`.heap`)
    return before


@numba.njit(cache=True)
def sort_by(jobs: np.ndarray, keys: np.ndarray, pos: np.ndarray) -> None:
    """Sort ``jobs`` in place by ``keys`` (highest first), ties by ``pos`` (lowest first):
    insertion sort for a few jobs, else a bottom-up merge sort."""
    k = jobs.shape[0]
    if k <= 32:
        for a in range(1, k):
            j = jobs[a]
            b = a - 1
            while b >= 0 and _before(keys, pos, j, jobs[b]):
                jobs[b + 1] = jobs[b]
                b -= 1
            jobs[b + 1] = j
        return
    kk, pp = np.empty(k), np.empty(k, dtype=np.int64)  # gathered: sorted where they lie
    src, dst = np.arange(k), np.empty(k, dtype=np.int64)
    for x in range(k):
        kk[x], pp[x] = keys[jobs[x]], pos[jobs[x]]
    width = 1
    while width < k:
        for lo in range(0, k, 2 * width):
            mid, hi = min(lo + width, k), min(lo + 2 * width, k)
            a, b = lo, mid
            for x in range(lo, hi):
                if b >= hi or (a < mid and not _before(kk, pp, src[b], src[a])):
                    dst[x] = src[a]
                    a += 1
                else:
                    dst[x] = src[b]
                    b += 1
        src, dst = dst, src
        width *= 2
    for x in range(k):
        dst[x] = jobs[src[x]]
    for x in range(k):
        jobs[x] = dst[x]


@numba.njit(cache=True)
def order_now(
    jobs: np.ndarray,
    pos: np.ndarray,
    static: bool,
    keys: np.ndarray,
    seen: np.ndarray,
    ready: np.ndarray,
    demand: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    now: int,
    score: Any,
    knob: float,
) -> None:
    """Sort ``jobs`` in place by the order's score at ``now``, ties by ``pos``: ``keys`` holds a
    static order's scores, or receives a dynamic order's (:func:`now_scores`)."""
    if not static:
        now_scores(jobs, seen, ready, demand, free, capacity, now, score, knob, keys)
    sort_by(jobs, keys, pos)


@numba.njit(cache=True)
def queue_order(
    queue: np.ndarray,
    q: int,
    pos: np.ndarray,
    seen: np.ndarray,
    ready: np.ndarray,
    demand: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    now: int,
    score: Any,
    knob: float,
    static: np.ndarray,
    scratch: np.ndarray,
) -> np.ndarray:
    """The ``q`` waiting jobs of ``queue`` (admission order; ``pos[j]``: j's index in it) by
    score, highest first, ties in queue order. ``static``: a static order's scores
    (:func:`static_scores`), or empty for a dynamic one, scored now into ``scratch`` (float64,
    ``(n,)``); already in order (FCFS) the queue itself is returned (a view)."""
    if static.shape[0]:
        ordered = True
        for k in range(1, q):
            if static[queue[k]] > static[queue[k - 1]]:
                ordered = False
                break
        if ordered:
            return queue[:q]
        keys = static
    else:
        now_scores(queue[:q], seen, ready, demand, free, capacity, now, score, knob, scratch)
        keys = scratch
    out = queue[:q].copy()
    sort_by(out, keys, pos)
    return out
