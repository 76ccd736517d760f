"""The job order of the waiting queue, for the compiled rules: a heuristic's score, highest first.

A score is a compiled function of scalar features (:data:`.dispatch.SCORE_SIGNATURE`). A
**static** order (FCFS, SJF, F1, …) depends only on the job: its scores are computed once per
jobset (:func:`static_scores`). A **dynamic** one (WFP3, UNICEP, HRRN: the wait so far; Packer,
Tetris*: the first machine's free capacity) is scored at every decision (:func:`now_scores`).
Ties keep the queue's admission order. What a rule needs to order its queue is one
:class:`Ranking` per jobset (:func:`ranking`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numba
import numpy as np

from schedlab.simulator.cluster.core import Jobs, Setting
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


class Ranking(NamedTuple):
    """How one jobset's waiting jobs are put in order (:func:`ranking`), for :func:`order_now`
    and :func:`queue_order`."""

    static: bool
    """A static order (scores fixed per job) or a dynamic one (scored at every decision)."""
    keys: np.ndarray
    """float64 ``(n,)``: a static order's scores; a dynamic one's, written at each decision."""
    pos: np.ndarray
    """int64 ``(n,)``: each job's position in the queue (admission order), for ties."""
    seen: np.ndarray
    """The jobs' run times as the scheduler sees them (steps, ``(n,)``)."""
    ready: np.ndarray
    """When each job became ready (steps, ``(n,)``): a dynamic order's wait so far."""
    demand: np.ndarray
    """float64 ``(n, d)``."""
    capacity: np.ndarray
    """A machine's capacity (``(d,)``)."""
    score: Any
    """The compiled score (:data:`.dispatch.SCORE_SIGNATURE`)."""
    knob: float
    """The score's parameter."""


@numba.njit(cache=True)
def ranking(jobs: Jobs, ready: np.ndarray, pos: np.ndarray, how: Setting) -> tuple[Ranking, bool]:
    """The :class:`Ranking` of one jobset under ``how``'s order (its score, knob and whether it
    is static), and whether a static order keeps the jobs in row order
    (:func:`static_scores`)."""
    capacity, _, score, _, knob, static, _, _, _ = how
    keys, in_rows = static_scores(score, jobs, knob, static, jobs.seen.shape[0])
    rank = Ranking(static, keys, pos, jobs.seen, ready, jobs.demand, capacity, score, knob)
    return rank, in_rows


@numba.njit(cache=True)
def now_scores(jobs: np.ndarray, rank: Ranking, free: np.ndarray, now: int) -> None:
    """``rank.keys[j]`` = the dynamic score of each job ``j`` of ``jobs`` at ``now``, packing
    scores against the first machine's free capacity (``free``: ``(m, d)``)."""
    capacity2 = 0.0
    for r in range(rank.capacity.shape[0]):
        capacity2 += rank.capacity[r] * rank.capacity[r]
    _, keys, _, seen, ready, demand, _, score, knob = rank
    for j in jobs:
        al = alignment_of(free[0], demand[j])
        keys[j] = score(seen[j], ready[j], j, now, knob, al, capacity2, demand[j, 0])


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
def order_now(jobs: np.ndarray, rank: Ranking, free: np.ndarray, now: int) -> None:
    """Sort ``jobs`` in place by the order's score at ``now`` (a dynamic order's scored now:
    :func:`now_scores`), ties by position."""
    if not rank.static:
        now_scores(jobs, rank, free, now)
    sort_by(jobs, rank.keys, rank.pos)


@numba.njit(cache=True)
def queue_order(queue: np.ndarray, q: int, rank: Ranking, free: np.ndarray, now: int) -> np.ndarray:
    """The ``q`` waiting jobs of ``queue`` (admission order) by score at ``now``, highest first,
    ties in queue order; already in order under a static order (FCFS) the queue itself is
    returned (a view)."""
    if rank.static:
        ordered = True
        for k in range(1, q):
            if rank.keys[queue[k]] > rank.keys[queue[k - 1]]:
                ordered = False
                break
        if ordered:
            return queue[:q]
    out = queue[:q].copy()
    order_now(out, rank, free, now)
    return out
