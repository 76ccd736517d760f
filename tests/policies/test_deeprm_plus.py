"""DeepRM_Plus's two-stage trainer (Guo et al.): cloning then REINFORCE, end to end, resumed, from
the CLI, and its configs."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import polars as pl
import pytest
import torch

from schedlab.errors import SchedlabError
from schedlab.jobset import JobSet
from schedlab.params import build, flat, updated
from schedlab.policies.deeprm import (
    CheckpointError,
    DeepRMPolicy,
    load_network,
    read_checkpoint,
)
from schedlab.policies.deeprm_plus import (
    DeepRMPlusConfig,
    train,
)
from schedlab.policies.reinforce import TrainConfig
from schedlab.policies.reinforce import train as reinforce_train
from schedlab.policies.reinforce_config import file_parts
from schedlab.policies.training import config_changes
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from tests.cli_helpers import options, resume_to_three_iterations, run_ok
from tests.strategies import deeprm_jobset

TIMING = ("rollout_s", "update_s", "eval_s")


# -- the trainer -----------------------------------------------------------------------------
GEOMETRY = dict(slots=3, horizon=8, backlog=8)
"""The small cluster image of every run here (an initial checkpoint must match it)."""
SMALL = dict(workload="deeprm", window=15, rollouts=3, **GEOMETRY)
"""The workload, rollouts and image of the trainer's runs here, by the API and by the CLI."""

