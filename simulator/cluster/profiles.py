"""Per-machine profiles of free capacity over time, for conservative backfilling (:mod:`.
conservative`).

Machine ``i``'s profile is its first ``cnt[i]`` sorted segments: ``times[i, k]`` (int64 steps)
starts segment ``k``, which holds ``vals[i, k]`` (float64, ``(d,)``) free until the next one
starts (the last is open ended); no two neighbours hold exactly the same (a bound a change
leaves between equal segments is dropped: without that, compressions that move reservations
leave their old bounds behind, and an overloaded queue's profile grew to many times its
reservations). A **level index** ``low[k, i]`` (``k < LEVELS``) says when machine ``i`` first
has ``theta[k] = capacity[0] / 2**k`` of the first resource free (or a lower bound of it, all
a search needs): a lower bound on the earliest fit of any job that needs that much, so most
machines are ruled out of a search without scanning their segments; a change updates it over
the changed interval only. Costs: ``O(s·d)`` to take a demand over ``s`` segments,
``O(m + Σ s_i·d)`` for an earliest fit (a pass over the index, then the segments of each
machine not ruled out, up to the best time so far).
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster.core import NEVER
from schedlab.simulator.cluster.placement import EPS, FIRST_FIT, fits, place

LEVELS = 16
"""Free-capacity levels of the first resource indexed per machine (``capacity[0] / 2**k``)."""


@numba.njit(cache=True)
def new(
    capacity: np.ndarray, machines: int, now: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empty machines from ``now`` on: ``(times, vals, cnt, theta, low)``."""
    d = capacity.shape[0]
    theta = np.empty(LEVELS)
    for k in range(LEVELS):
        theta[k] = capacity[0] / 2.0**k
    times = np.empty((machines, 64), dtype=np.int64)
    vals = np.empty((machines, 64, d))
    cnt = np.ones(machines, dtype=np.int64)
    low = np.empty((LEVELS, machines), dtype=np.int64)
    for i in range(machines):
        times[i, 0] = now
        for y in range(d):
            vals[i, 0, y] = capacity[y]
        index(times, vals, cnt, i, theta, low, now)
    return times, vals, cnt, theta, low


