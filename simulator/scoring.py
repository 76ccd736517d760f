"""Heuristic scores, compiled once and shared by the fast list scheduler and the step engine.

Every heuristic is a *list scheduler*: among the visible waiting jobs that fit now, it starts the
one with the strictly highest score (ties: lowest slot index), and repeats until nothing fits.
Scores closer than ``TIE_RTOL`` (relative) are ties (:func:`better`): rounding noise does not
decide a tie, and the fast path and the step engine (which sum free resources in different
orders) make the same choices.
"""

from __future__ import annotations

import numba
import numpy as np

RANDOM, FCFS, SJF, PACKER, TETRIS, HRRN = range(6)
EPS = 1e-9
TIE_RTOL = 1e-12


@numba.njit(cache=True, inline="always")
def fits(free: np.ndarray, demand: np.ndarray) -> bool:
    """Whether ``demand`` fits in ``free`` (both shape ``(d,)``), with a float tolerance."""
    for r in range(free.shape[0]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if demand[r] > free[r] + EPS:
            return False
    return True


@numba.njit(cache=True, inline="always")
def better(candidate: float, best: float) -> bool:
    """Whether ``candidate`` beats ``best`` by more than rounding noise (``TIE_RTOL``, relative).

    E.g. ``np.dot((7.7, 7.7), (4.6, 7.7))`` and ``np.dot((7.7, 7.7), (7.7, 4.6))`` differ in the
    last bit (fused multiply-add); the job scanned first (the lower slot) must keep the tie.
    """
    if best == -np.inf:
        return candidate > best
    return candidate > best + TIE_RTOL * abs(best)


@numba.njit(cache=True)
def score(
    code: int,
    knob: float,
    free: np.ndarray,
    capacity: np.ndarray,
    demand: np.ndarray,
    duration: int,
    arrival: int,
    index: int,
    now: int,
) -> float:
    """Score of one fitting job under heuristic ``code`` (higher is preferred).

    Parameters
    ----------
    free, capacity, demand
        Free resources now, cluster capacity and the job's demand, each shape ``(d,)``.
    duration, arrival, index, now
        Job duration (steps), arrival step, position in arrival order, current step.
    """
    if code == SJF:
        return 1.0 / duration
    if code == PACKER:
        return float(np.dot(free, demand))
    if code == TETRIS:
        return (
            knob * float(np.dot(free, demand)) / float(np.dot(capacity, capacity))
            + (1.0 - knob) / duration
        )
    if code == HRRN:
        return 1.0 + (now - arrival) / duration
    if code == FCFS:
        return -float(index)
    return 0.0  # RANDOM picks by a uniform draw, not by score
