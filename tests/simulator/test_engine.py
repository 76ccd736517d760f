"""The step engine: queues, earliest-fit allocation (agent mode), time, and infeasible jobs.

Two resources of capacity 10 throughout; demands are written ``(cpu, mem)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from schedlab.errors import InfeasibleJobError, SimulationError
from schedlab.policies.heuristics import SJF
from schedlab.simulator.cluster.engine import Engine, Jobs
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import Snapshot
from schedlab.simulator.run import schedule
from schedlab.simulator.views.queue import QueueView
from tests.policy_helpers import StatelessPolicy
from tests.strategies import jobset_from_rows

CAP = np.array([10.0, 10.0])


def make_engine(rows: list[tuple[int, int, float, float]], *, slots: int = 5, horizon: int = 20):
    """An engine over hand-written ``(arrival, duration, cpu, mem)`` rows (arrival order)."""
    arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
    jobs = Jobs(arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2:].copy())
    return Engine(jobs, CAP, ClusterConfig(slots=slots, horizon=horizon))


def snapshot(sim: Engine) -> tuple[Any, ...]:
    """Everything an action may change."""
    return (
        sim.now,
        sim.start.tolist(),
        sim.slots.tolist(),
        list(sim.backlog),
        sim.resources.free.tolist(),
        sim.n_started,
    )


# -- queues -----------------------------------------------------------------------------------


def test_arrivals_fill_lowest_free_slot_then_backlog_fifo() -> None:
    sim = make_engine([(0, 2, 10, 10), (0, 1, 1, 1), (0, 1, 1, 1), (0, 1, 1, 1)], slots=2)
    assert sim.slots.tolist() == [0, 1]
    assert list(sim.backlog) == [2, 3]
    assert sim.waiting() == 4
    sim.start_now(1)  # the backlog head moves into the freed slot
    assert sim.slots.tolist() == [0, 2]
    assert list(sim.backlog) == [3]
    sim.start_now(1)
    assert sim.slots.tolist() == [0, 3]
    assert list(sim.backlog) == []
    sim.start_now(1)
    assert sim.slots.tolist() == [0, -1]  # nothing left to move in
    assert sim.waiting() == 1


def test_new_arrival_takes_the_lowest_free_slot() -> None:
    sim = make_engine([(0, 3, 2, 2), (0, 3, 2, 2), (0, 3, 2, 2), (1, 1, 1, 1)], slots=3)
    sim.start_now(0)
    sim.start_now(2)
    assert sim.slots.tolist() == [-1, 1, -1]
    sim.advance()
    assert sim.slots.tolist() == [3, 1, -1]


def test_nothing_is_dropped_beyond_the_backlog_view() -> None:
    sim = Engine(
        Jobs(np.zeros(9, np.int64), np.ones(9, np.int64), np.ones((9, 2))),
        CAP,
        ClusterConfig(slots=2, backlog_view=3),
    )
    assert len(sim.backlog) == 7
    assert sim.waiting() == 9


def test_start_now_refuses_a_job_that_does_not_fit() -> None:
    sim = make_engine([(0, 2, 6, 6), (0, 2, 6, 6)])
    sim.start_now(0)
    before = snapshot(sim)
    with pytest.raises(SimulationError, match=r"slot 1 does not fit now on machine 0 at step 0"):
        sim.start_now(1)
    assert snapshot(sim) == before
    assert sim.fit_now_mask().tolist() == [False] * 5


# -- agent mode: earliest-fit allocation ------------------------------------------------------


def test_allocate_places_at_the_earliest_future_offset_without_advancing() -> None:
    sim = make_engine([(0, 3, 10, 10), (0, 2, 5, 5), (0, 1, 5, 5)])
    assert sim.allocate(0)
    assert sim.start[0] == 0
    assert sim.allocate(1)  # (5,5) does not fit before j0 ends at 3
    assert sim.start[1] == 3
    assert sim.allocate(2)  # fits beside j1 at offset 3
    assert sim.start[2] == 3
    assert sim.now == 0
    assert sim.done
    assert sim.last_finish == 5
    np.testing.assert_allclose(sim.resources.used(6), [[10, 10]] * 4 + [[5, 5], [0, 0]])


def test_allocate_needs_the_whole_duration_to_fit() -> None:
    # free after A (3 steps, (6,6)) and B (1 step, (7,7), placed at offset 3):
    # steps 0-2: (4,4), step 3: (3,3), step 4+: (10,10)
    sim = make_engine([(0, 3, 6, 6), (0, 1, 7, 7), (0, 4, 4, 4), (0, 2, 4, 4)])
    assert sim.allocate(0)
    assert sim.allocate(1)
    assert sim.start[1] == 3
    # C (4 steps, (4,4)) fits at step 0 but would run into step 3 from any offset < 4
    assert (sim.resources.free[0, 0] >= 4).all()
    assert not sim.fits_now(2)
    assert sim.allocate(2)
    assert sim.start[2] == 4
    # D (2 steps, (4,4)) fits at offsets 0-1
    assert sim.allocate(3)
    assert sim.start[3] == 0


def test_allocate_allows_the_last_offset_of_the_horizon() -> None:
    # T = 5; j0 fills the cluster over [0, 3). j1 (2 steps) can go at offset 3 = T - 2.
    # j2 (3 steps) would need offset 3 > T - 3 = 2: invalid.
    sim = make_engine([(0, 3, 10, 10), (0, 2, 10, 10), (0, 3, 10, 10)], horizon=5)
    assert sim.allocate(0)
    assert sim.allocate(1)
    assert sim.start[1] == 3
    before = snapshot(sim)
    assert not sim.allocate(2)
    assert snapshot(sim) == before


def test_allocate_beyond_the_horizon_is_refused() -> None:
    # T = 4 and the cluster is full over [0, 3): a 2-step job needs offset 3 > T - 2 = 2.
    sim = make_engine([(0, 3, 10, 10), (0, 2, 1, 1)], horizon=4)
    assert sim.allocate(0)
    before = snapshot(sim)
    assert not sim.allocate(1)
    assert snapshot(sim) == before
    sim.advance()  # one step later offset 2 = T - 2 is allowed
    assert sim.allocate(1)
    assert sim.start[1] == 3


@pytest.mark.parametrize("slot", [2, 4, -1, 5, 99])
def test_allocate_on_an_empty_or_invalid_slot_changes_nothing(slot: int) -> None:
    sim = make_engine([(0, 1, 1, 1), (0, 1, 1, 1)])
    before = snapshot(sim)
    assert not sim.allocate(slot)
    assert snapshot(sim) == before


def test_allocate_a_job_longer_than_the_horizon_only_now() -> None:
    # T = 3; j1 runs 5 steps (> T) and must start at offset 0 or not at all.
    sim = make_engine([(0, 1, 6, 6), (0, 5, 6, 6)], horizon=3)
    assert sim.allocate(0)
    before = snapshot(sim)
    assert not sim.allocate(1)  # would fit at offset 1, but only offset 0 is allowed
    assert snapshot(sim) == before
    sim.advance()
    assert sim.now == 1
    assert sim.allocate(1)
    assert sim.start[1] == 1
    assert sim.last_finish == 6


def test_long_job_fitting_now_starts_now() -> None:
    sim = make_engine([(0, 30, 10, 10)], horizon=3)
    assert sim.allocate(0)
    assert sim.start[0] == 0
    assert sim.last_finish == 30


# -- time --------------------------------------------------------------------------------------


def test_advance_moves_time_and_admits_arrivals() -> None:
    sim = make_engine([(0, 2, 10, 10), (2, 1, 4, 4), (2, 1, 4, 4), (5, 1, 1, 1)], slots=1)
    sim.start_now(0)
    assert sim.slots.tolist() == [-1]
    sim.advance()
    assert (sim.now, sim.slots.tolist(), sim.waiting()) == (1, [-1], 0)
    assert not sim.fits_now(0)
    sim.advance()  # j0 completes at 2 (its resources are free) and j1, j2 arrive
    assert (sim.now, sim.slots.tolist(), list(sim.backlog)) == (2, [1], [2])
    assert sim.fits_now(0)
    np.testing.assert_allclose(sim.resources.free[0, 0], CAP)
    sim.start_now(0)
    assert sim.start[1] == 2
    assert sim.slots.tolist() == [2]
    sim.start_now(0)
    sim.advance_to_next_event()  # completions at 3
    assert sim.now == 3
    sim.advance_to_next_event()  # arrival at 5
    assert (sim.now, sim.slots.tolist()) == (5, [3])


def test_advance_to_next_event_with_nothing_left_to_happen_raises() -> None:
    sim = make_engine([(0, 1, 1, 1), (0, 1, 1, 1)])
    sim.start_now(0)
    sim.advance_to_next_event()
    with pytest.raises(SimulationError, match=r"no event after step 1 but 1 jobs wait"):
        sim.advance_to_next_event()


# -- running policies --------------------------------------------------------------------------


class FirstSlotAgent(StatelessPolicy):
    """A non-heuristic policy: always allocate the lowest occupied slot (earliest fit)."""

    name = "first-slot"
    models = frozenset({"cluster"})
    view = QueueView()

    def act_batch(self, obs: Snapshot, *, mask: np.ndarray) -> np.ndarray:
        occupied = obs.view[obs.envs] >= 0
        return np.where(occupied.any(axis=1), occupied.argmax(axis=1) + 1, 0)


def test_agent_runs_through_earliest_fit() -> None:
    # j0 (3 steps, (6,6)) at 0; j1 (2 steps, (6,6)) earliest fit is offset 3 although it is
    # allocated at t=0; then nothing is left, time advances, j2 arrives at 1 and fits at once.
    # SJF (work-conserving, start-now) instead starts j1 first: [2, 0, 1].
    jobset = jobset_from_rows([(0, 3, 6.0, 6.0), (0, 2, 6.0, 6.0), (1, 1, 3.0, 3.0)])
    config = ClusterConfig()
    assert schedule(jobset, FirstSlotAgent(), config).tolist() == [0, 3, 1]
    assert schedule(jobset, SJF(), config, engine="step").tolist() == [2, 0, 1]
    with pytest.raises(ValueError, match=r"'first-slot' is not a list-scheduling heuristic"):
        schedule(jobset, FirstSlotAgent(), config, engine="fast")


# -- infeasible jobs ---------------------------------------------------------------------------


def test_job_larger_than_the_cluster_is_rejected_when_the_jobset_is_created() -> None:
    with pytest.raises(
        InfeasibleJobError, match=r"row 2 \(jobset 0, job_id 2\) demands mem=10\.5 .*mem=10\.0"
    ):
        jobset_from_rows([(0, 1, 1.0, 1.0), (1, 1, 2.0, 2.0), (2, 1, 3.0, 10.5)])


def test_engine_refuses_an_infeasible_job_built_by_hand() -> None:
    with pytest.raises(SimulationError, match="demands more than one machine's capacity"):
        make_engine([(0, 1, 1, 1), (0, 1, 10.5, 1)])
