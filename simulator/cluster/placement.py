"""How a job is placed on a machine: fitting, earliest fit, and the machine-choice rules.

A cluster is ``m`` identical machines of capacity ``c`` (shape ``(d,)``). Free capacity is held
per machine: ``free[i]`` (shape ``(d,)``) now, or ``free[k, i]`` at ``now + k`` in a look-ahead
profile (shape ``(H, m, d)``). A job **fits** on machine ``i`` when its demand is at most the free
capacity of ``i`` in every resource (within ``EPS``), at every step of its duration.

* **Agents** name the machine themselves (action ``1 + i·M + q``); the job starts at the
  earliest offset ``0 .. max(0, T − duration)`` where it fits on that machine
  (:func:`earliest_fit`).
* **Heuristics** start jobs now; a **placement rule** (:func:`place`) picks the machine among
  those where the job fits now; :data:`PLACEMENTS` maps the rules' names to their codes:

  ``firstfit``  the lowest-numbered machine where the job fits;
  ``bestfit``   the tightest fit: least normalised free capacity left after placing the job,
                ``Σ_r (free_r − demand_r) / c_r`` (classic bin-packing best fit);
  ``worstfit``  the loosest fit: most normalised free capacity left;
  ``align``     Tetris' alignment: largest ``Σ_r free_r · demand_r / c_r²``.

  Ties go to the lowest machine index. With one machine every rule is "machine 0 if it fits".
"""

from __future__ import annotations

import numba
import numpy as np

EPS = 1e-9
"""Tolerance of every capacity comparison (demands are floats)."""

FIRST_FIT, BEST_FIT, WORST_FIT, ALIGN = range(4)
PLACEMENTS = {"firstfit": FIRST_FIT, "bestfit": BEST_FIT, "worstfit": WORST_FIT, "align": ALIGN}
"""Placement rule name -> code (:func:`place`)."""


@numba.njit(cache=True, inline="always")
def fits(free: np.ndarray, demand: np.ndarray) -> bool:
    """Whether ``demand`` fits in ``free`` (both shape ``(d,)``), within ``EPS``."""
    for r in range(free.shape[0]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if demand[r] > free[r] + EPS:
            return False
    return True


@numba.njit(cache=True, inline="always")
def fits_for(profile: np.ndarray, first: int, machine: int, demand: np.ndarray, dur: int) -> bool:
    """Whether ``demand`` fits on ``machine`` at every step ``first .. first + dur − 1`` of the
    free-capacity ``profile`` (shape ``(H, m, d)``)."""
    for k in range(first, first + dur):  # noqa: SIM110 (numba: explicit loop)
        if not fits(profile[k, machine], demand):
            return False
    return True


@numba.njit(cache=True)
def earliest_fit(
    profile: np.ndarray, machine: int, demand: np.ndarray, dur: int, horizon: int
) -> int:
    """Smallest offset in ``[0, max(0, horizon − dur)]`` where the job fits on ``machine`` for its
    whole duration, or -1. ``profile``: free capacity, shape ``(H, m, d)`` with
    ``H ≥ max(horizon, dur) + dur``. A job longer than the horizon can only start now."""
    run = 0
    for k in range(max(0, horizon - dur) + dur):
        run = run + 1 if fits(profile[k, machine], demand) else 0
        if run >= dur:
            return k - dur + 1
    return -1


@numba.njit(cache=True, inline="always")
def _rule_score(rule: int, free: np.ndarray, capacity: np.ndarray, demand: np.ndarray) -> float:
    """How much ``rule`` prefers a machine with ``free`` capacity (higher first)."""
    if rule == ALIGN:
        score = 0.0
        for r in range(free.shape[0]):
            score += free[r] * demand[r] / (capacity[r] * capacity[r])
        return score
    left = 0.0
    for r in range(free.shape[0]):
        left += (free[r] - demand[r]) / capacity[r]
    return -left if rule == BEST_FIT else left


@numba.njit(cache=True, inline="always")
def place(rule: int, free: np.ndarray, capacity: np.ndarray, demand: np.ndarray) -> int:
    """The machine ``rule`` picks for ``demand`` among those where it fits (``free``: shape
    ``(m, d)``, capacity available to the job), or -1; ties go to the lowest index."""
    best, best_score = -1, -np.inf
    for i in range(free.shape[0]):
        if not fits(free[i], demand):
            continue
        if rule == FIRST_FIT:
            return i
        score = _rule_score(rule, free[i], capacity, demand)
        if score > best_score + EPS:
            best, best_score = i, score
    return best
