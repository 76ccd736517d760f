"""Gymnasium adapters: check_env, masks, seeding, episodes, and the vector env's autoreset."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from gymnasium.utils.env_checker import check_env

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.env import ClusterEnv, DeepRMEnv, DeepRMVectorEnv
from tests.strategies import deeprm_jobset, jobset_from_rows


@pytest.fixture(scope="module")
def jobset():
    return deeprm_jobset(0.9, n_jobsets=4, seed=11)


def test_check_env_passes(jobset) -> None:
    check_env(DeepRMEnv(jobset), skip_render_check=True)


def test_spaces_and_mask(jobset) -> None:
    env = DeepRMEnv(jobset)
    obs, info = env.reset(seed=0)
    assert obs.shape == (20, 224)
    assert obs.dtype == np.float32
    assert env.action_space.n == 11
    mask = info["action_mask"]
    assert mask.shape == (11,)
    assert mask.dtype == np.int8
    assert mask[0] == 1
    assert mask[1:].any()  # something arrived and fits


def test_action_masks_is_the_info_mask_as_bool(jobset) -> None:
    """sb3-contrib's convention: ``env.action_masks()``, the mask of the current state."""
    env, venv = DeepRMEnv(jobset), DeepRMVectorEnv(jobset, num_envs=2)
    _, info = env.reset(seed=2)
    _, vinfo = venv.reset(seed=2)
    rng = np.random.default_rng(1)
    done = False
    while not done:
        mask = env.action_masks()
        assert mask.dtype == np.bool_
        np.testing.assert_array_equal(mask, info["action_mask"] == 1)
        vmask = venv.action_masks()
        assert vmask.shape == (2, 11)
        np.testing.assert_array_equal(vmask, vinfo["action_mask"] == 1)
        _, _, done, _, info = env.step(rng.choice(np.flatnonzero(mask)))
        _, _, _, _, vinfo = venv.step(10 - vmask[:, ::-1].argmax(axis=1))  # last valid
    np.testing.assert_array_equal(env.action_masks(), info["action_mask"] == 1)


def test_episode_return_is_minus_total_slowdown(jobset) -> None:
    env = DeepRMEnv(jobset)
    ids = jobset.jobset_ids
    _, info = env.reset(seed=1, options={"jobset": ids[2]})
    assert info["jobset"] == ids[2]
    total, done = 0.0, False
    rng = np.random.default_rng(0)
    while not done:
        action = rng.choice(np.flatnonzero(info["action_mask"]))
        _, reward, done, truncated, info = env.step(action)
        assert not truncated
        total += reward
    assert info["forced_jobs"] == 0
    start = env.engine.starts(0)
    rows = jobset.jobs.filter(jobset.jobs["jobset"] == ids[2])
    arrival, duration = rows["arrival"].to_numpy(), rows["duration"].to_numpy()
    assert total == pytest.approx(-((start + duration - arrival) / duration).sum())


def test_same_seed_same_jobset_and_observation(jobset) -> None:
    a, b = DeepRMEnv(jobset), DeepRMEnv(jobset)
    oa, ia = a.reset(seed=7)
    ob, ib = b.reset(seed=7)
    assert ia["jobset"] == ib["jobset"]
    np.testing.assert_array_equal(oa, ob)


def test_unknown_jobset_option_is_an_error(jobset) -> None:
    with pytest.raises(ValueError, match="no jobset 999"):
        DeepRMEnv(jobset).reset(options={"jobset": 999})


def test_vector_env_matches_single_envs_and_autoresets(jobset) -> None:
    venv = DeepRMVectorEnv(jobset, num_envs=3)
    obs, info = venv.reset(seed=3)
    assert obs.shape == (3, 20, 224)
    assert info["action_mask"].shape == (3, 11)
    assert venv.observation_space.shape == (3, 20, 224)
    ended = np.zeros(3, bool)
    for _ in range(2000):
        mask = info["action_mask"]
        actions = np.where(mask[:, 1:].any(axis=1), mask[:, 1:].argmax(axis=1) + 1, 0)
        obs, _, term, trunc, info = venv.step(actions)
        assert not trunc.any()
        ended |= term
        if ended.all():
            break
    assert ended.all()
    obs, _, term, _, info = venv.step(np.zeros(3, dtype=np.int64))
    assert obs.shape == (3, 20, 224)


