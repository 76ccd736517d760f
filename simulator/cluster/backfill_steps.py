"""Queue disciplines written to be read: the step engine's strict, EASY and conservative
backfilling (``run_policy(..., engine="step")``), the reference the compiled
:mod:`.backfill` must match schedule for schedule.

Written from the definitions, with plain lists and one event at a time; nothing here is fast
(``O(n · (Q + R))`` per jobset at best), which is why the compiled module exists. Semantics
(shared with :mod:`.backfill`): at each event time completions free capacity, arrivals join the
queue, then the queue is ordered (the job order's score, the estimate seen as the job's
duration, ties in arrival order) and the discipline starts jobs:

``strict``        in order while the first one fits; the first that does not blocks the rest.
``easy``          strict, then the first waiting job (the head) gets a reservation: walking the
                  running jobs by expected end (``start + estimate``, or the next step for a job
                  past its estimate), the first time its demand is free on a machine (chosen by
                  the placement rule). A later job starts now if it fits now and either ends by
                  its estimate no later than the reservation or fits in what the head leaves
                  free on the reserved machine then (or runs on another machine).
``conservative``  every waiting job in order gets the earliest reservation in the free-capacity
                  profile of the running jobs and of the reservations before it; those
                  reserved at the current time start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.simulator.cluster.backfill import CONSERVATIVE, EASY, NEVER
from schedlab.simulator.cluster.dispatch import alignment_of
from schedlab.simulator.cluster.list_scheduler import STALLED
from schedlab.simulator.cluster.placement import EPS, place


def _ordered(waiting: list[int], jobs: dict[str, np.ndarray], free: np.ndarray, now: int,
             policy: Any, capacity: np.ndarray) -> list[int]:  # fmt: skip
    """``waiting`` (arrival order) by the policy's score, highest first, ties kept in order.
    A static order is scored once per job at time 0 without packing terms; a dynamic one now,
    packing against the first machine's free capacity."""
    capacity2 = float(capacity @ capacity)

    def key(j: int) -> float:
        if policy.static:
            return -policy.score(jobs["estimate"][j], jobs["arrival"][j], j, 0, policy.knob,
                                 0.0, 0.0)  # fmt: skip
        al = alignment_of(free[0], jobs["demand"][j])
        return -policy.score(jobs["estimate"][j], jobs["arrival"][j], j, now, policy.knob, al,
                             capacity2)  # fmt: skip

    return sorted(waiting, key=key)


def _expected_ends(
    running: dict[int, int], jobs: dict[str, np.ndarray], now: int
) -> dict[int, int]:
    return {j: max(int(jobs["start"][j] + jobs["estimate"][j]), now + 1) for j in running}


def _head_reservation(head: int, running: dict[int, int], jobs: dict[str, np.ndarray],
                      free: np.ndarray, capacity: np.ndarray, rule: int,
                      now: int) -> tuple[int, int, np.ndarray]:  # fmt: skip
    """(time, machine, capacity of that machine left beside the head then), or NEVER."""
    ends = _expected_ends(running, jobs, now)
    avail = free.copy()
    for t in sorted(set(ends.values())):
        for j, end in ends.items():
            if end == t:
                avail[running[j]] += jobs["demand"][j]
        i = place(rule, avail, capacity, jobs["demand"][head])
        if i >= 0:
            return t, i, avail[i] - jobs["demand"][head]
    return NEVER, -1, np.zeros(capacity.size)


def _reserve_all(order: list[int], running: dict[int, int], jobs: dict[str, np.ndarray],
                 free: np.ndarray, capacity: np.ndarray, rule: int, now: int) -> dict[int,
                 tuple[int, int]]:  # fmt: skip
    """Conservative reservations ``{job: (time, machine)}`` of ``order``, one after the other,
    in a profile ``[(from time, free (m, d))]`` of the running jobs' expected ends."""
    ends = _expected_ends(running, jobs, now)
    profile = [(now, free.copy())]
    for t in sorted(set(ends.values())):
        level = profile[-1][1].copy()
        for j, end in ends.items():
            if end == t:
                level[running[j]] += jobs["demand"][j]
        profile.append((t, level))
    out = {}
    for j in order:
        need, dur = jobs["demand"][j], int(jobs["estimate"][j])
        for k, (t0, _) in enumerate(profile):
            covered = [level for t, level in profile[k:] if t < t0 + dur]
            i = place(rule, np.minimum.reduce(covered), capacity, need)
            if i < 0:
                continue
            out[j] = (t0, i)
            times = [t for t, _ in profile]
            if t0 + dur not in times:  # split the segment holding t0 + dur
                at = max(x for x, t in enumerate(times) if t < t0 + dur)
                profile.insert(at + 1, (t0 + dur, profile[at][1].copy()))
            for t, level in profile:
                if t0 <= t < t0 + dur:
                    level[i] -= need
            break
        else:
            out[j] = (NEVER, -1)
    return out


def schedule_jobset(
    arrival: np.ndarray, runtime: np.ndarray, estimate: np.ndarray, demand: np.ndarray,
    capacity: np.ndarray, machines: int, policy: Any, discipline: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:  # fmt: skip
    """One jobset (rows in arrival order) under ``discipline`` (a code of
    :data:`.backfill.DISCIPLINES`, not greedy): ``(start, machine, first reservation, status)``,
    as :func:`.backfill.run_jobsets` for one jobset (status 0 or ``STALLED``)."""
    n = arrival.size
    jobs = {"arrival": arrival, "estimate": estimate, "demand": demand,
            "start": np.full(n, -1, dtype=np.int64)}  # fmt: skip
    start, machine = jobs["start"], np.full(n, -1, dtype=np.int64)
    reserved = np.full(n, NEVER, dtype=np.int64)
    free = np.tile(np.asarray(capacity, dtype=np.float64), (machines, 1))
    waiting: list[int] = []
    running: dict[int, int] = {}  # job -> machine
    rule, arrived, finished = policy.rule, 0, 0
    now = int(arrival[0]) if n else 0

    def begin(j: int, i: int) -> None:
        start[j], machine[j] = now, i
        free[i] -= demand[j]
        running[j] = i

    while finished < n:
        for j in [j for j in running if start[j] + runtime[j] <= now]:
            free[running.pop(j)] += demand[j]
            finished += 1
        while arrived < n and arrival[arrived] <= now:
            waiting.append(arrived)
            arrived += 1
        order = _ordered(waiting, jobs, free, now, policy, capacity)
        if discipline == CONSERVATIVE:
            for j, (t, i) in _reserve_all(order, running, jobs, free, capacity, rule, now).items():
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
                shadow, hm, extra = _head_reservation(head, running, jobs, free, capacity, rule,
                                                      now)  # fmt: skip
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
        events = [int(arrival[arrived])] if arrived < n else []
        events += [int(start[j] + runtime[j]) for j in running]
        if not events:
            return start, machine, reserved, STALLED
        now = min(events)
    return start, machine, reserved, 0
