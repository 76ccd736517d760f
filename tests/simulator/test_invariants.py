"""Schedule invariants on random jobsets, and the compiled fast path equal to the step engine.

Every schedule is checked from its outputs alone (:func:`check_schedule`): the usage of every
step is rebuilt from start, duration and demand. Because slot jobs always precede backlog jobs in
arrival order and the backlog is FIFO, the ``M`` visible jobs at any time are the first ``M``
waiting jobs in arrival order; work conservation is checked on those.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import registry
from schedlab.jobset import JobSet
from schedlab.policies.heuristics import Heuristic
from schedlab.simulator.cluster.engine import Engine, Jobs
from schedlab.simulator.cluster.placement import EPS
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate
from tests.strategies import (
    agent_cases,
    deeprm_jobset,
    heuristic_names,
    jobset_arrays,
    jobset_from_rows,
    jobsets,
)

NAMES = heuristic_names()
ENGINES = ("fast", "step")
LOADS = (0.3, 1.1, 1.9)
SETTINGS = settings(max_examples=40, deadline=None)


def make_policy(name: str) -> Heuristic:
    """The registered heuristic ``name`` (Random with seed 3)."""
    return registry.policies.make(name, **({"seed": 3} if name == "random" else {}))


def usage_per_step(start: np.ndarray, duration: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Occupied resources at every step ``0 .. max(finish)``, shape ``(steps + 1, d)``."""
    usage = np.zeros((int((start + duration).max()) + 1, demand.shape[1]))
    for s, dur, dem in zip(start, duration, demand, strict=True):
        usage[s : s + dur] += dem
    return usage


def check_schedule(
    arrival: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    capacity: np.ndarray,
    start: np.ndarray,
    slots: int,
) -> None:
    """Assert the invariants of one jobset's work-conserving schedule with ``slots`` visible."""
    n = arrival.size
    assert start.shape == (n,)
    assert (start >= 0).all(), "a job never started"
    assert (start >= arrival).all(), "a job started before it arrived"
    usage = usage_per_step(start, duration, demand)
    over = np.flatnonzero((usage > capacity + 1e-6).any(axis=1))
    assert over.size == 0, f"capacity exceeded at steps {over}"
    for t in range(int(arrival.min()), usage.shape[0]):
        free = capacity - usage[t]
        # after the decisions at t, no visible waiting job fits in what is left
        waiting = np.flatnonzero((arrival <= t) & (start > t))
        for j in waiting[:slots]:
            assert np.any(demand[j] > free + EPS / 2), f"job {j} waits at {t} but fits in {free}"
        # a job started at t was visible: the k-th start at t can reach rank M + k of the
        # jobs waiting before the decisions (each start moves the backlog head into a slot)
        before = np.flatnonzero((arrival <= t) & (start >= t))
        ranks = np.flatnonzero(start[before] == t)
        for k in range(ranks.size):
            late = int((ranks >= slots + k).sum())
            assert late <= ranks.size - 1 - k, f"a backlog job started at {t} ({ranks=})"


def check_jobset(jobset: JobSet, start: np.ndarray, slots: int) -> None:
    for arrival, duration, demand, rows in jobset_arrays(jobset):
        check_schedule(arrival, duration, demand, jobset.capacity, start[rows], slots)


# -- the checker itself must catch violations --------------------------------------------------


