"""The cluster engine, readable (Mao et al. 2016, §3; Chen et al. 2017, §II): state and time.

``m`` identical machines of ``d`` resources (m = 1 is DeepRM's single pool). Jobs wait in ``M``
visible slots in arrival order (a new job takes the lowest free slot, else the backlog; a freed
slot takes the backlog head), or with ``slots=None`` every waiting job is visible in arrival
order (the whole queue); no job is ever dropped. A policy acts on a visible position ``q`` and a
machine ``i``:

* :meth:`Engine.allocate` places the job at the *earliest* offset within the horizon where it fits
  on the machine for its whole duration (agents, Mao et al. 2016, §3.2) and does not advance time;
* :meth:`Engine.start_now` starts it now if it fits now (work-conserving heuristics);
* :meth:`Engine.advance` moves one step (the void or an invalid action);
  :meth:`Engine.advance_to_next_event` jumps to the next arrival or completion.

:mod:`.greedy` (heuristics, event driven) and :mod:`.batched` (agents, ``B`` envs) are
compiled copies of these semantics; tests check identical schedules.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from schedlab.errors import SimulationError
from schedlab.simulator.cluster.placement import EPS
from schedlab.simulator.cluster.precedence import Precedence, Readiness
from schedlab.simulator.cluster.resources import ResourceProfile
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import Snapshot


@dataclass(frozen=True, slots=True)
class Jobs:
    """Jobs of one jobset as arrays, sorted by (arrival, job_id)."""

    arrival: np.ndarray
    """int64, shape ``(n,)``: arrival step."""
    duration: np.ndarray
    """int64, shape ``(n,)``: run time in steps (>= 1)."""
    demand: np.ndarray
    """float64, shape ``(n, d)``: demand per resource."""
    seen: np.ndarray | None = None
    """int64, shape ``(n,)``: the length heuristics' scores see (the estimate); None:
    ``duration``."""

    def __len__(self) -> int:
        return int(self.arrival.shape[0])


class Engine:
    """State of one jobset's simulation; see the module docstring for the semantics.

    Parameters
    ----------
    jobs : Jobs
    capacity : array, shape ``(d,)``
        One machine's capacity.
    config : ClusterConfig
        Slots, horizon, machines (default 1).
    """

    def __init__(
        self,
        jobs: Jobs,
        capacity: np.ndarray,
        config: ClusterConfig,
        precedence: Precedence | None = None,
        lo: int = 0,
    ) -> None:
        self.jobs = Jobs(
            jobs.arrival, jobs.duration, np.require(jobs.demand, np.float64, ["C", "W"])
        )
        self.seen = jobs.duration if jobs.seen is None else jobs.seen
        """int64, shape ``(n,)``: the length heuristics' scores see."""
        self.capacity = np.require(capacity, np.float64, ["C", "W"])
        self.config = config
        self.machines = config.machines or 1
        if np.any(jobs.demand > self.capacity + EPS):
            msg = "a job demands more than one machine's capacity; it could never run"
            raise SimulationError(msg)
        longest = int(jobs.duration.max(initial=1))
        self.resources = ResourceProfile(self.capacity, self.machines, config.horizon + 2 * longest)
        self.now = 0
        self.start = np.full(len(jobs), -1, dtype=np.int64)
        self.machine = np.full(len(jobs), -1, dtype=np.int64)
        self.whole_queue = config.slots is None
        self.slots = np.full(config.slots or 0, -1, dtype=np.int64)
        self.backlog: deque[int] = deque()
        n = len(jobs)
        self.readiness = Readiness(jobs.arrival, precedence, lo)
        """When each job is ready (:class:`~.precedence.Readiness`: its arrival, or for a DAG
        task its release and parents' finish)."""
        self.ready = self.readiness.ready
        self.admitted = np.zeros(n, dtype=bool)
        self._last_admitted = 0
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

    def view(self) -> np.ndarray:
        """Visible job rows in tie order (int64; -1 for an empty slot): the slots, or every
        waiting job in arrival order for the whole queue."""
        if self.whole_queue:
            return np.flatnonzero(self.admitted & (self.start < 0)).astype(np.int64)
        return self.slots

    def fits_now(self, position: int, machine: int | None = None) -> bool:
        """Whether the job at visible ``position`` can start now on ``machine`` (any if None)."""
        j = int(self.view()[position])
        if j < 0:
            return False
        machines = range(self.machines) if machine is None else (machine,)
        dem, dur = self.jobs.demand[j], int(self.jobs.duration[j])
        return any(self.resources.fits(dem, i, 0, dur) for i in machines)

    def fit_now_mask(self) -> np.ndarray:
        """bool, shape ``(q,)``: visible positions whose job can start now on some machine."""
        return np.array([self.fits_now(q) for q in range(len(self.view()))], dtype=bool)

    def action_mask(self) -> np.ndarray:
        """Valid agent actions, bool, shape ``(m·M + 1,)``: void, then ``1 + i·M + q`` where the
        job at position ``q`` fits on machine ``i`` within the horizon."""
        view = self.view()
        mask = np.zeros(self.machines * len(view) + 1, dtype=bool)
        mask[0] = True
        for i in range(self.machines):
            for q, j in enumerate(view):
                if j >= 0:
                    dem, dur = self.jobs.demand[j], int(self.jobs.duration[j])
                    fit = self.resources.earliest_fit(dem, i, dur, self.config.horizon)
                    mask[1 + i * len(view) + q] = fit is not None
        return mask

    def waiting(self) -> int:
        """Jobs that arrived and wait (visible and backlog)."""
        return int((self.view() >= 0).sum()) + len(self.backlog)

    def snapshot(self) -> Snapshot:
        """The state for views (one env, id 0)."""
        last = self._last_admitted
        free = self.resources.free
        if free.shape[0] < self.config.horizon:
            pad = np.tile(self.capacity, (self.config.horizon - free.shape[0], self.machines, 1))
            free = np.concatenate([free, pad])
        one = np.zeros(1, dtype=np.int64)
        return Snapshot(
            envs=one,
            free=np.ascontiguousarray(free[None]),
            capacity=self.capacity,
            view=self.view()[None].copy(),
            demand=self.jobs.demand,
            duration=self.jobs.duration,
            seen=self.seen,
            arrival=self.ready,
            base=one,
            backlog=np.array([len(self.backlog)]),
            since=np.array([self.now - last]),
            now=np.array([self.now]),
            horizon=self.config.horizon,
            backlog_view=self.config.backlog_view,
        )

    # -- actions -----------------------------------------------------------------------------
    def allocate(self, position: int, machine: int = 0) -> bool:
        """Earliest-fit placement of the job at visible ``position`` on ``machine``; False
        (nothing changes) if the action is invalid."""
        view = self.view()
        if not (0 <= position < len(view) and 0 <= machine < self.machines) or view[position] < 0:
            return False
        j = int(view[position])
        dur = int(self.jobs.duration[j])
        offset = self.resources.earliest_fit(self.jobs.demand[j], machine, dur, self.config.horizon)
        if offset is None:
            return False
        self._place(position, j, machine, offset)
        return True

    def start_now(self, position: int, machine: int = 0) -> None:
        """Start the job at visible ``position`` now on ``machine``; it must fit there now."""
        if not self.fits_now(position, machine):
            msg = f"job in slot {position} does not fit now on machine {machine} at step {self.now}"
            raise SimulationError(msg)
        self._place(position, int(self.view()[position]), machine, 0)

    def advance(self) -> None:
        """Advance one time step: completions free resources, then new jobs arrive."""
        self.now += 1
        self.resources.advance()
        self._admit()

    def advance_to_next_event(self) -> None:
        """Jump to the next arrival or completion after now (heuristic mode)."""
        events = [f for f in self._finishes if f > self.now]
        if (t := self.readiness.next_time()) is not None:
            events.append(t)
        if not events:
            msg = f"no event after step {self.now} but {len(self.jobs) - self.n_started} jobs wait"
            raise SimulationError(msg)
        for _ in range(min(events) - self.now):
            self.advance()

    # -- internals ---------------------------------------------------------------------------
    def _place(self, position: int, j: int, machine: int, offset: int) -> None:
        dur = int(self.jobs.duration[j])
        self.resources.allocate(self.jobs.demand[j], machine, offset, dur)
        self.start[j] = self.now + offset
        self.machine[j] = machine
        self._finishes.append(self.now + offset + dur)
        self.readiness.started(j, self.now + offset + dur)
        if not self.whole_queue:
            self.slots[position] = self.backlog.popleft() if self.backlog else -1

    def _admit(self) -> None:
        """Jobs ready by now join the queue in (ready time, row) order."""
        for j in self.readiness.admit(self.now):
            self.admitted[j] = True
            self._last_admitted = int(self.ready[j])
            free = np.flatnonzero(self.slots < 0)
            if self.whole_queue:
                pass  # every waiting job is visible
            elif free.size:
                self.slots[free[0]] = j
            else:
                self.backlog.append(j)
