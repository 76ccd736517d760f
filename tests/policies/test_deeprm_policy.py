"""A trained DeepRM policy behind the Policy protocol: checkpoints, errors, the registry and
evaluation next to the heuristics (batched engine, same results schema)."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest
import torch

from schedlab import registry
from schedlab.policies.deeprm import CheckpointError, DeepRMPolicy, load_network, save_checkpoint
from schedlab.policies.networks import make_network
from schedlab.policies.reinforce import TrainConfig, train
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate
from schedlab.simulator.views.deeprm_image import ObsGeometry
from schedlab.simulator.views.queue import QueueView
from tests.cli_helpers import options, resume_to_three_iterations, run_ok
from tests.policy_helpers import StatelessPolicy
from tests.strategies import deeprm_jobset

CONFIG = ClusterConfig(slots=5, horizon=10, backlog_view=20)
GEOMETRY = dict(slots=5, horizon=10, backlog=20)
"""The trainers' settings for the cluster of ``CONFIG``."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    config = TrainConfig(n_jobsets=4, rollouts=4, iterations=2, eval_jobsets=3, **GEOMETRY)
    train(config, out, progress=False, report=False)
    return out


@pytest.fixture(scope="module")
def jobset():
    return deeprm_jobset(1.1, n_jobsets=5, seed=21)


def test_policy_acts_like_its_network_greedily(run_dir, jobset) -> None:
    policy = DeepRMPolicy(checkpoint=str(run_dir / "best.pt"), greedy=True)
    net, spec = load_network(run_dir / "best.pt")
    from schedlab.simulator.cluster.batched import BatchedEngine

    engine = BatchedEngine.from_jobset(jobset, CONFIG)
    obs, mask = engine.observe(policy.view), engine.action_mask()
    with torch.no_grad():
        logits = net(torch.from_numpy(obs.dense())).numpy()
    expected = np.where(mask, logits, -np.inf).argmax(axis=1)
    np.testing.assert_array_equal(policy.act_batch(obs, mask=mask), expected)
    assert spec["geometry"]["slots"] == 5


