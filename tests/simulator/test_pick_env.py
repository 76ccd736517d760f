"""The pick environments (issue 37): Gymnasium's and SB3's checkers, masks, returns, windows,
the vector env's same-step autoreset, the registered id, and refused inputs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import schedlab  # noqa: F401  (registers the environment ids)
from schedlab.jobset import JobSet
from schedlab.simulator.pick.env import PickEnv, PickVectorEnv
from schedlab.simulator.pick.features import FEATURES
from schedlab.traces import KTH_TRAIN_END, KTH_VAL_END
from tests.simulator.pick_helpers import kth_windows


@pytest.fixture(scope="module")
def kth() -> JobSet:
    return kth_windows(size=300, windows=2, seed=2)


@pytest.mark.parametrize("queue", ["greedy", "strict", "easy"])
def test_gymnasium_check_env(kth, queue) -> None:
    check_env(PickEnv(kth, window=100, queue=queue, visible=16), skip_render_check=True)


def test_sb3_check_env(kth) -> None:
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    with pytest.warns(UserWarning, match="unconventional shape"):  # (K, F): one row per job
        sb3.check_env(PickEnv(kth, window=100, queue="easy", visible=16))


def test_spaces_masks_and_episode_return(kth) -> None:
    env = PickEnv(kth, window=120, queue="easy", visible=16)
    obs, info = env.reset(seed=3)
    assert obs.shape == (16, len(FEATURES)) == env.observation_space.shape
    assert obs.dtype == np.float32
    assert env.action_space.n == 16
    rng, total, done = np.random.default_rng(0), 0.0, False
    while not done:
        mask = env.action_masks()
        assert mask.dtype == np.bool_
        np.testing.assert_array_equal(mask, info["action_mask"] == 1)
        assert (obs[~mask] == 0).all()
        assert ((obs >= 0) & (obs <= 1)).all()
        obs, reward, done, truncated, info = env.step(rng.choice(np.flatnonzero(mask)))
        total += reward
        assert not truncated
    assert total == pytest.approx(-info["bounded_slowdown"], rel=1e-9)
    assert info["jobs"] == 120
    np.testing.assert_array_equal(env.action_masks(), np.eye(16, dtype=bool)[0])


def test_an_action_without_a_candidate_picks_the_earliest(kth) -> None:
    a, b = PickEnv(kth, window=80, queue="easy"), PickEnv(kth, window=80, queue="easy")
    a.reset(seed=1)
    b.reset(seed=1)
    done = False
    while not done:
        oa, ra, done, _, _ = a.step(a.action_space.n - 1)  # never a candidate here
        ob, rb, _, _, _ = b.step(0)
        np.testing.assert_array_equal(oa, ob)
        assert ra == rb


def test_options_name_a_window_and_seeds_repeat(kth) -> None:
    env = PickEnv(kth, window=50)
    _, info = env.reset(options={"jobset": int(kth.jobset_ids[1]), "start": 7})
    assert (info["jobset"], info["start"], info["jobs"]) == (kth.jobset_ids[1], 7, 50)
    first = [env.reset(seed=4)[1]["start"] for _ in range(2)]
    again = PickEnv(kth, window=50).reset(seed=4)[1]["start"]
    assert first[0] == again
    with pytest.raises(ValueError, match="no jobset 99"):
        env.reset(options={"jobset": 99})
    with pytest.raises(ValueError, match="start 251 is not a valid window start"):
        env.reset(options={"jobset": int(kth.jobset_ids[0]), "start": 251})


def test_disciplines_drawn_per_episode_show_in_the_observation(kth) -> None:
    env = PickEnv(kth, window=60, queue=("greedy", "easy"))
    seen = set()
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        seen.add(info["queue"])
        onehot = obs[0, FEATURES.index("greedy") :]
        if info["action_mask"].any() and obs[0].any():
            assert onehot.tolist() == [info["queue"] == q for q in ("greedy", "strict", "easy")]
    assert seen == {"greedy", "easy"}


def test_vector_env_same_step_autoreset(kth) -> None:
    venv = PickVectorEnv(kth, 4, window=40, queue="strict", visible=8)
    obs, info = venv.reset(seed=0)
    assert obs.shape == (4, 8, len(FEATURES))
    totals, finished = np.zeros(4), []
    for _ in range(400):
        mask = info["action_mask"]
        np.testing.assert_array_equal(mask, venv.action_masks())
        obs, rewards, terminated, truncated, info = venv.step(mask.argmax(axis=1))
        totals += rewards
        if terminated.any():
            final = info["final_info"]
            for b in np.flatnonzero(terminated):
                assert totals[b] == pytest.approx(-final["bounded_slowdown"][b], rel=1e-9)
                finished.append(b)
            totals[terminated] = 0.0
        assert not truncated.any()
    assert len(finished) >= 4


def test_registered_id_replays_bundled_kth_windows() -> None:
    env = gym.make("schedlab/Pick-v0", queue="easy", visible=32)
    obs, info = env.reset(seed=0)
    assert obs.shape == (32, len(FEATURES))
    assert info["jobs"] == 256
    assert env.unwrapped.engine.jobset.meta.machines == 1
    # only the training days: the shipped network's validation and test stay unseen
    arrival = env.unwrapped.engine.jobset.jobs.get_column("arrival")
    assert arrival.max() - arrival.min() < KTH_TRAIN_END
    whole = PickEnv(end=None).engine.jobset.jobs.get_column("arrival")
    assert whole.max() - whole.min() > KTH_VAL_END


def test_refused_inputs(kth) -> None:
    with pytest.raises(ValueError, match="queue must be one or more of"):
        PickEnv(kth, queue="conservative")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window must be >= 1"):
        PickEnv(kth, window=0)
    empty = JobSet.create(kth.jobs.head(0), kth.meta)
    with pytest.raises(ValueError, match="has no jobs"):
        PickEnv(empty)


def test_a_baseline_divides_each_episodes_rewards(kth) -> None:
    """With ``baseline``, an episode's return is minus its mean over the episode's baseline
    value, at every boundary of the same-step autoreset (carried rewards included)."""
    seen: list[tuple[int, int, str]] = []

    def baseline(lo: np.ndarray, hi: np.ndarray, queues: list[str]) -> np.ndarray:
        seen.extend(zip(lo.tolist(), hi.tolist(), queues, strict=True))
        return (hi - lo) / 10.0  # 4 for a window of 40: any per-episode value

    venv = PickVectorEnv(kth, 3, window=40, queue=("greedy", "easy"), visible=8, baseline=baseline)
    _, info = venv.reset(seed=1)
    totals, finished = np.zeros(3), 0
    for _ in range(300):
        _, rewards, terminated, _, info = venv.step(info["action_mask"].argmax(axis=1))
        totals += rewards
        for b in np.flatnonzero(terminated):
            expected = -info["final_info"]["bounded_slowdown"][b] / 4.0
            assert totals[b] == pytest.approx(expected, rel=1e-9)
            finished += 1
        totals[terminated] = 0.0
    assert finished >= 3
    assert len(seen) == 3 + finished
    assert {q for *_, q in seen} == {"greedy", "easy"}
