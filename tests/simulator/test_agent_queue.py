"""Queue disciplines for agents on the batched engine: hand-worked strict and EASY masks, the
head's reservation never moving later under EASY, the Gymnasium adapters, and a learned policy
run as ``deeprm+easy`` / ``deeprm+strict``."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.jobset import JobSet
from schedlab.policies.deeprm import DeepRMPlusPolicy, DeepRMPolicy
from schedlab.registry import make_policy, parse_policy
from schedlab.simulator.check import check_discipline, check_schedule
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.env import ClusterEnv, ClusterVectorEnv
from schedlab.simulator.model import rollout
from schedlab.simulator.run import run_policy, simulate
from schedlab.simulator.views.deeprm_image import DeepRMImage
from tests.strategies import agent_cases, deeprm_jobset, jobset_arrays

# One machine of capacity 10, one resource. Job 0 (8 units, 5 steps) arrives at 0; at step 1
# job 1 (9 units: the head, which fits only once job 0 ends, at 5), job 2 (2 units, 4 steps:
# ends at 5, so it may backfill), job 3 (2 units, 10 steps: it would leave 8 < 9 units at 5)
# and job 4 (3 units: does not fit now).
ARRIVAL = np.array([0, 1, 1, 1, 1])
DURATION = np.array([5, 3, 4, 10, 2])
DEMAND = np.array([[8.0], [9.0], [2.0], [2.0], [3.0]])
HAND = ClusterConfig(slots=4, horizon=20, machines=1)


def _hand_engine(queue: str) -> BatchedEngine:
    """The hand-worked case at step 1, job 0 running; forced steps are not skipped."""
    engine = BatchedEngine(
        ARRIVAL, DURATION, DEMAND, np.array([0]), np.array([5]), np.array([10.0]), HAND,
        skip_forced=False, queue=queue,
    )  # fmt: skip
    engine.step(np.array([1]))  # job 0 starts at 0
    engine.step(np.array([0]))  # jobs 1-4 arrive in slots 0-3
    assert int(engine.state.now[0]) == 1
    np.testing.assert_array_equal(engine.state.slot[0], [1, 2, 3, 4])
    return engine


@pytest.mark.parametrize(
    ("queue", "mask"),
    [
        ("greedy", [1, 1, 1, 1, 1]),  # the head and job 4 are allocated into the future
        ("strict", [1, 0, 0, 0, 0]),  # the head does not fit now: nothing else may start
        ("easy", [1, 0, 1, 0, 0]),  # job 2 ends by the head's reservation; job 3 would delay it
    ],
)
def test_hand_worked_masks_at_step_1(queue: str, mask: list[int]) -> None:
    np.testing.assert_array_equal(_hand_engine(queue).action_mask()[0], np.array(mask, bool))


def test_easy_backfills_now_and_a_disallowed_action_acts_as_void() -> None:
    engine = _hand_engine("easy")
    engine.step(np.array([2]))  # job 2 (slot 1) backfills now
    assert engine.starts(0)[2] == 1
    np.testing.assert_array_equal(engine.action_mask()[0], [1, 0, 0, 0, 0])
    engine.step(np.array([3]))  # job 3 (slot 2) would delay the head: void, time advances
    assert int(engine.state.now[0]) == 2
    assert engine.starts(0)[3] == -1


@pytest.mark.parametrize("queue", ["strict", "easy"])
def test_at_the_reservation_only_the_head_may_start(queue: str) -> None:
    engine = _hand_engine(queue)
    for _ in range(4):
        engine.step(np.array([0]))
    assert int(engine.state.now[0]) == 5  # job 0 has ended: the head fits now
    # easy: jobs 3 and 4 would leave less than the head's 9 units now, so they may not start
    np.testing.assert_array_equal(engine.action_mask()[0], [1, 1, 0, 0, 0])
    engine.step(np.array([1]))
    assert engine.starts(0)[1] == 5


def test_strict_skips_forced_steps_to_when_the_head_fits() -> None:
    engine = BatchedEngine(
        ARRIVAL, DURATION, DEMAND, np.array([0]), np.array([5]), np.array([10.0]), HAND,
        queue="strict",
    )  # fmt: skip
    engine.step(np.array([1]))
    assert int(engine.state.now[0]) == 5  # steps 1-4 only had void
    np.testing.assert_array_equal(engine.action_mask()[0], [1, 1, 0, 0, 0])


@pytest.mark.parametrize("queue", ["strict", "easy"])
def test_the_time_limit_finishes_fcfs_under_the_discipline(queue: str) -> None:
    engine = BatchedEngine(
        ARRIVAL, DURATION, DEMAND, np.array([0]), np.array([5]), np.array([10.0]), HAND,
        queue=queue, time_limit=np.array([1]),
    )  # fmt: skip
    engine.step(np.array([0]))  # the agent withholds job 0 until the limit
    assert engine.done[0]
    assert int(engine.forced[0]) == 5
    # job 0 at 1, the head when it fits (6), job 2 beside job 0 under EASY only
    expected = [1, 6, 1, 9, 9] if queue == "easy" else [1, 6, 9, 9, 9]
    np.testing.assert_array_equal(engine.starts(0), expected)


def test_a_tie_between_machines_leaves_the_head_a_machine() -> None:
    # Two machines of 10 units, each with an 8-unit job to step 5; the head needs 9 units
    # and may start at 5 on either, so a long 2-unit job may start now on one of them.
    arrival = np.array([0, 0, 1, 1])
    duration = np.array([5, 5, 3, 10])
    demand = np.array([[8.0], [8.0], [9.0], [2.0]])
    config = ClusterConfig(slots=2, horizon=20, machines=2)
    engine = BatchedEngine(
        arrival, duration, demand, np.array([0]), np.array([4]), np.array([10.0]), config,
        skip_forced=False, queue="easy",
    )  # fmt: skip
    engine.step(np.array([1]))  # job 0: slot 0 on machine 0
    engine.step(np.array([1 + 2 + 1]))  # job 1: slot 1 on machine 1
    assert sorted(engine.state.machine[0, :2].tolist()) == [0, 1]
    engine.step(np.array([0]))
    np.testing.assert_array_equal(engine.state.slot[0], [2, 3])
    np.testing.assert_array_equal(engine.action_mask()[0], [1, 0, 1, 0, 1])
    engine.step(np.array([2]))  # job 3 on machine 0: now only machine 1 reaches step 5
    np.testing.assert_array_equal(engine.action_mask()[0], [1, 0, 0, 0, 0])


@pytest.mark.parametrize("queue", ["conservative", "fifo"])
def test_agents_refuse_other_disciplines(queue: str) -> None:
    match = "heuristics on the fast and step engines" if queue == "conservative" else "one of"
    with pytest.raises(ValueError, match=match):
        BatchedEngine(
            ARRIVAL, DURATION, DEMAND, np.array([0]), np.array([5]), np.array([10.0]), HAND,
            queue=queue,  # type: ignore[arg-type]
        )  # fmt: skip


def _reservation(engine: BatchedEngine) -> tuple[int, int] | None:
    """(head job row, absolute earliest start of the head in the profile), written apart from
    the kernels: the smallest job row in the slots, and the first window where it fits."""
    s = engine.state
    rows = s.slot[0][s.slot[0] >= 0]
    if rows.size == 0:
        return None
    j = int(rows.min())
    ok = (s.free[0] >= s.demand[j] - 1e-9).all(axis=-1)  # (H, m)
    dur = int(s.duration[j])
    for t in range(ok.shape[0] - dur + 1):
        if ok[t : t + dur].all(axis=0).any():
            return j, int(s.now[0]) + t
    raise AssertionError("the head fits nowhere in the profile")


@settings(max_examples=40, deadline=None)
@given(**agent_cases(horizon=st.integers(1, 8), slots=st.integers(1, 4)),
       machines=st.integers(1, 3), skip=st.booleans())  # fmt: skip
def test_easy_never_delays_the_heads_reservation(
    jobset: JobSet, horizon: int, slots: int, seed: int, machines: int, skip: bool
) -> None:
    ((arrival, duration, demand, _),) = jobset_arrays(jobset)
    config = ClusterConfig(slots=slots, horizon=horizon, machines=machines)
    engine = BatchedEngine(
        arrival, duration, demand, np.array([0]), np.array([arrival.size]),
        np.asarray(jobset.capacity), config, skip_forced=skip, queue="easy",
        time_limit=np.array([10**6]),
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    while not engine.done[0]:
        before, now = _reservation(engine), int(engine.state.now[0])
        mask = engine.action_mask()[0]
        allowed = np.flatnonzero(mask)
        a = int(rng.choice(allowed) if rng.random() < 0.7 else rng.integers(0, mask.size + 1))
        started = engine.starts(0).copy()
        engine.step(np.array([a]))
        new = np.flatnonzero((engine.starts(0) != started) & (started == -1))
        assert (engine.starts(0)[new] == now).all() or not mask[a]  # only now, never ahead
        after = _reservation(engine)
        if before is not None and after is not None and after[0] == before[0]:
            # later only by the steps the agent let pass while the head could start
            assert after[1] <= max(before[1], int(engine.state.now[0]))


@pytest.fixture(scope="module")
def small() -> JobSet:
    return deeprm_jobset(0.7, n_jobsets=3, seed=1)


def _fcfs_first_fit(engine: BatchedEngine):
    """An ``act`` for :func:`rollout`: the earliest-arrived job the mask allows, on its lowest
    allowed machine (void if none)."""
    M = engine.config.slots or 0

    def act(obs: object, mask: np.ndarray, envs: np.ndarray) -> np.ndarray:
        out = np.zeros(envs.size, np.int64)
        for x, b in enumerate(envs):
            allowed = [
                (engine.state.slot[b, a % M], a // M, a + 1) for a in np.flatnonzero(mask[x, 1:])
            ]
            out[x] = min(allowed)[2] if allowed else 0
        return out

    return act


@pytest.mark.parametrize("queue", ["strict", "easy"])
@pytest.mark.parametrize("machines", [1, 2])
def test_fcfs_agent_seeing_every_job_is_the_fcfs_heuristic(
    small: JobSet, queue: str, machines: int
) -> None:
    # with more slots than jobs the agent sees the whole queue, as the heuristics' disciplines:
    # taking the earliest-arrived allowed job on its first allowed machine is fcfs+strict or
    # fcfs+easy (first fit), whose kernel (cluster/easy.py) was written apart
    config = ClusterConfig(machines=machines, slots=64)
    engine = BatchedEngine.from_jobset(small, config, queue=queue)
    rollout(engine, view=DeepRMImage(), act=_fcfs_first_fit(engine))
    heuristic = run_policy(small, make_policy(f"fcfs+{queue}"), config)
    np.testing.assert_array_equal(engine.all_starts(), heuristic.start)
    np.testing.assert_array_equal(engine.placements().target, heuristic.machine)


def test_env_checker_passes_under_easy(small: JobSet) -> None:
    check_env(ClusterEnv(small, queue="easy"), skip_render_check=True)


def test_env_and_vector_env_masks_follow_the_discipline(small: JobSet) -> None:
    env = ClusterEnv(small, queue="strict")
    vec = ClusterVectorEnv(small, 2, queue="strict")
    _, info = env.reset(seed=0)
    _, vinfo = vec.reset(seed=0)
    for mask in [info["action_mask"], *vinfo["action_mask"]]:
        assert mask[0] == 1
        assert mask[1:].sum() <= 1  # at most the head, on the one machine
    assert env.engine.queue == vec.engine.queue == "strict"


def test_policies_take_a_queue_word_and_name_themselves_by_it() -> None:
    assert parse_policy("deeprm+easy:deeprm-0.7") == (
        "deeprm",
        {"queue": "easy", "checkpoint": "deeprm-0.7"},
    )
    assert make_policy("deeprm-plus+strict:deeprm-plus-1.4").queue == "strict"
    assert DeepRMPolicy(checkpoint="deeprm-0.7", queue="easy").name == "deeprm+easy"
    assert DeepRMPlusPolicy(checkpoint="deeprm-plus-1.4", queue="strict").name == (
        "deeprm-plus+strict"
    )
    assert DeepRMPolicy(checkpoint="deeprm-0.7").name == "deeprm"


def test_step_engine_refuses_an_agent_with_a_discipline(small: JobSet) -> None:
    policy = DeepRMPolicy(checkpoint="deeprm-0.7", queue="easy")
    with pytest.raises(ValueError, match="batched engine only"):
        run_policy(small, policy, ClusterConfig(), engine="step")


def test_shipped_checkpoint_under_easy_and_strict(small: JobSet) -> None:
    policies = [DeepRMPolicy(checkpoint="deeprm-0.7", queue=q) for q in ("easy", "strict")]
    results = simulate(small, policies, ClusterConfig())
    for policy in policies:
        assert results.meta["agent_stats"][policy.name]["forced_jobs"] == 0
        rows = results.table.filter(results.table["policy"] == policy.name)
        start, machine = rows["start"].to_numpy(), rows["machine"].to_numpy()
        check_schedule(small, start, machine, machines=1)
    strict = results.table.filter(results.table["policy"] == "deeprm+strict")
    check_discipline(small, strict["start"].to_numpy(), "strict")
