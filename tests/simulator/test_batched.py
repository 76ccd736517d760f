"""The batched engine: same schedules as the step engine and the compiled greedy rule, its
rewards, the time-limit fallback, and the DeepRM observation on hand-made states."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import registry
from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.cluster.engine import Engine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry
from tests.agent_helpers import agent_and_step_engines, assert_return_is_minus_slowdown
from tests.strategies import (
    agent_cases,
    deeprm_jobset,
    heuristic_names,
    jobset_from_rows,
    jobsets,
)

SETTINGS = settings(max_examples=30, deadline=None)
CONFIG = ClusterConfig(slots=10, horizon=20)
HEURISTICS = heuristic_names()


def _uniforms(jobset: JobSet, policy) -> np.ndarray:
    ids = jobset.jobs.get_column("jobset").to_numpy()
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [ids.size]])
    u = np.empty(ids.size)
    for lo, hi in itertools.pairwise(bounds):
        policy.reset(seed=int(ids[lo]))
        u[lo:hi] = policy.uniforms(int(hi - lo))
    return u


@pytest.fixture(scope="module")
def deeprm() -> JobSet:
    a, b = deeprm_jobset(0.7, n_jobsets=6, seed=5), deeprm_jobset(1.5, n_jobsets=6, seed=6)
    jobs = b.jobs.with_columns(b.jobs["jobset"] + 100)
    return JobSet.create(a.jobs.vstack(jobs.select(a.jobs.columns)), a.meta)


@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristics_identical_on_all_three_engines(deeprm: JobSet, name: str) -> None:
    """The compiled rule, the step engine and the batched engine (the heuristic acting as an
    agent, start-now actions) give one schedule; Random draws its uniforms per decision on the
    batched engine, in another order."""
    policy = registry.policies.make(name, **({"seed": 3} if name == "random" else {}))
    fast = schedule(deeprm, policy, CONFIG)
    np.testing.assert_array_equal(fast, schedule(deeprm, policy, CONFIG, engine="step"))
    if name != "random":
        np.testing.assert_array_equal(schedule(deeprm, policy, CONFIG, engine="batched"), fast)


@SETTINGS
@given(jobset=jobsets(max_jobsets=2), slots=st.integers(1, 4), name=st.sampled_from(HEURISTICS))
def test_heuristics_identical_on_float_jobsets(jobset: JobSet, slots: int, name: str) -> None:
    config = ClusterConfig(slots=slots, horizon=5)
    policy = registry.policies.make(name, **({"seed": 1} if name == "random" else {}))
    fast = schedule(jobset, policy, config)
    np.testing.assert_array_equal(fast, schedule(jobset, policy, config, engine="step"))
    if name != "random":
        np.testing.assert_array_equal(schedule(jobset, policy, config, engine="batched"), fast)


def _replay_on_step_engine(sim: Engine, actions: list[int]) -> Engine:
    """Apply gym actions (0 = void, i = slot i-1) to the step engine until it is done."""
    for a in actions:
        if sim.done:
            break
        if a == 0 or not sim.allocate(int(a) - 1):
            sim.advance()
    return sim


@SETTINGS
@given(**agent_cases(horizon=st.integers(1, 8), slots=st.integers(1, 4)))
def test_agent_mode_matches_step_engine_for_any_actions(
    jobset: JobSet, horizon: int, slots: int, seed: int
) -> None:
    config = ClusterConfig(slots=slots, horizon=horizon)
    engine, step_engine = agent_and_step_engines(jobset, config)
    rng = np.random.default_rng(seed)
    actions, total = [], 0.0
    while not engine.done[0]:
        a = int(rng.integers(0, slots + 2))  # slots + 1 is out of range: invalid
        actions.append(a)
        total += float(engine.step(np.array([a]))[0])
    sim = _replay_on_step_engine(step_engine, actions)
    assert sim.done
    np.testing.assert_array_equal(engine.starts(0), sim.start)
    assert_return_is_minus_slowdown(total, sim.start, jobset)


def test_completion_objective_returns_minus_total_completion_time() -> None:
    js = deeprm_jobset(1.1, n_jobsets=3, seed=2)
    engine = BatchedEngine.from_jobset(js, CONFIG, objective="completion")
    totals = np.zeros(engine.n_envs)
    rng = np.random.default_rng(0)
    while not engine.done.all():
        active = np.flatnonzero(~engine.done)
        mask = engine.action_mask(active)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        totals[active] += engine.step(actions, active)
    _, completion = engine.job_means()
    sizes = np.bincount(js.jobs["jobset"].to_numpy())[js.jobset_ids]
    np.testing.assert_allclose(totals, -completion * sizes)


def test_skipping_forced_steps_changes_no_schedule(deeprm: JobSet) -> None:
    """First valid slot, else void: both modes give the same schedule and the same return."""
    results = []
    for skip in (False, True):
        engine = BatchedEngine.from_jobset(deeprm, CONFIG, skip_forced=skip)
        total = np.zeros(engine.n_envs)
        decisions = 0
        while not engine.done.all():
            active = np.flatnonzero(~engine.done)
            mask = engine.action_mask(active)
            first = np.where(mask[:, 1:].any(axis=1), mask[:, 1:].argmax(axis=1) + 1, 0)
            total[active] += engine.step(first, active)
            decisions += active.size
        results.append((engine.all_starts(), total, decisions))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])
    assert results[1][2] < results[0][2]


def test_hand_computed_rewards_and_tail() -> None:
    # job 0: arrives 0, 2 steps, full cluster; job 1 arrives 0, 1 step, needs half
    js = jobset_from_rows([(0, 2, 10, 10), (0, 1, 5, 5)])
    engine = BatchedEngine.from_jobset(js, ClusterConfig(slots=2, horizon=4), skip_forced=False)
    assert engine.step(np.array([1]))[0] == 0.0  # job 0 at offset 0
    assert engine.action_mask()[0].tolist() == [True, False, True]  # job 1 (slot 1) fits at 2
    # void: one step with both jobs in the system: -(1/2 + 1/1)
    assert engine.step(np.array([0]))[0] == pytest.approx(-1.5)
    # job 1 placed at offset 1 (now = 1, finishes at 3): episode ends, tail paid at once:
    # job 0 finishes at 2 (1 more step: 1/2), job 1 at 3 (2 more steps: 2/1)
    assert engine.step(np.array([2]))[0] == pytest.approx(-2.5)
    assert engine.done[0]
    assert engine.starts(0).tolist() == [0, 2]
    assert engine.withholding()["withholding_steps"] == 0


def test_withheld_jobs_are_counted_when_time_advances() -> None:
    js = jobset_from_rows([(0, 3, 2, 2), (0, 12, 2, 2)])
    engine = BatchedEngine.from_jobset(js, ClusterConfig(slots=2, horizon=20))
    engine.step(np.array([0]))  # void while both fit now
    stats = engine.withholding()
    assert stats["time_steps"] == 1
    assert stats["withholding_steps"] == 1
    assert stats["withheld_lengths"] == {3: 1, 12: 1}


def test_time_limit_finishes_every_job_and_counts_them() -> None:
    js = deeprm_jobset(0.9, n_jobsets=2, seed=4)
    engine = BatchedEngine.from_jobset(js, CONFIG, time_limit=np.array([5, 5]))
    while not engine.done.all():
        active = np.flatnonzero(~engine.done)
        engine.step(np.zeros(active.size, dtype=np.int64), active)  # always void
    starts = engine.all_starts()
    assert (starts >= 0).all()
    assert engine.forced.sum() == len(js)
    assert (starts >= 5).all()


def test_observation_layout_on_a_hand_made_state() -> None:
    """Occupancy, slot blocks, backlog and the extra column (design.md §8), M = 2, T = 4."""
    rows = [(0, 2, 3, 1), (0, 5, 2, 4), (0, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1)]
    js = jobset_from_rows(rows)
    config = ClusterConfig(slots=2, horizon=4, backlog_view=5)
    engine = BatchedEngine.from_jobset(js, config, skip_forced=False)
    engine.step(np.array([1]))  # job 0 at offset 0 (3 cpu, 1 mem for 2 steps); job 2 to slot 0
    engine.step(np.array([0]))  # now = 1: jobs 3, 4 arrive into the backlog
    obs = engine.observe(DeepRMImage())
    assert obs.geometry.shape == (4, 2 * 10 * 3 + 2 + 1) == (4, 63)
    img = obs.dense()[0]
    cpu, mem = img[:, 0:30], img[:, 30:60]
    expected_cpu_occ = np.zeros((4, 10))
    expected_cpu_occ[0, :3] = 1  # job 0 runs one more step
    np.testing.assert_array_equal(cpu[:, :10], expected_cpu_occ)
    assert mem[:, :10].sum() == 1
    slot0 = cpu[:, 10:20]  # job 2: 1 step, 1 cpu
    assert slot0.sum() == 1
    assert slot0[0, 0] == 1
    slot1 = mem[:, 20:30]  # job 1: 5 steps (clipped to T = 4), 4 mem
    np.testing.assert_array_equal(slot1, np.pad(np.ones((4, 4)), ((0, 0), (0, 6))))
    backlog = img[:, 60:62]  # width ceil(5 / 4) = 2, row-major: 2 jobs fill row 0
    np.testing.assert_array_equal(backlog, [[1, 1], [0, 0], [0, 0], [0, 0]])
    np.testing.assert_allclose(img[:, 62], 0.0)  # a job arrived this step
    engine.step(np.array([0]))
    np.testing.assert_allclose(engine.observe(DeepRMImage()).dense()[0][:, 62], 0.1)


def test_reference_geometry_is_20_by_224() -> None:
    g = ObsGeometry(cap_units=ObsGeometry.units_for(np.array([10.0, 10.0])), slots=10, horizon=20)
    assert g.shape == (20, 224)
    assert g.n_terms == 2 * 20 + 2 * 10 + 2


def test_agents_see_estimates_in_the_job_slots_unless_clairvoyant() -> None:
    """A job slot's rows are the estimate (what a scheduler sees), not the true duration."""
    rows = [(0, 2, 3, 1)]  # one job: 2 steps, 3 cpu, 1 mem
    js = jobset_from_rows(rows)
    js = JobSet.create(js.jobs.with_columns(pl.Series("estimate", [3])), js.meta)
    config = ClusterConfig(slots=2, horizon=4)
    for clairvoyant, rows_shown in ((False, 3), (True, 2)):
        engine = BatchedEngine.from_jobset(js, config, clairvoyant=clairvoyant)
        slot0 = engine.observe(DeepRMImage()).dense()[0][:, 10:20]
        assert slot0[:, 0].sum() == rows_shown