TINY = build(
    DeepRMPlusConfig,
    dict(
        **SMALL,
        load=1.0,
        n_jobsets=3,
        iterations=3,
        eval_jobsets=3,
        eval_every=2,
        checkpoint_every=1,
        imitation_jobsets=20,
        imitation_epochs=2,
        imitation_threshold=0.99,
        seed=2,
    ),
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("plus")
    result = train(TINY, out, progress=False, report=True)
    return out, result


def test_tiny_run_end_to_end(run_dir) -> None:
    out, result = run_dir
    files = (
        "imitation.pt",
        "imitation.csv",
        "imitation.json",
        "best.pt",
        "final.pt",
        "last.pt",
        "curve.csv",
        "config.json",
        "deeprm_plus.json",
    )
    for name in files:
        assert (out / name).is_file(), name
    assert result.curve.height == 3
    summary = json.loads((out / "imitation.json").read_text())
    assert summary["expert"] == "sjf"
    assert summary["distinct_pairs"] > 0
    assert 0 <= summary["test_accuracy"] <= 1
    assert pl.read_csv(out / "imitation.csv").height == summary["epochs"] <= 2
    spec = json.loads((out / "config.json").read_text())
    assert spec["network"] == "cnn-plus"
    assert spec["train_config"]["init"].endswith("imitation.pt")
    assert result.baselines["initial"] > 0  # the cloned policy's validation slowdown


def test_cli_train_resume_report_then_simulate_by_name(tmp_path) -> None:
    out = tmp_path / "run"
    expert = "tetris:knob=0.5"
    settings = options(
        **SMALL,
        load="100%",
        jobsets=3,
        iterations=2,
        eval_jobsets=2,
        imitation_jobsets=10,
        imitation_epochs=1,
        expert=expert,
    )
    output = run_ok("train", "deeprm-plus", *settings, "-o", str(out))
    assert "trained deeprm-plus" in output
    assert (out / "report.html").is_file()
    assert json.loads((out / "imitation.json").read_text())["expert"] == expert
    resume_to_three_iterations("deeprm-plus", out)
    assert pl.read_csv(out / "curve.csv").height == 3
    jobs = tmp_path / "jobs.parquet"
    deeprm_jobset(1.0, n_jobsets=2, seed=9).write_parquet(jobs)
    run_ok(
        "simulate",
        str(jobs),
        "--policy",
        f"deeprm-plus:{out}",
        *options(slots=3, horizon=8),
        "-o",
        str(tmp_path / "res.parquet"),
    )
    labels = pl.read_parquet(tmp_path / "res.parquet")["policy"].unique().to_list()
    assert labels == [f"deeprm-plus:{out}"]


def test_training_starts_from_the_cloned_weights(tmp_path) -> None:
    out = tmp_path / "a"
    config = updated(TINY, iterations=1, lr=0.0)  # no learning: the network stays the clone
    train(config, out, progress=False, report=False)
    cloned, _ = load_network(out / "imitation.pt")
    final, _ = load_network(out / "final.pt")
    for (k, a), b in zip(cloned.state_dict().items(), final.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=k)


def test_checkpoints_load_with_weights_only_and_act(run_dir) -> None:
    out, _ = run_dir
    for name in ("best.pt", "imitation.pt"):
        payload = torch.load(out / name, map_location="cpu", weights_only=True)
        assert payload["format"] == "schedlab.deeprm"
        policy = DeepRMPolicy(checkpoint=str(out / name), greedy=True)
        jobset = deeprm_jobset(1.0, n_jobsets=2, seed=4)
        engine = BatchedEngine.from_jobset(
            jobset, ClusterConfig(slots=3, horizon=8, backlog_view=8)
        )
        obs, mask = engine.observe(policy.view), engine.action_mask()
        actions = policy.act_batch(obs, mask=mask)
        assert mask[np.arange(actions.size), actions].all()


def test_resume_continues_and_refuses_another_config(run_dir, tmp_path) -> None:
    out = tmp_path / "r"
    a = train(TINY, out, progress=False, report=False)
    with pytest.raises(SchedlabError, match="already holds"):
        train(TINY, out, progress=False, report=False)
    with pytest.raises(SchedlabError, match="different config"):
        train(updated(TINY, lr=0.5), out, resume=True, progress=False, report=False)
    b = train(updated(TINY, iterations=4), out, resume=True, progress=False, report=False)
    assert b.curve.height == 4
    assert a.curve.drop(TIMING).equals(b.curve.drop(TIMING).head(3))


def test_without_imitation_starts_from_random_weights(tmp_path) -> None:
    result = train(
        updated(TINY, imitation=False, iterations=1), tmp_path, progress=False, report=False
    )
    assert not (tmp_path / "imitation.pt").exists()
    assert json.loads((tmp_path / "config.json").read_text())["train_config"]["init"] == ""
    assert result.curve.height == 1


def test_rate_replaces_the_load() -> None:
    config = build(DeepRMPlusConfig, {"rate": 0.7})
    assert config.offered_load() == pytest.approx(1.2915)
    assert config.reinforce_config().load == pytest.approx(1.2915)
    assert build(DeepRMPlusConfig, {"load": 0.9}).offered_load() == 0.9
    rl = asdict(TINY.reinforce_config())
    assert all(rl[k] == v for k, v in flat(TINY).items() if k in rl and k not in {"load", "init"})


def test_jobsets_from_a_file_are_split_without_overlap(tmp_path) -> None:
    path = tmp_path / "jobs.parquet"
    deeprm_jobset(1.0, n_jobsets=12, seed=8).write_parquet(path)
    config = updated(
        TINY, jobset_file=str(path), eval_jobsets=3, n_jobsets=3, imitation_jobsets=4, iterations=1
    )
    parts = file_parts(path, config.rl.seed, [3, 3, 4])
    ids = [set(p.jobset_ids) for p in parts]
    assert [len(i) for i in ids] == [3, 3, 4, 2]
    assert set().union(*ids) == set(range(12))
    assert file_parts(path, config.rl.seed, [3, 3, 4])[1].jobs.equals(parts[1].jobs)
    train(config, tmp_path / "run", progress=False, report=False)
    test_part = JobSet.read_parquet(tmp_path / "run" / "test-jobsets.parquet")
    assert set(test_part.jobset_ids) == ids[3]
    with pytest.raises(SchedlabError, match="12 non-empty jobsets"):
        file_parts(path, 0, [10, 10])


def test_resume_accepts_a_config_saved_before_a_field_existed() -> None:
    saved = json.loads(json.dumps(flat(TINY)))
    del saved["jobset_file"]
    assert config_changes(saved, TINY, budget="iterations") == []
    changed = updated(TINY, jobset_file="x.parquet")
    assert config_changes(saved, changed, budget="iterations") == ["jobset_file"]
    assert config_changes(saved, updated(TINY, iterations=99), budget="iterations") == []


def test_init_checkpoint_must_match_network_and_geometry(run_dir, tmp_path) -> None:
    out, _ = run_dir
    init = str(out / "best.pt")
    config = TrainConfig(
        n_jobsets=2, rollouts=2, iterations=1, eval_jobsets=2, **GEOMETRY, init=init
    )
    with pytest.raises(CheckpointError, match="'cnn-plus' network"):
        reinforce_train(config, tmp_path, progress=False, report=False)
    spec, _ = read_checkpoint(out / "best.pt")
    assert spec["geometry"]["slots"] == 3
