"""The list-scheduling decision, once for every engine: which visible job starts now, and where.

A work-conserving heuristic is a **job order** (a compiled score of scalar features, higher first;
see :data:`SCORE_SIGNATURE`) plus a **placement rule** (:func:`.placement.place`). At a decision
time :func:`choose` looks at the visible jobs in tie order (slot order, or arrival order for the
whole queue); for each job the rule picks a machine among those where it fits now for its whole
duration, and the score is computed against the capacity that machine has free for the job's whole
duration (the free capacity now, unless an agent reserved future capacity); the strictly highest
score wins (ties: the first in tie order). The engines call it until nothing fits, then advance
time. ``uniform`` mode instead picks the ``floor(u·k)``-th of the ``k`` jobs that fit (the Random
heuristic).

Scores closer than ``TIE_RTOL`` (relative) are ties, so rounding noise does not decide: e.g.
``np.dot((7.7, 7.7), (4.6, 7.7))`` and ``np.dot((7.7, 7.7), (7.7, 4.6))`` differ in the last bit
with fused multiply-add, and the job scanned first must keep the tie on every engine.

Scores take scalars only (no arrays): a first-class function called with array arguments costs
the kernels 2–3× their speed, with scalars it costs nothing measurable.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types

from schedlab.simulator.cluster.placement import FIRST_FIT, fits, place
from schedlab.simulator.cluster.trees import first_dominating

TIE_RTOL = 1e-12
TREE_FROM = 16
"""First fit scans up to this many machines; beyond, it descends the machine tree."""

SCORE_SIGNATURE = types.float64(
    types.int64,  # duration: steps
    types.int64,  # arrival: step
    types.int64,  # index: position of the job in its jobset's arrival order
    types.int64,  # now: the current step
    types.float64,  # knob: the heuristic's parameter (Tetris*)
    types.float64,  # alignment: Σ_r free_r · demand_r on the job's machine (Tetris' packing)
    types.float64,  # capacity2: Σ_r capacity_r² of one machine (the largest alignment)
    types.float64,  # size: the job's demand of the first resource (processors for SWF logs)
)
"""Signature of a job-order score (a ``numba.cfunc`` of scalar features); higher starts first.

``duration`` is what the scheduler sees of the job's length: its ``estimate`` (the user's
request) where the JobSet has one and the policy is not clairvoyant, else the true duration."""


@numba.cfunc(SCORE_SIGNATURE, cache=True)
def arrival_order(
    duration: int,
    arrival: int,
    index: int,
    now: int,
    knob: float,
    alignment: float,
    capacity2: float,
    size: float,
) -> float:
    """First come, first served: ``−index``. Also the engines' time-limit fallback order."""
    return -float(index)


@numba.njit(cache=True, inline="always")
def better(candidate: float, best: float) -> bool:
    """Whether ``candidate`` beats ``best`` by more than rounding noise (``TIE_RTOL``)."""
    if best == -np.inf:
        return candidate > best
    return candidate > best + TIE_RTOL * abs(best)


@numba.njit(cache=True, inline="always")
def available(profile: np.ndarray, duration: int, scratch: np.ndarray) -> np.ndarray:
    """Capacity free on every machine for ``duration`` steps from now, shape ``(m, d)``: the
    component-wise minimum of ``profile[0 .. duration − 1]`` (``profile``: shape ``(H, m, d)``;
    with ``H = 1`` nothing is reserved ahead and the free capacity now holds). Written into
    ``scratch`` (shape ``(m, d)``) unless ``H = 1``."""
    if profile.shape[0] == 1:
        result: np.ndarray = profile[0]
        return result
    for i in range(scratch.shape[0]):
        for r in range(scratch.shape[1]):
            scratch[i, r] = profile[0, i, r]
    for k in range(1, min(duration, profile.shape[0])):
        for i in range(scratch.shape[0]):
            for r in range(scratch.shape[1]):
                scratch[i, r] = min(scratch[i, r], profile[k, i, r])
    return scratch


@numba.njit(cache=True, inline="always")
def machine_for(
    free: np.ndarray, capacity: np.ndarray, demand: np.ndarray, rule: int, mtree: np.ndarray
) -> int:
    """The machine placement ``rule`` picks for ``demand`` among those where it fits (``free``:
    shape ``(m, d)``), or -1; one machine needs no rule, and first fit over many machines uses
    the machine tree ``mtree`` (free capacity now, :mod:`.trees`) when one is kept."""
    if free.shape[0] == 1:
        return 0 if fits(free[0], demand) else -1
    if rule == FIRST_FIT and mtree.shape[0] > 0:
        return first_dominating(mtree, demand)
    return place(rule, free, capacity, demand)


@numba.njit(cache=True, inline="always")
def alignment_of(free: np.ndarray, demand: np.ndarray) -> float:
    """Tetris' alignment ``Σ_r free_r · demand_r`` of a job on a machine with ``free`` capacity."""
    total = 0.0
    for r in range(demand.shape[0]):
        total += free[r] * demand[r]
    return total