@numba.njit(cache=True, inline="always")
def locate(times: np.ndarray, i: int, c: int, x: int) -> int:
    """Index of machine ``i``'s segment holding ``x`` (of its first ``c``; the first one starts
    no later than ``x``)."""
    lo, hi = 0, c
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if times[i, mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _grow(times: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The profile arrays with twice the room for segments."""
    m, c = times.shape
    t2 = np.empty((m, 2 * c), dtype=np.int64)
    v2 = np.empty((m, 2 * c, vals.shape[2]))
    for i in range(m):
        for k in range(c):
            t2[i, k] = times[i, k]
            for y in range(vals.shape[2]):
                v2[i, k, y] = vals[i, k, y]
    return t2, v2


@numba.njit(cache=True)
def take(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    i: int,
    a: int,
    b: int,
    need: np.ndarray,
    sign: float,
    now: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Take ``sign · need`` from machine ``i`` over ``[a, b)`` (``b = NEVER``: open ended),
    dropping its segments that ended by ``now`` first; the (maybe grown) arrays."""
    c, d = cnt[i], vals.shape[2]
    k0 = locate(times, i, c, now)
    if k0 > 0:  # segments wholly in the past
        for s in range(k0, c):
            times[i, s - k0] = times[i, s]
            for y in range(d):
                vals[i, s - k0, y] = vals[i, s, y]
        c -= k0
    if c + 2 > times.shape[1]:
        times, vals = _grow(times, vals)
    first = -1
    for x in (a, b):
        if x == NEVER:
            break
        k = locate(times, i, c, x)
        if times[i, k] != x:  # split the segment holding x: shift the later ones right
            for s in range(c, k, -1):
                times[i, s] = times[i, s - 1]
                for y in range(d):
                    vals[i, s, y] = vals[i, s - 1, y]
            times[i, k + 1] = x
            c += 1
            k += 1
        if first < 0:
            first = k
    s = first
    while s < c and (b == NEVER or times[i, s] < b):
        for y in range(need.shape[0]):
            vals[i, s, y] -= sign * need[y]
        s += 1
    for k in (s, first):  # a bound now between equal segments goes (the later one first)
        same = 0 < k < c
        for y in range(d if same else 0):
            same = same and vals[i, k - 1, y] == vals[i, k, y]
        if same:
            for x in range(k + 1, c):
                times[i, x - 1] = times[i, x]
                for y in range(d):
                    vals[i, x - 1, y] = vals[i, x, y]
            c -= 1
    cnt[i] = c
    return times, vals


@numba.njit(cache=True)
def index(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    i: int,
    theta: np.ndarray,
    low: np.ndarray,
    now: int,
) -> None:
    """Machine ``i``'s level index from ``now`` on (``NEVER``: never that much free)."""
    c = cnt[i]
    kmin = theta.shape[0]
    for s in range(locate(times, i, c, now), c):
        v = vals[i, s, 0]
        while kmin > 0 and v >= theta[kmin - 1]:
            kmin -= 1
            low[kmin, i] = max(times[i, s], now)
        if kmin == 0:
            break
    for k in range(kmin):
        low[k, i] = NEVER


@numba.njit(cache=True)
def _reindex(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    i: int,
    theta: np.ndarray,
    low: np.ndarray,
    a: int,
    b: int,
    given: bool,
    now: int,
) -> None:
    """Machine ``i``'s level index after its free capacity changed over ``[a, b)`` only
    (``a >= now``; ``b = NEVER``: open ended), as :func:`index` would make it: capacity
    ``given`` back can bring a level's first time earlier, into ``[a, b)``; capacity taken can
    delay only the levels whose first time lay in ``[a, b)``; those, and the levels whose time
    has passed (set before ``now``), are looked for again from ``now``, only as far as the last
    of them (``O(L)`` per segment visited, where :func:`index` scans to the machine's first
    wholly free segment, the profile's end on a busy machine)."""
    c, levels = cnt[i], theta.shape[0]
    open_levels = 0
    for k in range(levels):
        if low[k, i] < now or (not given and a <= low[k, i] < b):
            low[k, i] = -1  # to find again
            open_levels += 1
    s = locate(times, i, c, a)
    while given and s < c and times[i, s] < b:
        v, ts = vals[i, s, 0], max(times[i, s], now)
        for k in range(levels):
            if v >= theta[k] and low[k, i] > ts:
                low[k, i] = ts
        s += 1
    s = locate(times, i, c, now)
    while open_levels and s < c:
        v, ts = vals[i, s, 0], max(times[i, s], now)
        for k in range(levels):
            if low[k, i] == -1 and v >= theta[k]:
                low[k, i] = ts
                open_levels -= 1
        s += 1
    for k in range(levels if open_levels else 0):
        if low[k, i] == -1:
            low[k, i] = NEVER


@numba.njit(cache=True)
def _machine_fit(
    times: np.ndarray,
    vals: np.ndarray,
    c: int,
    i: int,
    need: np.ndarray,
    dur: int,
    lo: int,
    bound: int,
    incl: bool,
) -> int:
    """Machine ``i``'s earliest time ``>= lo`` where ``need`` fits over ``[time, time + dur)``
    (at least the segment holding it), if earlier than ``bound`` (or equal, ``incl``); else
    ``NEVER``."""
    dd = max(dur, 1)
    run = -1
    k = locate(times, i, c, lo)
    while k < c:
        s = max(times[i, k], lo)
        if run < 0 and (s > bound or (s == bound and not incl)):
            return NEVER
        if fits(vals[i, k], need):
            if run < 0:
                run = s
            if k + 1 == c or times[i, k + 1] >= run + dd:
                return run
        else:
            run = -1
        k += 1
    return NEVER


@numba.njit(cache=True)
def _lowest_over(
    times: np.ndarray, vals: np.ndarray, c: int, i: int, t0: int, dur: int, out: np.ndarray
) -> None:
    """``out``: machine ``i``'s least free capacity over ``[t0, t0 + dur)`` (at least the segment
    holding ``t0``), per resource."""
    k = locate(times, i, c, t0)
    for y in range(out.shape[0]):
        out[y] = vals[i, k, y]
    k += 1
    while k < c and times[i, k] < t0 + dur:
        for y in range(out.shape[0]):
            out[y] = min(out[y], vals[i, k, y])
        k += 1


@numba.njit(cache=True)
def earliest(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    need: np.ndarray,
    dur: int,
    theta: np.ndarray,
    low: np.ndarray,
    now: int,
    rule: int,
    capacity: np.ndarray,
    avail: np.ndarray,
    fits_at: np.ndarray,
) -> tuple[int, int]:
    """The earliest time ``need`` fits for ``dur`` steps on some machine, and the machine the
    placement ``rule`` picks among those fitting then (given the least capacity each has free
    over the interval; first fit: the lowest-numbered), or ``(NEVER, -1)``. ``fits_at``
    (int64, ``(m,)``) and ``avail`` (``(m, d)``) are work space."""
    m = cnt.shape[0]
    level = -1
    for k in range(theta.shape[0]):
        if theta[k] <= need[0] - 2 * EPS:
            level = k
            break
    i0, lb0 = 0, NEVER  # the machine with the least lower bound goes first
    if level >= 0:
        for i in range(m):
            if low[level, i] < lb0:
                i0, lb0 = i, low[level, i]
    lb0 = max(lb0, now) if level >= 0 else now
    first_fit = rule == FIRST_FIT
    best_t, best = NEVER, -1
    if lb0 != NEVER:
        best_t = _machine_fit(times, vals, cnt[i0], i0, need, dur, lb0, NEVER, True)
        if best_t != NEVER:
            best = i0
    fit_t = fits_at  # each machine's earliest fit (other rules only)
    for i in range(m if not first_fit else 0):
        fit_t[i] = NEVER
    if not first_fit:
        fit_t[i0] = best_t
    for i in range(m):
        if i == i0:
            continue
        lo = max(low[level, i], now) if level >= 0 else now
        incl = i < best or not first_fit  # first fit: the lowest-numbered wins a tie
        if lo > best_t or (lo == best_t and not incl):
            continue
        e = _machine_fit(times, vals, cnt[i], i, need, dur, lo, best_t, incl)
        if e == NEVER:
            continue
        if not first_fit:
            fit_t[i] = e
        if e < best_t or (e == best_t and first_fit):
            best_t, best = e, i
    if first_fit or best_t == NEVER:
        return best_t, best
    for i in range(m):  # the rule's choice among the machines fitting at best_t
        if fit_t[i] == best_t:
            _lowest_over(times, vals, cnt[i], i, best_t, max(dur, 1), avail[i])
        else:
            for y in range(avail.shape[1]):
                avail[i, y] = -np.inf
    return best_t, place(rule, avail, capacity, need)


@numba.njit(cache=True, inline="always")
def change(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    theta: np.ndarray,
    low: np.ndarray,
    i: int,
    a: int,
    b: int,
    need: np.ndarray,
    sign: float,
    now: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`take` ``sign · need`` from machine ``i`` over ``[a, b)``, then its level index
    again; the (maybe grown) arrays."""
    times, vals = take(times, vals, cnt, i, a, b, need, sign, now)
    _reindex(times, vals, cnt, i, theta, low, max(a, now), b, sign < 0, now)
    return times, vals


@numba.njit(cache=True, inline="always")
def reserve(
    times: np.ndarray,
    vals: np.ndarray,
    cnt: np.ndarray,
    theta: np.ndarray,
    low: np.ndarray,
    need: np.ndarray,
    dur: int,
    now: int,
    rule: int,
    capacity: np.ndarray,
    avail: np.ndarray,
    fits_at: np.ndarray,
) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The :func:`earliest` slot for ``need`` over ``dur`` steps, taken:
    ``(time, machine, times, vals)``, ``(NEVER, -1, ...)`` if it fits nowhere."""
    t, i = earliest(times, vals, cnt, need, dur, theta, low, now, rule, capacity, avail, fits_at)
    if i >= 0:
        times, vals = change(times, vals, cnt, theta, low, i, t, t + dur, need, 1.0, now)
    return t, i, times, vals