def test_vector_env_steps_through_the_batched_engine(jobset) -> None:
    """One engine for all envs: their states live in one array."""
    venv = DeepRMVectorEnv(jobset, num_envs=5, config=ClusterConfig(slots=4, horizon=10))
    venv.reset(seed=0)
    assert isinstance(venv.engine, BatchedEngine)
    assert venv.engine.state.free.shape[0] == 5
    assert venv.single_observation_space.shape == (10, 2 * 10 * 5 + 6 + 1)


@pytest.mark.parametrize(
    ("env_id", "shape", "n_actions"),
    [("schedlab/DeepRM-v0", (20, 224), 11), ("schedlab/MultiMachine-v0", (20, 144), 11)],
)
def test_registered_ids_make_checked_envs(env_id: str, shape: tuple, n_actions: int) -> None:
    import subprocess
    import sys

    code = (  # a fresh interpreter: `import schedlab` first, then Gymnasium, as users do
        "import schedlab, gymnasium as gym\n"
        "from gymnasium.utils.env_checker import check_env\n"
        f"env = gym.make({env_id!r}, jobsets=4, load=0.8, workload_seed=3)\n"
        "check_env(env.unwrapped, skip_render_check=True)\n"
        "obs, info = env.reset(seed=0)\n"
        "print(list(obs.shape), env.action_space.n, info['action_mask'].size)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    assert out.strip() == f"{list(shape)} {n_actions} {n_actions}"


def test_multi_machine_env_places_on_both_machines() -> None:
    js = deeprm_jobset(1.5, n_jobsets=2, seed=4)
    env = ClusterEnv(js, ClusterConfig(slots=5, machines=2), layout="reshaped")
    _, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert mask.shape == (2 * 5 + 1,)
    # slot 0 fits on either machine of an empty cluster: actions 1 (machine 0) and 6 (machine 1)
    assert mask[1] == 1
    assert mask[6] == 1
    _, _, _, _, info = env.step(6)
    assert info["action_mask"][1] == 1  # machine 0 is still empty
    assert env.engine.state.machine[0, 0] == 1


def test_agents_see_estimates_and_jobs_are_killed_at_them() -> None:
    """With an ``estimate`` column the env is what ``simulate`` replays: the job slot shows the
    estimate, and a job runs until ``min(duration, estimate)`` (``overrun="kill"``)."""
    js = jobset_from_rows([(0, 5, 3, 1)])  # one job: 5 steps, 3 cpu, 1 mem
    js = JobSet.create(js.jobs.with_columns(pl.Series("estimate", [3])), js.meta)
    env = ClusterEnv(js, ClusterConfig(slots=2, horizon=8))
    obs, _ = env.reset(seed=0)
    assert obs[:, 10].sum() == 3  # cpu block of slot 0: 3 rows, the estimate
    env.step(1)
    assert env.engine.state.duration[0] == 3  # killed at its request


def test_dag_workloads_are_refused_with_a_reason() -> None:
    js = jobset_from_rows([(0, 1, 1, 1), (0, 1, 1, 1)])
    jobs = js.jobs.with_columns(pl.Series("parents", [[], [0]], dtype=pl.List(pl.Int64)))
    with pytest.raises(ValueError, match="do not model DAG precedence"):
        ClusterEnv(JobSet.create(jobs, js.meta))


def test_unknown_agent_options_are_refused_by_name(jobset) -> None:
    """The engine's own arguments (``max_jobs``, ``precedence``) are not agent options."""
    for name in ("objectiv", "max_jobs", "precedence"):
        with pytest.raises(TypeError, match=rf"unexpected keyword arguments \['{name}'\]"):
            ClusterEnv(jobset, **{name: None})
        with pytest.raises(TypeError, match=rf"unexpected keyword arguments \['{name}'\]"):
            DeepRMVectorEnv(jobset, 2, **{name: None})


def test_agent_options_reach_the_engine(jobset) -> None:
    env = DeepRMVectorEnv(jobset, 2, objective="completion", skip_forced=False, queue="easy")
    assert (env.engine.objective, env.engine.skip_forced, env.engine.queue) == (
        "completion",
        False,
        "easy",
    )
    default = ClusterEnv(jobset).engine
    assert (default.objective, default.skip_forced, default.queue) == ("slowdown", True, "greedy")
