"""The public policy check over every registered policy, a new heuristic added by one file and
one registration, and the check failing on broken policies."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab import registry
from schedlab.policies.check import check_policy
from schedlab.policies.heuristics import SJF
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy
from schedlab.simulator.views.queue import QueueView
from tests.policy_helpers import StatelessPolicy
from tests.strategies import deeprm_jobset

SHIPPED = {
    "deeprm": "deeprm:deeprm-0.7",
    "deeprm-plus": "deeprm-plus:deeprm-plus-1.4",
    "liu-rl": "liu-rl:liu-lsfc",
    "callable": "callable:tests.policies.example_agent:last_valid",
}
"""A spec for every registered policy that needs a parameter (learned: a shipped checkpoint)."""


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An untrained MaskablePPO model of ``schedlab/DeepRM-v0`` (skip without the rl extra)."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from schedlab.simulator.env import ClusterEnv

    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    env = ClusterEnv(deeprm_jobset(0.7, n_jobsets=2, seed=0))
    sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0).save(path)
    return f"sb3:{path},deterministic=false"


@pytest.fixture(scope="module")
def sb3_pick_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An untrained MaskablePPO model of the pick environment (skip without the rl extra)."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from schedlab.simulator.pick.env import PickEnv

    path = tmp_path_factory.mktemp("sb3-pick") / "model.zip"
    env = PickEnv(deeprm_jobset(1.1, n_jobsets=2, seed=0), visible=8)
    sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0).save(path)
    return f"sb3-pick+easy:{path}"


@pytest.fixture(scope="module")
def jobscore_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An untrained per-job scoring network under EASY."""
    from schedlab.policies.jobscore import JobScoreNet, network_spec, save_network
    from schedlab.simulator.pick.features import N_FEATURES

    net = JobScoreNet(N_FEATURES)
    path = tmp_path_factory.mktemp("jobscore") / "net.pt"
    save_network(path, net, network_spec(net, (32, 16, 8), 32))
    return f"jobscore+easy:{path}"


@pytest.mark.parametrize("name", registry.policies.names())
def test_every_registered_policy_conforms(name: str, request: pytest.FixtureRequest) -> None:
    fixtures = {"sb3": "sb3_model", "sb3-pick": "sb3_pick_model", "jobscore": "jobscore_model"}
    spec = request.getfixturevalue(fixtures[name]) if name in fixtures else SHIPPED.get(name, name)
    check_policy(registry.make_policy(spec))


@pytest.mark.parametrize("placement", ["bestfit", "worstfit", "align"])
def test_placement_rules_conform(placement: str) -> None:
    check_policy(registry.make_policy(f"tetris+{placement}"))


def test_a_new_heuristic_is_one_file_and_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    policies = registry.policies
    monkeypatch.setattr(policies, "_entries", dict(policies._entries))  # undone after
    policies.register(
        "ljf", "tests.policies.example_heuristic:LJF", "longest job first", tags=("heuristic",)
    )
    ljf = registry.make_policy("ljf")
    check_policy(ljf)
    js = deeprm_jobset(1.3, n_jobsets=3, seed=1)
    for config in (ClusterConfig(), ClusterConfig(machines=2), ClusterConfig(slots=None)):
        engines = ("fast", "step") if config.slots is None else ("fast", "step", "batched")
        runs = [run_policy(js, ljf, config, engine=e).start for e in engines]
        for other in runs[1:]:
            np.testing.assert_array_equal(other, runs[0])
    # it really is longest-first: the opposite order to SJF on a congested jobset
    sjf = run_policy(js, SJF(), ClusterConfig()).start
    assert not np.array_equal(runs[0], sjf)


class _IgnoresMask(StatelessPolicy):
    name = "ignores-mask"
    models = frozenset({"cluster"})
    view = QueueView()

    def act_batch(self, obs, *, mask) -> np.ndarray:
        return np.full(obs.envs.size, mask.shape[1] - 1)  # the last action, valid or not


class _Mutates(_IgnoresMask):
    name = "mutates"

    def act_batch(self, obs, *, mask) -> np.ndarray:
        obs.now[obs.envs] += 0  # a write through a view is fine ...
        obs.view[obs.envs[:1]] = -1  # ... changing the observation is not
        return np.zeros(obs.envs.size, dtype=np.int64)


@pytest.mark.parametrize(
    ("policy", "message"),
    [(_IgnoresMask(), "outside the mask"), (_Mutates(), "changed its observation")],
)
def test_check_policy_fails_on_broken_policies(policy: object, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_policy(policy)