def test_checker_rejects_broken_schedules() -> None:
    # j0 (6,1) and j1 (5,1) arrive at 0, j2 (4,9) at 1. Work-conserving: j0 at 0, j1 waits
    # (5 > 4), j2 fits beside j0 at 1, j1 at 2.
    arrival = np.array([0, 0, 1])
    duration = np.array([2, 2, 1])
    demand = np.array([[6.0, 1.0], [5.0, 1.0], [4.0, 9.0]])
    cap = np.array([10.0, 10.0])
    check_schedule(arrival, duration, demand, cap, np.array([0, 2, 1]), slots=3)
    with pytest.raises(AssertionError, match="never started"):
        check_schedule(arrival, duration, demand, cap, np.array([0, -1, 1]), slots=3)
    with pytest.raises(AssertionError, match="before it arrived"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 0]), slots=3)
    with pytest.raises(AssertionError, match=r"capacity exceeded at steps \[1\]"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 1, 2]), slots=3)
    with pytest.raises(AssertionError, match="job 2 waits at 1"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 3]), slots=3)
    # with one slot, j2 is in the backlog behind j1 until j1 starts at 2, then fits beside it
    check_schedule(arrival, duration, demand, cap, np.array([0, 2, 2]), slots=1)
    with pytest.raises(AssertionError, match="backlog job started at 1"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 1]), slots=1)
    with pytest.raises(AssertionError, match="job 2 waits at 2"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 4]), slots=1)
    # j0 (9,1), j1 (10,1), j2 (1,1) at 0: with one slot j2 stays in the backlog until 4
    arrival, duration = np.array([0, 0, 0]), np.array([2, 2, 2])
    demand = np.array([[9.0, 1.0], [10.0, 1.0], [1.0, 1.0]])
    check_schedule(arrival, duration, demand, cap, np.array([0, 2, 4]), slots=1)
    with pytest.raises(AssertionError, match="backlog job started at 0"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 0]), slots=1)
    with pytest.raises(AssertionError, match="job 2 waits at 0"):
        check_schedule(arrival, duration, demand, cap, np.array([0, 2, 4]), slots=3)


# -- hypothesis jobsets --------------------------------------------------------------------------


@SETTINGS
@given(jobset=jobsets(), slots=st.sampled_from([1, 2, 3, 10]))
def test_invariants_and_fast_equals_step_on_float_jobsets(jobset: JobSet, slots: int) -> None:
    """slots=10 >= jobs per jobset: full work conservation; fewer: the limited-visibility form."""
    _check_fast_equals_step(jobset, slots)


@SETTINGS
@given(jobset=jobsets(max_jobs=8, integer=True), slots=st.sampled_from([1, 2, 8]))
def test_invariants_on_integer_jobsets(jobset: JobSet, slots: int) -> None:
    """Whole-slot demands make exact fits (free == demand) and exact score ties common."""
    _check_fast_equals_step(jobset, slots)


def _check_fast_equals_step(jobset: JobSet, slots: int) -> None:
    """Every heuristic gives the same schedule on the fast and step engines, and it keeps the
    invariants."""
    config = ClusterConfig(slots=slots)
    for name in NAMES:
        fast = schedule(jobset, make_policy(name), config, engine="fast")
        step = schedule(jobset, make_policy(name), config, engine="step")
        np.testing.assert_array_equal(fast, step, err_msg=name)
        check_jobset(jobset, fast, slots)


# -- DeepRM jobsets --------------------------------------------------------------------------


@pytest.fixture(scope="module", params=LOADS, ids=[f"load{x}" for x in LOADS])
def deeprm(request: pytest.FixtureRequest) -> JobSet:
    return deeprm_jobset(request.param, n_jobsets=8, seed=int(request.param * 10))


@pytest.mark.parametrize("name", NAMES)
def test_fast_equals_step_on_deeprm(deeprm: JobSet, name: str) -> None:
    config = ClusterConfig()
    fast = schedule(deeprm, make_policy(name), config, engine="fast")
    step = schedule(deeprm, make_policy(name), config, engine="step")
    np.testing.assert_array_equal(fast, step)
    check_jobset(deeprm, fast, config.slots)


@pytest.mark.parametrize("name", NAMES)
def test_work_conservation_with_every_job_visible(deeprm: JobSet, name: str) -> None:
    most = int(deeprm.jobs.group_by("jobset").len()["len"].max())
    config = ClusterConfig(slots=most)
    start = schedule(deeprm, make_policy(name), config, engine="fast")
    check_jobset(deeprm, start, most)


