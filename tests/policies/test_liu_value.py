"""Liu's value networks (RL-LSFC, RL-FC), their trainer and the policy (ICPP'20, §4)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from schedlab.errors import SchedlabError
from schedlab.evaluation.multicluster import per_episode
from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.check import check_policy
from schedlab.policies.deeprm import CheckpointError
from schedlab.policies.liu_baselines import MAF
from schedlab.policies.liu_knowledge import Decisions, KnowledgeBuffer
from schedlab.policies.liu_networks import FC, LSFC, LiuValuePolicy, best_actions
from schedlab.policies.liu_value import train
from schedlab.policies.liu_value_config import LiuTrainConfig
from schedlab.policies.shipped import shipped
from schedlab.policies.training import STATE, config_changes
from schedlab.registry import make_policy
from schedlab.reports.liu import report_training
from schedlab.simulator.multicluster.views import LiuState
from schedlab.simulator.run import simulate
from tests.cli_helpers import options, run_fail, run_ok

CHECKPOINTS = Path(__file__).resolve().parents[2] / "policies" / "checkpoints"
TINY = {
    "episodes": 4,
    "envs": 2,
    "batch": 64,
    "buffer": 500,
    "eval_episodes": 2,
    "eval_every": 2,
    "checkpoint_every": 2,
    "workload_params": {"n_jobs": 40},
    "lstm": 8,
}


def test_networks_estimate_every_cluster() -> None:
    gen = torch.Generator().manual_seed(12)
    hist, clusters = torch.rand(3, 5, 105, generator=gen), torch.rand(3, 5, 5, generator=gen)
    job = torch.rand(7, 64, generator=gen)
    env = torch.tensor([0, 0, 1, 2, 2, 2, 1])
    with torch.random.fork_rng():  # the networks' initialisation, independent of earlier tests
        torch.manual_seed(12)
        assert LSFC(lstm=8).forward(hist, clusters, job, env).shape == (7, 3, 5)
        assert FC().forward(hist, clusters, job, env).shape == (7, 1, 5)
        lsfc = LSFC(lstm=8)
    alone = lsfc(hist[2:3], clusters[2:3], job[3:4])
    # batched and alone differ by float32 rounding only (outputs ~1e-3..1e-1, so atol too)
    np.testing.assert_allclose(
        lsfc(hist, clusters, job, env)[3:4].detach(), alone.detach(), rtol=1e-5, atol=1e-6
    )


class _Fixed(torch.nn.Module):
    """Returns preset values per job row: ``(J, 1, C)``."""

    def __init__(self, values: np.ndarray) -> None:
        super().__init__()
        self.values = torch.tensor(values, dtype=torch.float32)

    def forward(self, history, clusters, job, env):
        return self.values[:, None, :]


def test_best_actions_take_the_best_job_and_cluster_of_each_buffer() -> None:
    valid = np.array([[True, True, False], [True, False, False]])
    state = LiuState(
        envs=np.arange(2),
        history=np.zeros((2, 2, 105), np.float32),
        clusters=np.zeros((2, 2, 5), np.float32),
        jobs=np.zeros((2, 3, 28), np.float32),
        valid=valid,
        rows=np.where(valid, 0, -1),
    )
    values = np.array([[1.0, 2.0], [3.0, 0.0], [5.0, 5.0]])  # rows: (0,0), (0,1), (1,0)
    actions, table = best_actions(_Fixed(values), state, torch.ones(1), slots=3)
    assert actions.tolist() == [1 + 0 * 3 + 1, 1 + 0 * 3 + 0]  # job 1 on cluster 0; tie: cl. 0
    assert np.isinf(table[0, 2]).all()
    assert table[1, 0].tolist() == [5.0, 5.0]


def test_knowledge_buffer_keeps_the_most_recent_decisions() -> None:
    buf = KnowledgeBuffer(5, 2, 15, 28)

    def batch(first: int, n: int) -> Decisions:
        ids = np.arange(first, first + n)
        return Decisions(
            np.zeros((n, 2, 15), np.float32),
            np.zeros((n, 2, 5), np.float32),
            np.zeros((n, 28), np.float32),
            ids,
            np.repeat(ids[:, None], 3, 1).astype(float),
        )

    buf.add(batch(0, 3))
    buf.add(batch(3, 4))
    assert buf.size == 5
    assert sorted(buf.cluster.tolist()) == [2, 3, 4, 5, 6]
    sample = buf.sample(50, np.random.default_rng(0))
    assert set(sample.cluster.tolist()) <= {2, 3, 4, 5, 6}
    np.testing.assert_array_equal(sample.values[:, 0], sample.cluster)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("liu") / "run"
    config = LiuTrainConfig(**TINY)
    result = train(config, out, progress=False)
    assert report_training(result, asdict(config)) == out / "report.md"
    assert "best validation s_log" in result.summary()
    assert result.selection.higher_is_better
    assert set(result.baselines) == {"liu-ran", "liu-rr", "liu-maf", "initial"}
    return out


def test_training_writes_a_run_directory(trained: Path) -> None:
    for name in (
        "config.json",
        "curve.csv",
        "baselines.json",
        "best.pt",
        "final.pt",
        "last.pt",
        "buffer.pt",
        "report.md",
        "learning_curve.png",
    ):
        assert (trained / name).is_file(), name
    payload = torch.load(trained / "best.pt", weights_only=True)
    assert payload["format"] == "schedlab.liu"
    spec = json.loads(payload["spec"])
    assert spec["network"] == "lsfc"
    assert spec["n_clusters"] == 5
    assert spec["history"] == 105
    assert spec["train_config"]["episodes"] == 4
    baselines = json.loads((trained / "baselines.json").read_text())
    assert set(baselines) == {"liu-ran", "liu-rr", "liu-maf", "initial"}
    curve = (trained / "curve.csv").read_text().splitlines()
    assert curve[0].startswith("episode,epsilon,lr,loss")
    assert len(curve) == 3


def test_trained_policy_acts_through_simulate_and_passes_the_check(trained: Path) -> None:
    policy = LiuValuePolicy(checkpoint=str(trained))
    assert policy.name == "rl-lsfc"
    check_policy(policy)
    gen = LiuMultiClusterGenerator(n_jobs=60)
    js = gen.generate_rates([gen.natural_rate()], n_jobsets=2, seed=1)
    pe = per_episode(simulate(js, [policy]))
    assert pe.height == 2
    assert (pe.get_column("n_jobs") == 60).all()


def test_trained_policy_is_made_by_name_with_a_label(trained: Path) -> None:
    policy = make_policy(f"liu-rl:{trained / 'best.pt'},label=RL-LSFC")
    assert isinstance(policy, LiuValuePolicy)
    assert policy.name == "RL-LSFC"


def test_resume_continues_and_refuses_another_config(trained: Path, tmp_path: Path) -> None:
    with pytest.raises(SchedlabError, match="already holds a training run"):
        train(LiuTrainConfig(**TINY), trained, progress=False)
    run = tmp_path / "run"
    train(LiuTrainConfig(**TINY), run, progress=False)
    more = train(LiuTrainConfig(**{**TINY, "episodes": 6}), run, resume=True, progress=False)
    assert more.curve.get_column("episode").to_list() == [2, 4, 6]
    with pytest.raises(SchedlabError, match=r"different config \(\['seed'\]\)"):
        train(LiuTrainConfig(**{**TINY, "seed": 1}), run, resume=True, progress=False)


def test_rl_fc_trains_on_the_weighted_value(tmp_path: Path) -> None:
    cfg = LiuTrainConfig(**{**TINY, "episodes": 2, "network": "fc", "label": "rl-fc"})
    train(cfg, tmp_path / "fc", progress=False)
    policy = LiuValuePolicy(checkpoint=str(tmp_path / "fc" / "final.pt"))
    assert policy.name == "rl-fc"
    assert policy.spec["network"] == "fc"
    assert policy._model()[0].scale.shape == (1,)


def test_bad_checkpoints_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        LiuValuePolicy(checkpoint=str(tmp_path / "none.pt")).spec  # noqa: B018
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        LiuValuePolicy(checkpoint=str(bad)).spec  # noqa: B018


SHIPPED = sorted(p.parent.name for p in CHECKPOINTS.glob("liu-*/best.pt"))


def test_rl_lsfc_is_shipped() -> None:
    assert "liu-lsfc" in SHIPPED


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_checkpoints_load_match_their_readme_and_beat_maf(name: str) -> None:
    path = CHECKPOINTS / name / "best.pt"
    readme = (CHECKPOINTS / name / "README.md").read_text()
    assert hashlib.sha256(path.read_bytes()).hexdigest() in readme
    payload = torch.load(path, weights_only=True)
    assert payload["format"] == "schedlab.liu"
    episodes = json.loads(payload["spec"])["episode"]
    assert f"episode {episodes}" in readme
    gen = LiuMultiClusterGenerator(n_jobs=500)
    js = gen.generate_rates([gen.natural_rate()], n_jobsets=2, seed=77)
    policy = make_policy(f"liu-rl:{name}")
    pe = per_episode(simulate(js, [policy, MAF()]))
    rl = pe.filter(pl.col("policy") == policy.name).sort("jobset")
    maf = pe.filter(pl.col("policy") == "liu-maf").sort("jobset")
    assert (rl["tmdl"].to_numpy() < maf["tmdl"].to_numpy()).all()


def test_schedlab_train_liu_trains_resumes_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "run"
    tiny = [
        *options(envs=2, batch=64, buffer=500, eval_episodes=2, eval_every=2, checkpoint_every=2),
        "-p",
        "n_jobs=40",
        *options(lstm=8),
    ]
    text = run_ok(
        "train", "liu", *tiny, "--episodes", "2", "--weights", "1", "0.5", "2.5", "-o", str(out)
    )
    assert "trained liu in" in text
    assert "best validation s_log" in text
    assert f"report: {out / 'report.md'}" in text
    saved = json.loads((out / "config.json").read_text())["train_config"]
    assert saved["weights"] == [1.0, 0.5, 2.5]
    assert saved["workload_params"] == {"n_jobs": 40}
    run_ok("train", "liu", "--episodes", "4", "--resume", "-o", str(out))
    assert pl.read_csv(out / "curve.csv")["episode"].to_list() == [2, 4]
    assert "rl-lsfc (best, episode" in (out / "report.md").read_text()
    assert "--weights FLOAT..." in run_ok("train", "liu", "--help")


def test_a_run_saved_with_settings_since_renamed_is_not_resumed(tmp_path: Path) -> None:
    """The shipped RL-LSFC was trained when one ``p_m`` and one ``p_psi`` set both events' P
    (now ValueParams' four fields): resuming such a run is refused by name, by the API and by
    the CLI, rather than continued with the defaults in their place."""
    checkpoint = shipped("liu-lsfc")
    assert checkpoint is not None
    saved = json.loads((checkpoint.parent / "config.json").read_text())["train_config"]
    assert {"p_m", "p_psi"} <= set(config_changes(saved, LiuTrainConfig(), budget="episodes"))
    (tmp_path / "config.json").write_text(json.dumps({"train_config": saved}))
    (tmp_path / STATE).write_bytes(b"")
    output = run_fail("train", "liu", "-o", str(tmp_path), "--resume")
    assert "trained with settings trainer 'liu' no longer has (p_m, p_psi)" in output
