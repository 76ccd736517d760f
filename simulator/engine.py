"""The single-pool engine (seed 000 §3, design.md §5 and §8): state and time, no policy logic.

Jobs wait in ``M`` visible slots in arrival order (a new job takes the lowest free slot, else the
backlog; a freed slot takes the backlog head); no job is ever dropped. A policy acts on a slot:

* :meth:`Engine.allocate` places the job at the *earliest* offset within the horizon where it fits
  for its whole duration (agents, seed 000 §3.2) and does not advance time;
* :meth:`Engine.start_now` starts it now if it fits now (work-conserving heuristics);
* :meth:`Engine.advance` moves one step (the void or an invalid action);
  :meth:`Engine.advance_to_next_event` jumps to the next arrival or completion.

:mod:`schedlab.simulator.list_scheduler` is a compiled copy of the start-now path for speed; tests
check that both produce identical schedules for every heuristic.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from schedlab.errors import SimulationError
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.resources import ResourceProfile


@dataclass(frozen=True, slots=True)
class Jobs:
    """Jobs of one jobset as arrays, sorted by (arrival, job_id)."""

    arrival: np.ndarray
    """int64, shape ``(n,)``: arrival step."""
    duration: np.ndarray
    """int64, shape ``(n,)``: run time in steps (>= 1)."""
    demand: np.ndarray
    """float64, shape ``(n, d)``: demand per resource."""

    def __len__(self) -> int:
        return int(self.arrival.shape[0])


class Engine:
    """State of one jobset's simulation; see the module docstring for the semantics."""

    def __init__(self, jobs: Jobs, capacity: np.ndarray, config: ClusterConfig) -> None:
        self.jobs = jobs
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.config = config
        if np.any(jobs.demand > self.capacity + 1e-9):
            msg = "a job demands more than the cluster capacity; it could never run"
            raise SimulationError(msg)
        longest = int(jobs.duration.max(initial=1))
        self.resources = ResourceProfile(self.capacity, config.horizon + 2 * longest)
        self.now = 0
        self.start = np.full(len(jobs), -1, dtype=np.int64)
        self.slots = np.full(config.slots, -1, dtype=np.int64)
        self.backlog: deque[int] = deque()
        self._next_arrival = 0
        self._finishes: list[int] = []
        self._admit()

    # -- queries -----------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """All jobs have started (finish times are then known)."""
        return self.n_started == len(self.jobs)

    @property
    def n_started(self) -> int:
        """Jobs allocated so far."""
        return len(self._finishes)

    @property
    def last_finish(self) -> int:
        """Largest finish step among allocated jobs (the makespan once :attr:`done`)."""
        return max(self._finishes, default=0)

    def fits_now(self, slot: int) -> bool:
        """Whether the job in ``slot`` can start now and run its whole duration."""
        j = self.slots[slot]
        return j >= 0 and self.resources.fits(self.jobs.demand[j], 0, int(self.jobs.duration[j]))

    def fit_now_mask(self) -> np.ndarray:
        """bool, shape ``(M,)``: slots whose job can start now."""
        return np.array([self.fits_now(s) for s in range(self.config.slots)], dtype=bool)

    def waiting(self) -> int:
        """Jobs that arrived and wait (slots and backlog)."""
        return int((self.slots >= 0).sum()) + len(self.backlog)

    # -- actions -----------------------------------------------------------------------------
    def allocate(self, slot: int) -> bool:
        """Earliest-fit placement of the job in ``slot``; False (nothing changes) if invalid."""
        j = self.slots[slot] if 0 <= slot < self.config.slots else -1
        if j < 0:
            return False
        dur = int(self.jobs.duration[j])
        offset = self.resources.earliest_fit(self.jobs.demand[j], dur, self.config.horizon)
        if offset is None:
            return False
        self._place(slot, j, offset)
        return True

    def start_now(self, slot: int) -> None:
        """Start the job in ``slot`` now; it must fit now (:meth:`fits_now`)."""
        if not self.fits_now(slot):
            msg = f"job in slot {slot} does not fit now at step {self.now}"
            raise SimulationError(msg)
        self._place(slot, int(self.slots[slot]), 0)

    def advance(self) -> None:
        """Advance one time step: completions free resources, then new jobs arrive."""
        self.now += 1
        self.resources.advance()
        self._admit()

    def advance_to_next_event(self) -> None:
        """Jump to the next arrival or completion after now (heuristic mode)."""
        events = [f for f in self._finishes if f > self.now]
        if self._next_arrival < len(self.jobs):
            events.append(int(self.jobs.arrival[self._next_arrival]))
        if not events:
            msg = f"no event after step {self.now} but {len(self.jobs) - self.n_started} jobs wait"
            raise SimulationError(msg)
        for _ in range(min(events) - self.now):
            self.advance()

    # -- internals ---------------------------------------------------------------------------
    def _place(self, slot: int, j: int, offset: int) -> None:
        dur = int(self.jobs.duration[j])
        self.resources.allocate(self.jobs.demand[j], offset, dur)
        self.start[j] = self.now + offset
        self._finishes.append(self.now + offset + dur)
        self.slots[slot] = self.backlog.popleft() if self.backlog else -1

    def _admit(self) -> None:
        arrival = self.jobs.arrival
        while self._next_arrival < len(self.jobs) and arrival[self._next_arrival] <= self.now:
            free = np.flatnonzero(self.slots < 0)
            if free.size:
                self.slots[free[0]] = self._next_arrival
            else:
                self.backlog.append(self._next_arrival)
            self._next_arrival += 1
