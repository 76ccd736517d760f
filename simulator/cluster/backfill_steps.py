"""Queue disciplines written to be read: the step engine's strict, EASY and conservative
backfilling (``run_policy(..., engine="step")``), the reference the compiled rules
(:mod:`.easy`, :mod:`.conservative`) must match schedule for schedule.

Written from the definitions, with plain lists and one event at a time; nothing here is fast
(``O(n · (Q + R))`` per jobset at best), which is why the compiled module exists. Semantics
(shared with the compiled rules): at each event time completions free capacity, arrivals join the
queue, then the queue is ordered (the job order's score, the estimate seen as the job's
duration, ties in arrival order) and the discipline starts jobs:

``strict``        in order while the first one fits; the first that does not blocks the rest.
``easy``          strict, then the first waiting job (the head) gets a reservation: walking the
                  running jobs by expected end (``start + estimate``, or the next step for a job
                  past its estimate), the first time its demand is free on a machine (chosen by
                  the placement rule). A later job starts now if it fits now and either ends by
                  its estimate no later than the reservation or fits in what the head leaves
                  free on the reserved machine then (or runs on another machine).
``conservative``  a job gets a reservation when it arrives: the earliest slot in the profile
                  of free capacity (the running jobs' expected ends, the reservations already
                  made) that delays no reservation. When a job ends, the waiting jobs in order
                  each give their slot back and take the earliest one (compression: never
                  later). Those reserved at the current time start (reservation times are
                  events too).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from schedlab.simulator.cluster.core import NEVER, STALLED
from schedlab.simulator.cluster.disciplines import CONSERVATIVE, EASY
from schedlab.simulator.cluster.dispatch import alignment_of
from schedlab.simulator.cluster.placement import EPS, place
from schedlab.simulator.cluster.precedence import Readiness


def _ordered(
    waiting: list[int],
    jobs: dict[str, np.ndarray],
    free: np.ndarray,
    now: int,
    policy: Any,
    capacity: np.ndarray,
) -> list[int]:
    """``waiting`` (arrival order) by the policy's score, highest first, ties kept in order.
    A static order is scored once per job at time 0 without packing terms; a dynamic one now,
    packing against the first machine's free capacity."""
    capacity2 = float(capacity @ capacity)

    def key(j: int) -> float:
        demand, seen, arrival = jobs["demand"][j], jobs["seen"][j], jobs["arrival"][j]
        if policy.static:
            return -float(policy.score(seen, arrival, j, 0, policy.knob, 0.0, 0.0, demand[0]))
        al = alignment_of(free[0], demand)
        return -float(policy.score(seen, arrival, j, now, policy.knob, al, capacity2, demand[0]))

    return sorted(waiting, key=key)


def _expected_ends(
    running: dict[int, int], jobs: dict[str, np.ndarray], now: int
) -> dict[int, int]:
    return {j: max(int(jobs["start"][j] + jobs["estimate"][j]), now + 1) for j in running}


class _Profile:
    """Free capacity from ``now`` on: ``[(from time, free (m, d))]``, each level holding until
    the next one's time, from the running jobs' expected ends (EASY's head reservation walks
    them; conservative's reservations are taken from them)."""

    def __init__(
        self,
        running: dict[int, int],
        jobs: dict[str, np.ndarray],
        free: np.ndarray,
        capacity: np.ndarray,
        rule: int,
        now: int,
    ) -> None:
        self.jobs, self.capacity, self.rule = jobs, capacity, rule
        ends = _expected_ends(running, jobs, now)
        self.levels = [(now, free.copy())]
        for t in sorted(set(ends.values())):
            level = self.levels[-1][1].copy()
            for j, end in ends.items():
                if end == t:
                    level[running[j]] += jobs["demand"][j]
            self.levels.append((t, level))

    def _cut(self, t: int) -> None:
        """Make ``t`` the time of a level."""
        times = [x for x, _ in self.levels]
        if t not in times:
            at = max(k for k, x in enumerate(times) if x < t)
            self.levels.insert(at + 1, (t, self.levels[at][1].copy()))

    def take(self, j: int, t0: int, i: int, sign: float = 1.0) -> bool:
        """Take job ``j``'s demand from machine ``i`` over ``[t0, t0 + estimate)`` (``sign``
        -1: give it back); whether no level goes negative there."""
        t1 = t0 + int(self.jobs["estimate"][j])
        self._cut(t0)
        self._cut(t1)
        ok = True
        for t, level in self.levels:
            if t0 <= t < t1:
                level[i] -= sign * self.jobs["demand"][j]
                ok = ok and bool((level[i] >= -EPS).all())
        return ok

    def head_reservation(self, head: int) -> tuple[int, int, np.ndarray]:
        """EASY's reservation of the waiting ``head``: the first expected end from which its
        demand fits on a machine (the placement rule's choice): (time, machine, capacity of
        that machine left beside the head then), or NEVER."""
        demand = self.jobs["demand"][head]
        for t, level in self.levels[1:]:
            i = place(self.rule, level, self.capacity, demand)
            if i >= 0:
                return t, i, level[i] - demand
        return NEVER, -1, np.zeros(self.capacity.size)

    def reserve(self, j: int) -> tuple[int, int]:
        """The earliest (time, machine) where job ``j`` fits for its estimate, taken."""
        dur = int(self.jobs["estimate"][j])
        for k, (t0, _) in enumerate(self.levels):
            covered = [level for t, level in self.levels[k:] if t < t0 + dur]
            i = place(self.rule, np.minimum.reduce(covered), self.capacity, self.jobs["demand"][j])
            if i >= 0:
                self.take(j, t0, i)
                return t0, i
        return NEVER, -1


