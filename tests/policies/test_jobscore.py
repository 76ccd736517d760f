"""The per-job scoring network and its policy (issue 37): scores per job with shared weights,
checkpoints (weights_only, refused when foreign), and the policy in ``simulate`` under every
discipline, scheduling exactly as the pick environment does with the same network."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from schedlab.jobset import JobSet
from schedlab.params import build
from schedlab.policies.check import check_policy
from schedlab.policies.deeprm import CheckpointError
from schedlab.policies.jobscore import JobScoreNet, load_network, network_spec, save_network
from schedlab.policies.jobscore_config import JobScoreConfig, make_data
from schedlab.policies.jobscore_ppo import validate
from schedlab.policies.shipped import shipped
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.pick.engine import PickEngine
from schedlab.simulator.pick.env import PickEnv
from schedlab.simulator.pick.features import N_FEATURES
from schedlab.simulator.run import run_policy, simulate
from tests.simulator.pick_helpers import kth_windows


@pytest.fixture(scope="module")
def kth() -> JobSet:
    return kth_windows(size=150, windows=2, seed=9)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(3)
    net = JobScoreNet(N_FEATURES)
    path = tmp_path_factory.mktemp("jobscore") / "net.pt"
    save_network(path, net, {**network_spec(net, (32, 16, 8), 32), "train_config": {"visible": 32}})
    return path


def test_scores_are_per_job_with_shared_weights() -> None:
    torch.manual_seed(0)
    net = JobScoreNet(N_FEATURES)
    obs = torch.rand(2, 6, N_FEATURES)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    logits, value = net(obs, mask)
    assert torch.isinf(logits[0, 3:]).all()
    assert value.shape == (2,)
    order = torch.tensor([2, 0, 1, 5, 4, 3])
    swapped = net.logits(obs[:, order], mask[:, order])
    torch.testing.assert_close(swapped[1], logits[1, order])  # a job's score is its own
    alone = net.logits(obs[:1, :1], mask[:1, :1])
    torch.testing.assert_close(alone[0, 0], logits[0, 0])


def test_checkpoints_round_trip_and_foreign_ones_are_refused(checkpoint, tmp_path) -> None:
    net, spec = load_network(checkpoint)
    assert spec["network"] == "jobscore"
    assert not net.training
    other = tmp_path / "other.pt"
    save_network(other, net, {**spec, "features": ["wait", "estimate"]})
    with pytest.raises(CheckpointError, match="trained on observation features"):
        load_network(other)
    torch.save({"format": "schedlab.deeprm", "version": 1}, tmp_path / "deeprm.pt")
    with pytest.raises(CheckpointError, match=r"expected a schedlab\.jobscore checkpoint"):
        load_network(tmp_path / "deeprm.pt")
    save_network(other, net, {**spec, "hidden": [4, 4, 4]})
    with pytest.raises(CheckpointError, match="weights do not fit"):
        load_network(other)


@pytest.mark.parametrize("queue", ["greedy", "strict", "easy"])
def test_simulate_schedules_as_the_environment_does(kth, checkpoint, queue) -> None:
    """The highest-score picks of the network in the environment give the schedule
    ``simulate`` gives ``jobscore+QUEUE:PATH`` on the same window."""
    policy = make_policy(f"jobscore+{queue}:{checkpoint}")
    assert policy.candidates == 32
    start = run_policy(kth, policy, ClusterConfig(slots=None)).start
    net, _ = load_network(checkpoint)
    env = PickEnv(kth, window=None, queue=queue, visible=32)
    for k, jobset in enumerate(kth.jobset_ids):
        obs, info = env.reset(options={"jobset": jobset})
        done = False
        while not done:
            mask = torch.from_numpy(info["action_mask"] == 1)
            with torch.no_grad():
                pick = int(net.logits(torch.from_numpy(obs)[None], mask[None]).argmax())
            obs, _, done, _, info = env.step(pick)
        rows = slice(int(env.windows.bounds[k]), int(env.windows.bounds[k + 1]))
        np.testing.assert_array_equal(env.engine.placements().start[rows], start[rows])


def test_policy_in_simulate_beside_heuristics_and_conformance(kth, checkpoint) -> None:
    policies = [make_policy(f"jobscore+easy:{checkpoint},label=agent"), make_policy("sjf+easy")]
    results = simulate(kth, policies, ClusterConfig(slots=None))
    assert set(results.table.get_column("policy")) == {"agent", "sjf+easy"}
    check_policy(make_policy(f"jobscore+easy:{checkpoint}"))
    sampled = make_policy(f"jobscore:{checkpoint},greedy=false,seed=1")
    one = run_policy(kth, sampled, ClusterConfig(slots=None)).start
    np.testing.assert_array_equal(one, run_policy(kth, sampled, ClusterConfig()).start)


def test_missing_checkpoint_and_conservative_are_refused(kth) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        run_policy(kth, make_policy("jobscore:nowhere.pt"), ClusterConfig(slots=None))
    with pytest.raises(Exception, match="conservative"):
        make_policy("jobscore+conservative:nowhere.pt")


def test_the_shipped_network_still_gives_its_recorded_validation() -> None:
    """``jobscore-kth`` re-validated with today's features and engine: the windows its spec's
    training config names, every discipline it was selected under, the figures it recorded
    when ``best.pt`` was written (a change of features or discipline that alters its picks
    fails here, where the shipped specs' small cuts never queue a job)."""
    net, spec = load_network(shipped("jobscore-kth"))
    config = build(JobScoreConfig, spec["train_config"])
    _, val, _ = make_data(config)
    engines = {
        q: PickEngine.for_jobsets(val, replace(config.pick(), queue=q)) for q in spec["validation"]
    }
    assert validate(net, engines, config.objective) == pytest.approx(spec["validation"], rel=1e-9)