@numba.njit(cache=True)
def choose(
    view: np.ndarray,
    profile: np.ndarray,
    scratch: np.ndarray,
    capacity: np.ndarray,
    demand: np.ndarray,
    duration: np.ndarray,
    seen: np.ndarray,
    arrival: np.ndarray,
    base: int,
    now: int,
    score: Any,  # a compiled SCORE_SIGNATURE function
    keys: np.ndarray,
    rule: int,
    mtree: np.ndarray,
    knob: float,
    u: float,
) -> tuple[int, int]:
    """The visible job to start now and its machine: ``(position in view, machine)``, or
    ``(-1, -1)`` if no visible job fits: the best score, or with a draw ``u`` the Random
    heuristic's pick, the ``floor(u·k)``-th of the ``k`` visible jobs that fit.

    Parameters
    ----------
    view : int64, shape ``(q,)``
        Job rows in tie order; -1 marks an empty slot.
    profile : float64, shape ``(H, m, d)``
        Free capacity of every machine now and ahead (``H = 1``: now, nothing reserved).
    scratch : float64, shape ``(m, d)``
        Work space.
    capacity : float64, shape ``(d,)``
        One machine's capacity.
    demand : float64, shape ``(n, d)``; duration, seen, arrival : int64, shape ``(n,)``
        Jobs (rows as in ``view``): ``duration`` is the steps a job runs (the fit is checked
        for it), ``seen`` the length the score sees (the estimate, or ``duration``).
    base : int
        Row of the jobset's first job (a job's ``index`` is ``row − base``).
    now : int
        The current step.
    score: Any, rule: int, knob: float
        Job order, placement rule (:data:`.placement.PLACEMENTS`) and the order's parameter.
    mtree : float64, shape ``(2P, d)`` or ``(0, d)``
        Machine tree of the free capacity now (nothing reserved ahead), or empty.
    keys : float64, shape ``(n,)`` or ``(0,)``
        The score of every job, precomputed for a static order (one that depends only on the
        job); empty: call ``score``.
    u : float
        The Random heuristic's uniform draw in [0, 1) (no score is computed), or negative: the
        best score.
    """
    if u >= 0.0:  # Random: the floor(u·k)-th of the k jobs that fit
        fitting = 0
        for k in range(view.shape[0]):
            j = view[k]
            if j >= 0:
                free = available(profile, duration[j], scratch)
                if machine_for(free, capacity, demand[j], rule, mtree) >= 0:
                    fitting += 1
        pick = min(int(u * fitting), fitting - 1)
        for k in range(view.shape[0]):
            j = view[k]
            if j >= 0:
                free = available(profile, duration[j], scratch)
                i = machine_for(free, capacity, demand[j], rule, mtree)
                if i >= 0:
                    if pick == 0:
                        return k, i
                    pick -= 1
        return -1, -1
    capacity2 = 0.0
    for r in range(capacity.shape[0]):
        capacity2 += capacity[r] * capacity[r]
    best, best_machine, best_score = -1, -1, -np.inf
    one = profile.shape[0] == 1 and profile.shape[1] == 1  # one machine, nothing reserved
    static = keys.shape[0] > 0
    free0 = profile[0, 0]
    for k in range(view.shape[0]):
        j = view[k]
        if j < 0:
            continue
        dj = demand[j]
        if one:
            if not fits(free0, dj):
                continue
            i = 0
            alignment = 0.0 if static else alignment_of(free0, dj)
        else:
            free = available(profile, duration[j], scratch)
            i = machine_for(free, capacity, dj, rule, mtree)
            if i < 0:
                continue
            alignment = 0.0 if static else alignment_of(free[i], dj)
        if static:
            sc = keys[j]
        else:
            sc = score(seen[j], arrival[j], j - base, now, knob, alignment, capacity2, dj[0])
        if better(sc, best_score):
            best, best_machine, best_score = k, i, sc
    return best, best_machine


@numba.njit(cache=True)
def choose_batch(
    envs: np.ndarray,
    free: np.ndarray,
    view: np.ndarray,
    capacity: np.ndarray,
    demand: np.ndarray,
    duration: np.ndarray,
    seen: np.ndarray,
    arrival: np.ndarray,
    base: np.ndarray,
    now: np.ndarray,
    score: Any,  # a compiled SCORE_SIGNATURE function
    rule: int,
    knob: float,
    uniform: bool,
    uniforms: np.ndarray,
    out: np.ndarray,
) -> None:
    """:func:`choose` for each env of a snapshot, as actions: ``out[x] = 1 + i·M + q`` (start the
    job of visible position ``q`` now on machine ``i``) or 0 when no visible job fits now.

    ``free`` (``(B, H, m, d)``), ``view`` (``(B, M)``), ``base``, ``now`` (``(B,)``) are indexed by
    ``envs`` (``(n,)``); ``uniforms`` (``(n,)``) are the Random mode's draws; ``out``: int64,
    shape ``(n,)``.
    """
    M = view.shape[1]
    scratch = np.empty((free.shape[2], free.shape[3]))
    dynamic = np.empty(0)
    no_tree = np.empty((0, free.shape[3]))
    for x in range(envs.shape[0]):
        b = envs[x]
        k, i = choose(
            view[b],
            free[b],
            scratch,
            capacity,
            demand,
            duration,
            seen,
            arrival,
            base[b],
            now[b],
            score,
            dynamic,
            rule,
            no_tree,
            knob,
            uniforms[x] if uniform else -1.0,
        )
        out[x] = 0 if k < 0 else 1 + i * M + k