def _conservative(
    order: list[int],
    slots: dict[int, tuple[int, int]],
    profile: Callable[[], _Profile],
    now: int,
    ended: bool,
) -> None:
    """Update the reservations ``slots`` (job -> (time, machine)) of the waiting jobs
    ``order``: new jobs get the earliest slot that delays no reservation; when jobs ``ended``
    every job in order gives its slot back and takes the earliest one (compression); if a job
    past its estimate voided a reservation, all are made again in order."""
    held = profile()
    kept = [j for j in order if j in slots and slots[j][0] != NEVER]
    if not all(slots[j][0] >= now and held.take(j, *slots[j]) for j in kept):
        held = profile()
        for j in order:
            if slots.get(j, (0, 0))[0] != NEVER:
                slots[j] = held.reserve(j)
    elif ended:
        for j in kept:
            held.take(j, *slots[j], sign=-1.0)
            slots[j] = held.reserve(j)
    for j in order:
        if j not in slots:
            slots[j] = held.reserve(j)


def schedule_jobset(
    arrival: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    machines: int,
    policy: Any,
    discipline: int,
    readiness: Readiness | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """One jobset (rows in arrival order) under ``discipline`` (a code of
    :data:`.disciplines.DISCIPLINES`, not greedy): ``(start, machine, first reservation, ready,
    status)``, as :func:`.disciplines.run_jobsets` for one jobset (status 0 or ``STALLED``); jobs
    join the queue when ``readiness`` says (default: at their arrival)."""
    n = arrival.size
    readiness = Readiness(arrival) if readiness is None else readiness
    jobs = {
        "arrival": readiness.ready,
        "estimate": estimate,
        "seen": seen,
        "demand": demand,
        "start": np.full(n, -1, dtype=np.int64),
    }
    start, machine = jobs["start"], np.full(n, -1, dtype=np.int64)
    reserved = np.full(n, NEVER, dtype=np.int64)
    free = np.tile(np.asarray(capacity, dtype=np.float64), (machines, 1))
    waiting: list[int] = []
    running: dict[int, int] = {}  # job -> machine
    slots: dict[int, tuple[int, int]] = {}  # conservative: job -> reservation (time, machine)
    rule, finished = policy.rule, 0
    now = readiness.next_time() or 0

    def begin(j: int, i: int) -> None:
        start[j], machine[j] = now, i
        free[i] -= demand[j]
        running[j] = i
        readiness.started(j, now + int(runtime[j]))

    while finished < n:
        ended = [j for j in running if start[j] + runtime[j] <= now]
        for j in ended:
            free[running.pop(j)] += demand[j]
            finished += 1
        waiting += readiness.admit(now)
        order = _ordered(waiting, jobs, free, now, policy, capacity)
        profile = partial(_Profile, running, jobs, free, capacity, rule, now)
        if discipline == CONSERVATIVE:
            _conservative(order, slots, profile, now, bool(ended))
            for j in order:
                t, i = slots[j]
                if reserved[j] == NEVER:
                    reserved[j] = t
                if t == now:
                    begin(j, i)
        else:
            blocked = None
            for x, j in enumerate(order):  # in order while the first fits
                i = place(rule, free, capacity, demand[j])
                if i < 0:
                    blocked = x
                    break
                begin(j, i)
            if blocked is not None and discipline == EASY:
                head = order[blocked]
                shadow, hm, extra = profile().head_reservation(head)
                if reserved[head] == NEVER:
                    reserved[head] = shadow
                for j in order[blocked + 1 :]:
                    late = hm >= 0 and now + estimate[j] > shadow
                    room = free.copy()
                    if late:
                        room[hm] = np.minimum(free[hm], extra + EPS)
                    i = place(rule, room, capacity, demand[j])
                    if i < 0:
                        continue
                    if late and i == hm:
                        extra = extra - demand[j]
                    begin(j, i)
        waiting = [j for j in waiting if start[j] < 0]
        if finished == n:
            break
        events = [] if (next_ready := readiness.next_time()) is None else [next_ready]
        events += [int(start[j] + runtime[j]) for j in running]
        events += [slots[j][0] for j in waiting if j in slots and now < slots[j][0] < NEVER]
        if not events:
            return start, machine, reserved, readiness.ready, STALLED
        now = min(events)
    return start, machine, reserved, readiness.ready, 0
