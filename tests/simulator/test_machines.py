"""Clusters of machines: the three engines agree for every job order and placement rule, the
whole-queue fast path matches the scan, placement rules choose as documented, agents on several
machines match the step engine, and the weighted reward of Chen et al. 2017."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import registry
from schedlab.jobset import JobSet
from schedlab.policies.heuristics import SJF, Heuristic
from schedlab.simulator.check import InvalidScheduleError, check_schedule
from schedlab.simulator.cluster.batched import BatchedEngine, RewardWeights
from schedlab.simulator.cluster.placement import PLACEMENTS, place
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy
from tests.agent_helpers import agent_and_step_engines, assert_return_is_minus_slowdown
from tests.strategies import agent_cases, deeprm_jobset, heuristic_names, jobsets

SETTINGS = settings(max_examples=25, deadline=None)
NAMES = heuristic_names()
RULES = list(PLACEMENTS)


def _policy(name: str, placement: str = "firstfit") -> Heuristic:
    kwargs = {"seed": 3} if name == "random" else {}
    return registry.policies.make(name, placement=placement, **kwargs)


def _all_engines(jobset: JobSet, policy: Heuristic, config: ClusterConfig) -> np.ndarray:
    # Random acting on the batched engine draws per decision, not per jobset: another stream
    engines = ("fast", "step") if policy.uniform else ("fast", "step", "batched")
    runs = [run_policy(jobset, policy, config, engine=e) for e in engines]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.start, runs[0].start)
        np.testing.assert_array_equal(other.machine, runs[0].machine)
    check_schedule(jobset, runs[0].start, runs[0].machine, machines=config.machines)
    return runs[0].start


@pytest.fixture(scope="module")
def deeprm() -> JobSet:
    return deeprm_jobset(1.5, n_jobsets=4, seed=7)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name", NAMES)
def test_three_engines_agree_on_two_machines(deeprm: JobSet, name: str, rule: str) -> None:
    _all_engines(deeprm, _policy(name, rule), ClusterConfig(machines=2))


@SETTINGS
@given(
    jobset=jobsets(max_jobsets=2),
    machines=st.integers(1, 3),
    slots=st.integers(1, 4),
    name=st.sampled_from(NAMES),
    rule=st.sampled_from(RULES),
)
def test_three_engines_agree_on_any_cluster(
    jobset: JobSet, machines: int, slots: int, name: str, rule: str
) -> None:
    _all_engines(jobset, _policy(name, rule), ClusterConfig(slots=slots, machines=machines))


def test_more_machines_never_start_the_first_job_later(deeprm: JobSet) -> None:
    one = run_policy(deeprm, SJF(), ClusterConfig(machines=1)).start
    two = run_policy(deeprm, SJF(), ClusterConfig(machines=2))
    assert (two.start <= one).mean() > 0.9
    assert set(np.unique(two.machine)) == {0, 1}


# -- the whole queue ---------------------------------------------------------------------------


class _ScanSJF(SJF):
    """SJF without the static-order declaration: the whole queue is scanned, not a tree."""

    static = False


@SETTINGS
@given(jobset=jobsets(max_jobsets=2), machines=st.integers(1, 3), rule=st.sampled_from(RULES))
def test_whole_queue_tree_equals_scan_and_step(jobset: JobSet, machines: int, rule: str) -> None:
    config = ClusterConfig(slots=None, machines=machines)
    for order in ("sjf", "fcfs"):
        tree = run_policy(jobset, _policy(order, rule), config, engine="fast")
        step = run_policy(jobset, _policy(order, rule), config, engine="step")
        np.testing.assert_array_equal(tree.start, step.start)
        np.testing.assert_array_equal(tree.machine, step.machine)
        check_schedule(jobset, tree.start, tree.machine, machines=machines)
    scan = run_policy(jobset, _ScanSJF(placement=rule), config, engine="fast")
    tree = run_policy(jobset, _policy("sjf", rule), config, engine="fast")
    np.testing.assert_array_equal(scan.start, tree.start)


def test_whole_queue_sees_every_waiting_job() -> None:
    # SJF on the whole queue starts j4 (1 step) and j3 (3) at 0, then j2 at 1, j1 at 3 and the
    # big j0 at 8; with M = 2 it sees j0, j1 first: j1 and j2 at 0, j3 at 4, j4 at 5, j0 at 7
    rows = [(0, 9, 10, 10), (0, 5, 5, 5), (0, 4, 5, 5), (0, 3, 5, 5), (0, 1, 5, 5)]
    js = deeprm_like(rows)
    whole = run_policy(js, SJF(), ClusterConfig(slots=None)).start
    slots = run_policy(js, SJF(), ClusterConfig(slots=2)).start
    assert whole.tolist() == [8, 3, 1, 0, 0]
    assert slots.tolist() == [7, 0, 0, 4, 5]


def deeprm_like(rows: list[tuple[int, int, float, float]]) -> JobSet:
    from tests.strategies import jobset_from_rows

    return jobset_from_rows(rows)


def test_the_batched_engine_needs_slots() -> None:
    js = deeprm_like([(0, 1, 1, 1)])
    with pytest.raises(ValueError, match="whole queue"):
        run_policy(js, SJF(), ClusterConfig(slots=None), engine="batched")


# -- placement rules ---------------------------------------------------------------------------


def test_placement_rules_choose_as_documented() -> None:
    capacity = np.array([10.0, 10.0])
    free = np.array([[2.0, 2.0], [6.0, 6.0], [9.0, 3.0], [10.0, 10.0]])
    demand = np.array([3.0, 3.0])
    assert place(PLACEMENTS["firstfit"], free, capacity, demand) == 1
    assert place(PLACEMENTS["bestfit"], free, capacity, demand) == 1  # 6 left, vs 6 and 14
    assert place(PLACEMENTS["worstfit"], free, capacity, demand) == 3
    assert place(PLACEMENTS["align"], free, capacity, demand) == 3
    tight = np.array([[9.0, 3.0], [6.0, 6.0]])
    assert place(PLACEMENTS["bestfit"], tight, capacity, demand) == 0  # 6 left: tie -> lowest
    assert place(PLACEMENTS["firstfit"], free, capacity, np.array([11.0, 1.0])) == -1


def test_an_unknown_placement_names_the_known_ones(deeprm: JobSet) -> None:
    with pytest.raises(KeyError, match="unknown placement 'bestfir'; known: firstfit, bestfit"):
        run_policy(deeprm, SJF(placement="bestfir"), ClusterConfig(machines=2))


def test_combination_names() -> None:
    assert SJF().name == "sjf"
    assert SJF(placement="bestfit").name == "sjf+bestfit"


# -- agents on several machines ------------------------------------------------------------------


@SETTINGS
@given(**agent_cases(machines=st.integers(1, 3), slots=st.integers(1, 3)))
def test_agent_actions_on_machines_match_the_step_engine(
    jobset: JobSet, machines: int, slots: int, seed: int
) -> None:
    config = ClusterConfig(slots=slots, horizon=5, machines=machines)
    engine, sim = agent_and_step_engines(jobset, config)
    rng = np.random.default_rng(seed)
    total = 0.0
    while not engine.done[0]:
        mask = engine.action_mask()[0]
        np.testing.assert_array_equal(mask, sim.action_mask())
        a = int(rng.integers(0, machines * slots + 2))  # the last one is out of range
        total += float(engine.step(np.array([a]))[0])
        if a == 0 or not sim.allocate((a - 1) % slots, (a - 1) // slots):
            sim.advance()
    assert sim.done
    p = engine.placements()
    np.testing.assert_array_equal(p.start, sim.start)
    np.testing.assert_array_equal(p.target, sim.machine)
    assert_return_is_minus_slowdown(total, sim.start, jobset)


def test_weighted_reward_of_seed_002() -> None:
    # one machine, M = 1: j0 (2 steps) runs, j1 (1 step) waits in the slot, j2 (4 steps) in the
    # backlog. Step 0 -> 1 pays α/2 + β/1 + γ/4.
    js = deeprm_like([(0, 2, 10, 10), (0, 1, 5, 5), (0, 4, 5, 5)])
    config = ClusterConfig(slots=1, machines=1)
    weights = RewardWeights(alpha=3.0, beta=2.0, gamma=0.5)
    engine = BatchedEngine.from_jobset(js, config, rewards=weights, skip_forced=False)
    assert engine.step(np.array([1]))[0] == 0.0  # allocate j0: no time passes
    assert engine.step(np.array([0]))[0] == pytest.approx(-(3.0 / 2 + 2.0 / 1 + 0.5 / 4))
    plain = BatchedEngine.from_jobset(js, config, skip_forced=False)
    plain.step(np.array([1]))
    assert plain.step(np.array([0]))[0] == pytest.approx(-(1 / 2 + 1 / 1 + 1 / 4))


# -- the public schedule check -------------------------------------------------------------------


def test_check_schedule_rejects_what_the_cluster_forbids() -> None:
    js = JobSet(
        deeprm_like([(0, 2, 6, 6), (0, 2, 6, 6), (1, 1, 4, 4)]).jobs,
        deeprm_like([(0, 1, 1, 1)]).meta,
    )
    check_schedule(js, [0, 2, 1])  # j2 beside j0; j1 after j0
    with pytest.raises(InvalidScheduleError, match="never started"):
        check_schedule(js, [0, -1, 1])
    with pytest.raises(InvalidScheduleError, match="before it was released"):
        check_schedule(js, [0, 2, 0])
    with pytest.raises(
        InvalidScheduleError, match="machine 0 of jobset 0 is over capacity at step 1"
    ):
        check_schedule(js, [0, 1, 3])
    check_schedule(js, [0, 0, 1], [0, 1, 1], machines=2)  # two machines: side by side
    with pytest.raises(InvalidScheduleError, match="no machine of the 2"):
        check_schedule(js, [0, 0, 1], [0, 2, 1], machines=2)
    with pytest.raises(InvalidScheduleError, match="exactly its run time"):
        check_schedule(js, [0, 2, 1], finish=[2, 4, 3])
