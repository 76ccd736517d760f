"""REINFORCE for DeepRM: returns, baseline and padding by hand, the gradient's sign, learning on
tiny settings, determinism and exact resumption."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
import torch

from schedlab.errors import SchedlabError
from schedlab.policies.networks import Logits, make_network
from schedlab.policies.policy_gradient import (
    Rollout,
    advantages,
    collect,
    discounted_returns,
    policy_gradient_step,
    time_baseline,
)
from schedlab.policies.reinforce import TrainConfig, train
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry, SparseObs
from tests.strategies import jobset_from_rows

TINY = TrainConfig(
    n_jobsets=4,
    rollouts=6,
    iterations=4,
    eval_jobsets=3,
    eval_every=2,
    checkpoint_every=2,
    slots=5,
    horizon=10,
    backlog=20,
    load=0.9,
    seed=3,
)
TIMING = ("rollout_s", "update_s", "eval_s")


def test_discounted_returns_by_hand() -> None:
    rewards = np.array([[1.0, -1.0], [2.0, -2.0], [0.0, -4.0]])
    np.testing.assert_allclose(discounted_returns(rewards, 1.0), [[3, -7], [2, -6], [0, -4]])
    np.testing.assert_allclose(
        discounted_returns(rewards, 0.5), [[2.0, -3.0], [2.0, -4.0], [0.0, -4.0]]
    )


def test_baseline_averages_rollouts_of_the_same_jobset_with_zero_padding() -> None:
    # envs 0, 1 replay jobset 0; envs 2, 3 replay jobset 1. Env 1 ended after one decision,
    # env 3 after two: their later returns are zero padding.
    returns = np.array(
        [
            [-6.0, -2.0, -9.0, -3.0],
            [-4.0, 0.0, -5.0, -1.0],
            [-1.0, 0.0, -2.0, 0.0],
        ]
    )
    b = time_baseline(returns, rollouts=2)
    expected = np.array(
        [
            [-4.0, -4.0, -6.0, -6.0],
            [-2.0, -2.0, -3.0, -3.0],
            [-0.5, -0.5, -1.0, -1.0],
        ]
    )
    np.testing.assert_allclose(b, expected)


def test_advantages_of_recorded_decisions_only() -> None:
    rewards = np.array([[-1.0, -3.0], [-1.0, 0.0]])  # env 1 ended after its first decision
    batch = Rollout(
        None, None, np.zeros(3, np.int64), np.array([0, 1, 0]), np.array([0, 0, 1]), rewards
    )
    # returns: env 0: [-2, -1], env 1: [-3, 0]; baseline (N = 2): [-2.5, -0.5]
    np.testing.assert_allclose(advantages(batch, 1.0, rollouts=2), [0.5, -0.5, -0.5])


def _same_obs_batch(geometry: ObsGeometry, actions: list[int]) -> tuple[SparseObs, np.ndarray]:
    n = len(actions)
    terms = np.zeros((n, geometry.n_terms), dtype=np.int32)
    terms[:, geometry.n_resources * geometry.horizon] = geometry.bases[2] + 3  # one slot job
    weights = np.ones((n, geometry.n_terms), dtype=np.float32)
    mask = np.ones((n, geometry.n_actions), dtype=bool)
    return SparseObs(terms, weights, geometry), mask


def test_gradient_step_raises_the_probability_of_positive_advantage_actions() -> None:
    g = ObsGeometry(cap_units=(10, 10), slots=3, horizon=5, backlog_view=10)
    torch.manual_seed(0)
    net = make_network("mlp", g)
    logits_fn = Logits(net, g)
    obs, mask = _same_obs_batch(g, [1, 2, 1, 2])
    batch = Rollout(
        obs, mask, np.array([1, 2, 1, 2]), np.zeros(4, np.int64), np.arange(4), np.zeros((4, 1))
    )
    adv = np.array([1.0, -1.0, 1.0, -1.0], dtype=np.float32)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with torch.no_grad():
        before = torch.softmax(logits_fn(obs.take(slice(0, 1))), -1)[0]
    for _ in range(5):
        policy_gradient_step(logits_fn, opt, batch, adv, mask_invalid=True)
    with torch.no_grad():
        after = torch.softmax(logits_fn(obs.take(slice(0, 1))), -1)[0]
    assert after[1] > before[1]
    assert after[2] < before[2]


def test_a_toy_where_allocating_is_better_is_learned() -> None:
    """One job alone: allocating it at once (slowdown 1) beats waiting; REINFORCE learns it."""
    js = jobset_from_rows([[(0, 3, 5, 5)]] * 4)
    config = ClusterConfig(slots=2, horizon=5, backlog_view=5)
    engine = BatchedEngine.from_jobset(js, config, repeats=8)
    torch.manual_seed(1)
    geometry = DeepRMImage().geometry(engine.snapshot())
    net = make_network("mlp", geometry)
    logits_fn = Logits(net, geometry)
    opt = torch.optim.RMSprop(net.parameters(), lr=0.01, alpha=0.9)
    rng = np.random.default_rng(0)
    totals = []
    for _ in range(30):
        batch = collect(engine, logits_fn, rng, mask_invalid=True, record=True)
        totals.append(batch.rewards.sum(axis=0).mean())
        policy_gradient_step(logits_fn, opt, batch, advantages(batch, 1.0, 8), mask_invalid=True)
    assert np.mean(totals[-5:]) > np.mean(totals[:5])
    assert np.mean(totals[-5:]) > -1.2  # close to the optimum -1 (slowdown 1)


def test_short_training_improves_reward(tmp_path) -> None:
    longer = dict(n_jobsets=6, rollouts=8, iterations=25, eval_every=25, checkpoint_every=25)
    config = replace(TINY, **longer, lr=0.01, seed=0)
    result = train(config, tmp_path, progress=False, report=False)
    reward = result.curve["mean_reward"].to_numpy()
    assert reward[-5:].mean() > reward[:5].mean() + 1.0
    assert result.curve["decisions"].min() > 0


def test_same_seed_same_learning_curve(tmp_path) -> None:
    a = train(TINY, tmp_path / "a", progress=False, report=False).curve.drop(TIMING)
    b = train(TINY, tmp_path / "b", progress=False, report=False).curve.drop(TIMING)
    assert a.equals(b)
    other = train(
        TrainConfig(**{**json.loads(json.dumps(_asdict(TINY))), "seed": 4}),
        tmp_path / "c",
        progress=False,
        report=False,
    ).curve.drop(TIMING)
    assert not a.equals(other)


def _asdict(config: TrainConfig) -> dict:
    from dataclasses import asdict

    return asdict(config)


def test_resume_continues_exactly(tmp_path) -> None:
    whole = train(TINY, tmp_path / "whole", progress=False, report=False)
    half = TrainConfig(**{**_asdict(TINY), "iterations": 2})
    train(half, tmp_path / "split", progress=False, report=False)
    resumed = train(TINY, tmp_path / "split", resume=True, progress=False, report=False)
    assert resumed.curve.drop(TIMING).equals(whole.curve.drop(TIMING))
    for name in ("best.pt", "final.pt"):
        a = torch.load(tmp_path / "whole" / name, weights_only=True)["state_dict"]
        b = torch.load(tmp_path / "split" / name, weights_only=True)["state_dict"]
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_directory_is_not_overwritten(tmp_path) -> None:
    train(TinyIters(1), tmp_path, progress=False, report=False)
    with pytest.raises(SchedlabError, match="already holds a training run"):
        train(TinyIters(1), tmp_path, progress=False, report=False)
    with pytest.raises(SchedlabError, match=r"different config \(\['lr'\]\)"):
        train(TrainConfig(**{**_asdict(TinyIters(2)), "lr": 0.5}), tmp_path, resume=True)


def TinyIters(n: int) -> TrainConfig:
    return TrainConfig(**{**_asdict(TINY), "iterations": n, "checkpoint_every": 1})


def test_run_directory_contents_and_report(tmp_path) -> None:
    from schedlab.reports.learning import write_training_report

    result = train(TinyIters(2), tmp_path, progress=False)
    withholding = result.details["withholding"]  # train returns data; the caller draws the report
    write_training_report(tmp_path, result.curve, result.baselines, withholding, {})
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "config.json",
        "curve.csv",
        "curve.parquet",
        "best.pt",
        "final.pt",
        "last.pt",
        "baselines.json",
        "report.md",
        "report.html",
        "learning_curve.png",
        "withheld_lengths.png",
        "rewards.png",
    } <= names
    spec = json.loads((tmp_path / "config.json").read_text())
    assert spec["train_config"]["seed"] == TINY.seed
    assert set(spec["workload_seeds"]) == {"train", "validation"}
    curve = pl.read_csv(tmp_path / "curve.csv")
    assert curve["iteration"].to_list() == [1, 2]
    assert {"sjf", "packer", "tetris", "initial"} <= set(result.baselines)
    assert "withheld" in (tmp_path / "report.md").read_text()


def test_the_queue_discipline_reaches_the_training_environments(tmp_path) -> None:
    """``queue=strict`` trains on environments where only the first waiting job may start:
    another curve than greedy's from the same seed, and the run records it."""
    from dataclasses import replace

    greedy = train(TINY, tmp_path / "g", progress=False, report=False).curve.drop(TIMING)
    strict = train(replace(TINY, queue="strict"), tmp_path / "s", progress=False, report=False)
    assert not strict.curve.drop(TIMING).equals(greedy)
    saved = json.loads((tmp_path / "s" / "config.json").read_text())
    assert saved["train_config"]["queue"] == "strict"