def quiet(fn, *args, **kwargs):
    """Call ``fn`` ignoring the time-limit warning (an undertrained policy may starve jobs)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "policy .* time-limit fallback", RuntimeWarning)
        return fn(*args, **kwargs)


def test_simulate_next_to_heuristics_same_schema(run_dir, jobset) -> None:
    spec = f"deeprm:{run_dir / 'best.pt'},label=deeprm-test"
    policies = [registry.make_policy(spec), registry.make_policy("sjf")]
    res = quiet(simulate, jobset, policies, CONFIG)
    table = res.table
    assert res.policies == ["deeprm-test", "sjf"]
    learned = table.filter(table["policy"] == "deeprm-test")
    assert learned.height == len(jobset)
    assert (learned["start"] >= learned["arrival"]).all()
    assert learned.schema == table.filter(table["policy"] == "sjf").schema
    stats = res.meta["agent_stats"]["deeprm-test"]
    assert {"time_steps", "withholding_steps", "withheld_lengths", "forced_jobs"} <= set(stats)
    assert res.meta["policies"]["deeprm-test"]["checkpoint"].endswith("best.pt")


def test_batched_and_step_engines_give_the_same_schedule(run_dir, jobset) -> None:
    policy = DeepRMPolicy(checkpoint=str(run_dir), greedy=True)  # a run dir: its best.pt
    batched = quiet(schedule, jobset, policy, CONFIG)
    step = schedule(jobset, policy, CONFIG, engine="step")
    np.testing.assert_array_equal(batched, step)


def test_sampling_policy_is_reproducible(run_dir, jobset) -> None:
    a = quiet(schedule, jobset, DeepRMPolicy(checkpoint=str(run_dir), greedy=False), CONFIG)
    b = quiet(schedule, jobset, DeepRMPolicy(checkpoint=str(run_dir), greedy=False), CONFIG)
    np.testing.assert_array_equal(a, b)


class AlwaysVoid(StatelessPolicy):
    """A batched agent that never allocates: the time limit must finish its jobs."""

    name = "void"
    models = frozenset({"cluster"})
    view = QueueView()

    def act_batch(self, obs, *, mask) -> np.ndarray:
        return np.zeros(obs.envs.size, dtype=np.int64)


def test_a_starving_policy_is_finished_counted_and_warned_about(jobset) -> None:
    with pytest.warns(RuntimeWarning, match=f"{len(jobset)} jobs in 5 jobsets .* time-limit"):
        res = simulate(jobset, [AlwaysVoid()], CONFIG)
    assert res.meta["agent_stats"]["void"]["forced_jobs"] == len(jobset)
    assert (res.table["start"] >= res.table["arrival"]).all()
    step = schedule(jobset, AlwaysVoid(), CONFIG, engine="step")
    np.testing.assert_array_equal(res.table["start"].to_numpy(), step)


def test_policy_pickles_and_reports_params(run_dir) -> None:
    policy = DeepRMPolicy(checkpoint=str(run_dir / "best.pt"))
    policy.spec  # noqa: B018 (loads the network)
    clone = pickle.loads(pickle.dumps(policy))
    params = {"checkpoint": str(run_dir / "best.pt"), "greedy": False, "seed": 0, "queue": "greedy"}
    assert clone.get_params() == params


def test_spec_with_a_bare_path_and_existing_spec_rules(run_dir) -> None:
    assert registry.parse_spec("tetris:knob=0.3") == ("tetris", {"knob": 0.3})
    assert registry.parse_spec("deeprm:a/b.pt,greedy=false", positional="checkpoint") == (
        "deeprm",
        {"checkpoint": "a/b.pt", "greedy": False},
    )
    with pytest.raises(ValueError, match="expected key=value"):
        registry.make_policy("tetris:0.3")
    policy = registry.make_policy(f"deeprm:{run_dir / 'best.pt'}")
    assert policy.name == f"deeprm:{run_dir / 'best.pt'}"


def test_missing_corrupt_and_foreign_checkpoints(tmp_path) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_network(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_network(bad)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    with pytest.raises(CheckpointError, match=r"expected a schedlab\.deeprm checkpoint"):
        load_network(foreign)
    evil = tmp_path / "evil.pt"
    torch.save({"format": "schedlab.deeprm", "obj": object()}, evil)  # needs full unpickling
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_network(evil)


def test_mismatched_weights_and_geometry(tmp_path, jobset) -> None:
    g = ObsGeometry(cap_units=(10, 10), slots=5, horizon=10, backlog_view=20)
    spec = {"network": "mlp", "network_kwargs": {"hidden": 20}, "geometry": g.to_json()}
    path = tmp_path / "p.pt"
    save_checkpoint(path, make_network("mlp", g, hidden=8), spec)
    with pytest.raises(CheckpointError, match="weights do not match"):
        load_network(path)
    save_checkpoint(path, make_network("mlp", g, hidden=20), spec)
    policy = DeepRMPolicy(checkpoint=str(path))
    refused = "trained on 5 slots but this cluster has 10; use --slots 5"  # before allocating
    with pytest.raises(ValueError, match=refused):
        schedule(jobset, policy, ClusterConfig(slots=10, horizon=20))


def test_cli_train_then_simulate(tmp_path) -> None:
    out = tmp_path / "run"
    settings = options(load="90%", jobsets=3, rollouts=3, iterations=2, eval_jobsets=2, **GEOMETRY)
    output = run_ok("train", "deeprm", *settings, "-o", str(out))
    assert "best validation slowdown" in output
    assert json.loads((out / "config.json").read_text())["train_config"]["load"] == 0.9
    resume_to_three_iterations("deeprm", out)
    assert (out / "curve.csv").read_text().count("\n") == 4
    jobs = tmp_path / "jobs.parquet"
    deeprm_jobset(0.9, n_jobsets=3, seed=9).write_parquet(jobs)
    policies = ("--policy", f"deeprm:{out}", "--policy", "tetris")
    res = str(tmp_path / "res.parquet")
    quiet(run_ok, "simulate", str(jobs), *policies, *options(slots=5, horizon=10), "-o", res)


def test_withheld_jobs_section_of_the_general_report(run_dir, jobset) -> None:
    from schedlab.reports import withholding

    policies = [DeepRMPolicy(checkpoint=str(run_dir)), registry.make_policy("tetris")]
    res = quiet(simulate, jobset, policies, CONFIG)
    table = withholding.withholding_table(res)
    assert table["policy"].to_list() == ["deeprm"]  # per load: one load here
    assert table["load"].to_list() == [1.1]
    assert 0 <= table["withholding_share"][0] <= 1
    blocks = withholding.agent_blocks(res)
    assert blocks[0] == ("h2", "Learned policies: withheld jobs")
    assert set(withholding.agent_figures(res)) == {"withheld_lengths.png"}
    no_agents = simulate(jobset, [registry.make_policy("sjf")], CONFIG)
    assert withholding.agent_blocks(no_agents) == []
    assert "agent_stats" not in no_agents.meta