def test_deeprm_jobsets_do_queue() -> None:
    """At high load the M=10 checks above are about limited visibility: the backlog is used."""
    jobset = deeprm_jobset(1.9, n_jobsets=8, seed=19)
    start = schedule(jobset, make_policy("sjf"), ClusterConfig(), engine="fast")
    waiting_max = 0
    for arrival, _, _, rows in jobset_arrays(jobset):
        s = start[rows]
        for t in range(int(s.max()) + 1):
            waiting_max = max(waiting_max, int(((arrival <= t) & (s > t)).sum()))
    assert waiting_max > 10


def test_simulate_results_are_consistent(deeprm: JobSet) -> None:
    policies = [make_policy(name) for name in NAMES]
    table = simulate(deeprm, policies).table
    n = len(deeprm)
    assert table.height == n * len(NAMES)
    assert table["policy"].unique().sort().to_list() == sorted(NAMES)
    assert table.select("policy", "jobset", "job_id").is_unique().all()
    t = {c: table[c].to_numpy() for c in table.columns if c != "policy"}
    np.testing.assert_array_equal(t["finish"], t["start"] + t["duration"])
    np.testing.assert_array_equal(t["completion"], t["finish"] - t["arrival"])
    np.testing.assert_array_equal(t["wait"], t["start"] - t["arrival"])
    np.testing.assert_allclose(t["slowdown"], (t["finish"] - t["arrival"]) / t["duration"])
    assert (t["slowdown"] >= 1).all()
    for policy in policies:
        rows = table["policy"].to_numpy() == policy.name
        np.testing.assert_array_equal(t["start"][rows], schedule(deeprm, policy, ClusterConfig()))


def test_idle_gaps_are_jumped() -> None:
    """Jobs that arrive long after the cluster idled still start on arrival (event jumps)."""
    jobset = jobset_from_rows([(0, 1, 10.0, 10.0), (40, 2, 10.0, 10.0), (90, 1, 1.0, 1.0)])
    for name in NAMES:
        for engine in ENGINES:
            start = schedule(jobset, make_policy(name), ClusterConfig(slots=1), engine=engine)
            assert start.tolist() == [0, 40, 90]


# -- agent mode ------------------------------------------------------------------------------


def earliest_offset(free: np.ndarray, demand: np.ndarray, duration: int, horizon: int):
    """Brute force: first offset in ``[0, max(0, T - duration)]`` fitting the whole duration."""
    for offset in range(max(0, horizon - duration) + 1):
        if np.all(free[offset : offset + duration] + EPS >= demand):
            return offset
    return None


@SETTINGS
@given(**agent_cases(horizon=st.integers(1, 8), slots=st.integers(1, 4)))
def test_agent_mode_random_actions(jobset: JobSet, horizon: int, slots: int, seed: int) -> None:
    """Random allocations: each lands at the earliest allowed offset, capacity always holds."""
    ((arrival, duration, demand, _),) = jobset_arrays(jobset)
    config = ClusterConfig(slots=slots, horizon=horizon)
    sim = Engine(Jobs(arrival, duration, demand), jobset.capacity, config)
    rng = np.random.default_rng(seed)
    decided = np.full(arrival.size, -1)
    for _ in range(10_000):
        if sim.done:
            break
        slot = int(rng.integers(-1, slots + 1))  # -1 and M are invalid actions
        j = int(sim.slots[slot]) if 0 <= slot < slots else -1
        free = sim.resources.free.copy()
        expected = None if j < 0 else earliest_offset(free, demand[j], int(duration[j]), horizon)
        placed = sim.allocate(slot)
        assert placed == (expected is not None)
        if placed:
            assert sim.start[j] == sim.now + expected
            decided[j] = sim.now
        else:
            np.testing.assert_array_equal(sim.resources.free, free)
            sim.advance()
        assert (sim.resources.free >= -1e-6).all()
    assert sim.done
    start = sim.start
    assert (decided >= arrival).all()
    assert (start - decided <= np.maximum(0, horizon - duration)).all()
    usage = usage_per_step(start, duration, demand)
    assert (usage <= jobset.capacity + 1e-6).all()
