"""Where an agent's action places its job under a queue discipline (compiled, ``cache=True``).

One function, :func:`action_offset`, says where action (slot ``q``, machine ``i``) places its
job in env ``b`` of the batched :data:`~schedlab.simulator.cluster.batched_state.State`, or
that the discipline does not allow it; the action mask, a step and ``skip_forced`` all call it
(:mod:`schedlab.simulator.cluster.kernels`), so they cannot disagree. Under greedy it is the
earliest fit within the horizon; under strict and easy an action starts its job now or is not
allowed, and EASY's reservation for the head job (:func:`env_reservation`) is computed once per
env and decision. The semantics are documented in :mod:`schedlab.simulator.cluster.batched`.
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster.batched_state import State
from schedlab.simulator.cluster.disciplines import GREEDY, STRICT
from schedlab.simulator.cluster.placement import EPS, earliest_fit, fits_for

NO_RESERVATION = (-1, 0, 0, False)
""":func:`_reservation` where none is needed (greedy): no head."""


@numba.njit(cache=True, inline="always")
def _fits_any_now(free: np.ndarray, b: int, dem: np.ndarray, dur: int) -> bool:
    for i in range(free.shape[2]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if fits_for(free[b], 0, i, dem, dur):
            return True
    return False


@numba.njit(cache=True, inline="always")
def _head(slot: np.ndarray) -> int:
    """The slot (of ``slot``, shape ``(M,)``) holding the earliest-arrived waiting job, or -1:
    slot jobs arrived before backlog jobs, so it is the smallest job row."""
    h = -1
    for q in range(slot.shape[0]):
        if slot[q] >= 0 and (h < 0 or slot[q] < slot[h]):
            h = q
    return h


@numba.njit(cache=True)
def _start_beside(
    profile: np.ndarray, i: int, demand: np.ndarray, dur: int, taken: np.ndarray, until: int
) -> int:
    """Earliest offset in the whole ``profile`` (shape ``(H, m, d)``) where ``demand`` fits on
    machine ``i`` for ``dur`` steps while ``taken`` (shape ``(d,)``) is also used there at offsets
    ``0 .. until − 1`` (a job tentatively started now; ``until = 0``: none), or ``H`` if none.
    The profile is read, never written: ``free − taken`` is what placing the job
    (``kernels._place``) would leave."""
    run = 0
    for k in range(profile.shape[0]):
        ok = True
        for r in range(demand.shape[0]):
            used = taken[r] if k < until else 0.0
            if demand[r] > profile[k, i, r] - used + EPS:
                ok = False
                break
        run = run + 1 if ok else 0
        if run >= dur:
            return k - dur + 1
    return int(profile.shape[0])


@numba.njit(cache=True)
def _reservation(
    profile: np.ndarray, slot: np.ndarray, demand: np.ndarray, duration: np.ndarray
) -> tuple[int, int, int, bool]:
    """EASY's reservation for the head job of one env (``profile``: its free capacity, shape
    ``(H, m, d)``; ``slot``: its slots, shape ``(M,)``): ``(head slot, earliest start offset
    over every machine, a machine where it is reached, whether another machine reaches it
    too)``; :data:`NO_RESERVATION` without a waiting job.

    The start is looked for over the whole tracked profile, not only the horizon ``T``: every
    allocation ends within ``max(T, longest duration)`` steps and ``H = T + 2·longest + 1``, so
    the head always has a reservation, even beyond the image the agent sees."""
    h = _head(slot)
    if h < 0:
        return NO_RESERVATION
    j = slot[h]
    best, where, tie = profile.shape[0], 0, False
    for i in range(profile.shape[1]):
        t = _start_beside(profile, i, demand[j], duration[j], demand[j], 0)
        if t < best:
            best, where, tie = t, i, False
        elif t == best:
            tie = True
    return h, best, where, tie


@numba.njit(cache=True, inline="always")
def action_offset(s: State, b: int, q: int, i: int, res: tuple[int, int, int, bool]) -> int:
    """Where action (slot ``q``, machine ``i``) places its job under env ``b``'s discipline, or
    -1 if the action is not allowed (it then acts as void). ``res``: :func:`_reservation` of
    the env (any value under greedy).

    greedy: the earliest fit within the horizon. strict: the head job only, and only now.
    easy: the head now; another job now if it does not delay the head's reservation (it leaves
    it on another machine that reaches it, or the head still starts by then beside it)."""
    j = s.slot[b, q]
    if j < 0:
        return -1
    if s.queue[0] == GREEDY:
        return earliest_fit(s.free[b], i, s.demand[j], s.duration[j], s.horizon)
    if not fits_for(s.free[b], 0, i, s.demand[j], s.duration[j]):
        return -1
    h, t, where, tie = res
    if q == h:
        return 0
    if s.queue[0] == STRICT:
        return -1
    if i != where or tie:
        return 0
    k = s.slot[b, h]
    later = _start_beside(s.free[b], i, s.demand[k], s.duration[k], s.demand[j], s.duration[j])
    return 0 if later <= t else -1


@numba.njit(cache=True, inline="always")
def env_reservation(s: State, b: int) -> tuple[int, int, int, bool]:
    """:func:`_reservation` of env ``b`` (none needed under greedy)."""
    if s.queue[0] == GREEDY:
        return NO_RESERVATION
    return _reservation(s.free[b], s.slot[b], s.demand, s.duration)


@numba.njit(cache=True, inline="always")
def startable_now(s: State, b: int, q: int, res: tuple[int, int, int, bool]) -> bool:
    """Whether the job in slot ``q`` (not empty) could start now on some machine under the
    env's discipline (greedy: it fits now somewhere)."""
    j = s.slot[b, q]
    if s.queue[0] == GREEDY:
        return _fits_any_now(s.free, b, s.demand[j], s.duration[j])
    for i in range(s.free.shape[2]):  # noqa: SIM110 (numba: explicit loop, no generator)
        if action_offset(s, b, q, i, res) == 0:
            return True
    return False
