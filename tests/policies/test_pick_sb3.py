"""Stable-Baselines3 agents on the pick environment (issue 37): sb3-contrib's MaskablePPO
trains on ``PickEnv`` through ``action_masks()``, and the saved model runs as ``sb3-pick`` in
``simulate`` beside the heuristics and enters the same paired comparison. Needs the ``rl``
extra (skipped without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO

from schedlab.jobset import JobSet
from schedlab.policies.check import check_policy
from schedlab.policies.external import ModelMismatchError
from schedlab.registry import make_policy
from schedlab.reports.notebook import compare
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.env import ClusterEnv
from schedlab.simulator.pick.env import PickEnv
from schedlab.simulator.run import simulate
from tests.simulator.pick_helpers import kth_windows
from tests.strategies import deeprm_jobset


@pytest.fixture(scope="module")
def kth() -> JobSet:
    return kth_windows(size=100, windows=4, seed=6)


@pytest.fixture(scope="module")
def model(kth: JobSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = PickEnv(kth, window=60, queue="easy", visible=16)
    agent = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    agent.learn(128)
    path = tmp_path_factory.mktemp("sb3-pick") / "model.zip"
    agent.save(path)
    return path


def test_maskable_ppo_enters_the_same_comparison(kth, model) -> None:
    agent = make_policy(f"sb3-pick+easy:{model},label=maskable-ppo")
    assert agent.candidates == 16
    results = simulate(kth, [make_policy("fcfs+easy"), agent], ClusterConfig(slots=None))
    assert set(results.table.get_column("policy")) == {"fcfs+easy", "maskable-ppo"}
    comparison = compare(results, reference="fcfs+easy", n_resamples=200)
    assert comparison.policies == ["fcfs+easy", "maskable-ppo"]
    assert comparison.pairwise.height == 1  # the paired Wilcoxon test of the two
    check_policy(make_policy(f"sb3-pick+easy:{model}"))


def test_a_model_of_another_environment_is_refused(kth, tmp_path) -> None:
    other = tmp_path / "deeprm.zip"
    MaskablePPO("MlpPolicy", ClusterEnv(deeprm_jobset(0.7, n_jobsets=2)), n_steps=64).save(other)
    with pytest.raises(ModelMismatchError, match=r"not on the pick environment's \(K, 15\)"):
        simulate(kth, [make_policy(f"sb3-pick:{other}")], ClusterConfig(slots=None))
