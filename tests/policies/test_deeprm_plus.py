"""DeepRM_Plus: the CNN of Table I and its sparse first layer, behaviour cloning of a heuristic
(the cloned policy reproduces SJF on held-out jobsets), the grouped update, the two-stage
trainer end to end, shipped checkpoints and experiment specs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from schedlab.errors import SchedlabError
from schedlab.evaluation.spec import load_spec
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.params import build, flat, updated
from schedlab.policies.cnn_plus import CNNPlusNet, corner_table
from schedlab.policies.deeprm import (
    CheckpointError,
    DeepRMPlusPolicy,
    DeepRMPolicy,
    load_network,
    read_checkpoint,
)
from schedlab.policies.deeprm_plus import (
    DeepRMPlusConfig,
    train,
)
from schedlab.policies.imitation import (
    ImitationError,
    agreement,
    clone,
    deduplicate,
    demonstrate,
    split,
)
from schedlab.policies.networks import Logits, make_network, unique_observations
from schedlab.policies.policy_gradient import (
    collect,
    grouped_weights,
    image_view,
    policy_gradient_step,
)
from schedlab.policies.reinforce import TrainConfig
from schedlab.policies.reinforce import train as reinforce_train
from schedlab.policies.reinforce_config import file_parts
from schedlab.policies.shipped import shipped
from schedlab.policies.training import config_changes
from schedlab.registry import make_policy
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry
from tests.strategies import deeprm_jobset, heuristic_names

ROOT = Path(__file__).resolve().parents[2]
SMALL = ClusterConfig(slots=3, horizon=8, backlog_view=8)
REFERENCE = ObsGeometry(cap_units=(10, 10))
TIMING = ("rollout_s", "update_s", "eval_s")


def _engine(jobset, config: ClusterConfig = SMALL, repeats: int = 1) -> BatchedEngine:
    return BatchedEngine.from_jobset(jobset, config, repeats=repeats)


def _random_obs(config: ClusterConfig, *, seed: int, repeats: int = 3):
    """Observations of random rollouts (with repeats) and their geometry."""
    engine = _engine(deeprm_jobset(1.2, n_jobsets=4, seed=seed), config, repeats=repeats)
    geometry = DeepRMImage().geometry(engine.snapshot())
    torch.manual_seed(seed)
    logits_fn = Logits(make_network("mlp", geometry), geometry)
    batch = collect(engine, logits_fn, np.random.default_rng(seed), mask_invalid=True, record=True)
    return batch, geometry


# -- the network ---------------------------------------------------------------------------
def test_cnn_has_the_shapes_of_table_1() -> None:
    net = make_network("cnn-plus", REFERENCE)
    assert isinstance(net, CNNPlusNet)
    x = torch.zeros(2, 1, 20, 224)
    h1 = torch.nn.functional.avg_pool2d(torch.relu(net.conv1(x)), 2)
    h2 = torch.nn.functional.avg_pool2d(torch.relu(net.conv2(h1)), 2)
    assert net.conv1(x).shape == (2, 8, 20, 224)
    assert h1.shape == (2, 8, 10, 112)
    assert h2.shape == (2, 16, 5, 56)
    assert net.fc1.in_features == 4480
    assert net.fc1.out_features == 69
    assert net(torch.zeros(3, 20, 224)).shape == (3, 11)
    assert sum(p.numel() for p in net.parameters()) == 313_383


def test_cnn_rejects_images_too_small_and_even_kernels() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        CNNPlusNet(3, 40, 5)
    with pytest.raises(ValueError, match="odd kernel"):
        CNNPlusNet(20, 40, 5, kernel=4)


def test_corners_rebuild_every_dictionary_entry() -> None:
    g = ObsGeometry(cap_units=(4, 3), slots=2, horizon=5, backlog_view=7)
    ptr, row, col, sign = corner_table(g)
    indptr, cells = g.dictionary()
    T, W = g.shape
    for e in range(g.n_entries):
        d = np.zeros((T + 1, W + 1))
        np.add.at(
            d, (row[ptr[e] : ptr[e + 1]], col[ptr[e] : ptr[e + 1]]), sign[ptr[e] : ptr[e + 1]]
        )
        image = np.zeros(T * W)
        image[cells[indptr[e] : indptr[e + 1]]] = 1
        np.testing.assert_array_equal(d.cumsum(0).cumsum(1)[:T, :W], image.reshape(T, W))


@pytest.mark.parametrize(("layout", "threads"), [("deeprm", 1), ("reshaped", 1), ("deeprm", 2)])
def test_sparse_first_layer_is_the_dense_network(layout: str, threads: int) -> None:
    """Also with the observations split over two threads (each summing its own gradient)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    batch, g = _random_obs(SMALL, seed=5)
    obs = batch.obs
    if layout == "reshaped":  # same cells, other column order: re-observe is not needed here
        g = replace(g, layout="reshaped")
        obs = type(obs)(obs.terms, obs.weights, g)
    torch.manual_seed(0)
    net = make_network("cnn-plus", g)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.3)
    grads = []
    for forward in (lambda: net(torch.from_numpy(obs.dense())), lambda: net.forward_obs(obs)):
        net.zero_grad()
        out = forward()
        (out**2).sum().backward()
        grads.append((out.detach(), [p.grad.clone() for p in net.parameters()]))
    torch.set_num_threads(previous)
    (dense, g_dense), (sparse, g_sparse) = grads
    np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-4, atol=1e-4)
    for a, b in zip(g_dense, g_sparse, strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-3 * a.abs().max())


def test_logits_evaluate_each_distinct_observation_once() -> None:
    batch, g = _random_obs(SMALL, seed=6, repeats=4)
    first, inverse = unique_observations(batch.obs)
    assert first.size < len(batch.obs)  # the 4 rollouts of a jobset start in the same state
    np.testing.assert_array_equal(batch.obs.take(first).take(inverse).terms, batch.obs.terms)
    np.testing.assert_array_equal(np.sort(np.unique(inverse)), np.arange(first.size))
    net = make_network("cnn-plus", g)
    with torch.no_grad():
        grouped = Logits(net, g)(batch.obs)
        direct = net(torch.from_numpy(batch.obs.dense()))
    np.testing.assert_allclose(grouped.numpy(), direct.numpy(), rtol=1e-4, atol=1e-5)
    masks = np.zeros((len(batch.obs), 1), dtype=bool)
    masks[0] = True
    assert unique_observations(batch.obs, extra=masks)[0].size == first.size + 1


def test_grouped_update_has_the_per_decision_gradient() -> None:
    batch, g = _random_obs(SMALL, seed=7, repeats=4)
    adv = np.random.default_rng(0).normal(size=len(batch.actions)).astype(np.float32)
    _first, counts, weights = grouped_weights(batch, adv)
    assert counts.sum() == len(batch.actions)
    np.testing.assert_allclose(weights.sum(), adv.sum(), rtol=1e-6)
    torch.manual_seed(1)
    net = make_network("cnn-plus", g)
    logits_fn = Logits(net, g)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    policy_gradient_step(logits_fn, opt, batch, adv, mask_invalid=True)
    grouped = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    logits = net(torch.from_numpy(batch.obs.dense()))
    logp = torch.log_softmax(logits.masked_fill(~torch.from_numpy(batch.mask), -torch.inf), -1)
    chosen = logp.gather(1, torch.from_numpy(batch.actions)[:, None]).squeeze(1)
    (-(chosen * torch.from_numpy(adv)).sum() / len(adv)).backward()
    for a, b in zip(grouped, (p.grad for p in net.parameters()), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-4 * b.abs().max())


# -- demonstrations --------------------------------------------------------------------------
@pytest.mark.parametrize("name", heuristic_names())
def test_replaying_the_expert_labels_gives_its_list_schedule(name: str) -> None:
    jobset = deeprm_jobset(1.3, n_jobsets=5, seed=11)
    engine = _engine(jobset)
    expert = make_policy(name)
    demos = demonstrate(engine, expert, DeepRMImage())
    replayed = engine.all_starts()
    if name != "random":  # Random draws its uniforms per decision in another order
        np.testing.assert_array_equal(replayed, schedule(jobset, expert, SMALL))
    assert demos.mask[np.arange(len(demos)), demos.actions].all()
    starts = (demos.actions > 0).sum()
    assert starts == len(jobset)  # one decision per start, the rest are voids
    assert (demos.actions == 0).any()


def test_an_expert_action_the_agent_cannot_take_is_refused() -> None:
    class Bad:
        name, view = "bad", DeepRMImage()

        def reset(self, *, seed=None) -> None:
            pass

        def act_batch(self, obs, *, mask):
            return np.where(mask.all(axis=1), 1, np.argmin(mask, axis=1))

    with pytest.raises(ImitationError, match="expert 'bad' chose action"):
        demonstrate(_engine(deeprm_jobset(1.3, n_jobsets=3, seed=1)), Bad(), DeepRMImage())


def test_duplicates_removed_and_split_nine_to_one() -> None:
    engine = _engine(deeprm_jobset(0.9, n_jobsets=6, seed=3), repeats=3)
    demos = demonstrate(engine, make_policy("sjf"), DeepRMImage())
    distinct, conflicts = deduplicate(demos)
    assert len(distinct) <= len(demos) // 3 + 1  # each jobset replayed 3 times identically
    assert conflicts == 0  # SJF's choice is a function of the image
    train_part, test_part = split(distinct, np.random.default_rng(0))
    assert len(train_part) + len(test_part) == len(distinct)
    assert len(test_part) == round(0.1 * len(distinct))
    with pytest.raises(ValueError, match="holdout"):
        split(distinct, np.random.default_rng(0), holdout=1.0)


# -- cloning SJF ---------------------------------------------------------------------------
THRESHOLD = 0.85


@pytest.fixture(scope="module")
def cloned():
    """A CNN cloned from SJF on a small cluster (M = 3, T = 8), and its result."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the trainer does: faster than 2 on a small shared machine
    torch.manual_seed(0)
    gen = DeepRMGenerator(window=20)
    engine = _engine(gen.generate(0.9, n_jobsets=200, seed=1))
    geometry = DeepRMImage().geometry(engine.snapshot())
    distinct, _ = deduplicate(demonstrate(engine, make_policy("sjf"), image_view(geometry)))
    rng = np.random.default_rng(0)
    train_part, test_part = split(distinct, rng)
    logits_fn = Logits(make_network("cnn-plus", geometry), geometry)
    result = clone(logits_fn, train_part, test_part, threshold=THRESHOLD, max_epochs=20,
                   batch_size=128, lr=3e-3, rng=rng)  # fmt: skip
    torch.set_num_threads(threads)
    return logits_fn, result, gen


def test_cloning_reaches_the_threshold_and_reports_its_curve(cloned) -> None:
    _, result, _ = cloned
    assert result.reached
    assert result.accuracy >= THRESHOLD
    curve = result.curve
    assert curve["test_accuracy"][-1] == pytest.approx(result.accuracy)
    assert curve["test_accuracy"][-1] > curve["test_accuracy"][0]
    assert (curve["samples_per_s"] > 0).all()
    assert curve.height < 20  # stopped when the threshold was reached


def test_cloned_policy_reproduces_sjf_on_held_out_jobsets(cloned) -> None:
    logits_fn, _, gen = cloned
    held_out = gen.generate(0.9, n_jobsets=20, seed=2)
    agree = agreement(logits_fn, held_out, make_policy("sjf"), SMALL)
    assert agree["decision_accuracy"] >= THRESHOLD
    assert agree["same_start"] > 0.5  # free-running: most jobs start when SJF starts them
    assert agree["slowdown_learner"] < 1.15 * agree["slowdown_expert"]


# -- the trainer -----------------------------------------------------------------------------
TINY = build(DeepRMPlusConfig, dict(
    workload="deeprm", load=1.0, window=15, n_jobsets=3, rollouts=4, iterations=3,
    eval_jobsets=3, eval_every=2, checkpoint_every=1, slots=3, horizon=8, backlog=8,
    imitation_jobsets=20, imitation_epochs=2, imitation_threshold=0.99, seed=2,
))  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("plus")
    result = train(TINY, out, progress=False, report=True)
    return out, result


def test_tiny_run_end_to_end(run_dir) -> None:
    out, result = run_dir
    files = ("imitation.pt", "imitation.csv", "imitation.json", "best.pt", "final.pt", "last.pt",
             "curve.csv", "config.json", "deeprm_plus.json")  # fmt: skip
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
    from click.testing import CliRunner

    from schedlab.cli import main

    runner = CliRunner()
    out = tmp_path / "run"
    args = ["train", "deeprm-plus", "--workload", "deeprm", "--load", "100%", "--window", "15",
            "--jobsets", "3", "--rollouts", "3", "--iterations", "2", "--eval-jobsets", "2",
            "--slots", "3", "--horizon", "8", "--backlog", "8", "--imitation-jobsets", "10",
            "--imitation-epochs", "1", "--expert", "tetris:knob=0.5", "-o", str(out)]  # fmt: skip
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "trained deeprm-plus" in result.output
    assert (out / "report.html").is_file()
    assert json.loads((out / "imitation.json").read_text())["expert"] == "tetris:knob=0.5"
    again = runner.invoke(
        main, ["train", "deeprm-plus", "--resume", "--iterations", "3", "-o", str(out)]
    )
    assert again.exit_code == 0, again.output
    assert pl.read_csv(out / "curve.csv").height == 3
    jobs = tmp_path / "jobs.parquet"
    deeprm_jobset(1.0, n_jobsets=2, seed=9).write_parquet(jobs)
    sim = runner.invoke(main, ["simulate", str(jobs), "--policy", f"deeprm-plus:{out}",
                               "--slots", "3", "--horizon", "8",
                               "-o", str(tmp_path / "res.parquet")])  # fmt: skip
    assert sim.exit_code == 0, sim.output
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
        engine = _engine(deeprm_jobset(1.0, n_jobsets=2, seed=4))
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
    result = train(updated(TINY, imitation=False, iterations=1), tmp_path, progress=False,
                   report=False)  # fmt: skip
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
    config = updated(TINY, jobset_file=str(path), eval_jobsets=3, n_jobsets=3, imitation_jobsets=4,
                     iterations=1)  # fmt: skip
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
    config = TrainConfig(n_jobsets=2, rollouts=2, iterations=1, eval_jobsets=2, slots=3,
                         horizon=8, backlog=8, init=str(out / "best.pt"))  # fmt: skip
    with pytest.raises(CheckpointError, match="'cnn-plus' network"):
        reinforce_train(config, tmp_path, progress=False, report=False)
    spec, _ = read_checkpoint(out / "best.pt")
    assert spec["geometry"]["slots"] == 3


# -- shipped checkpoints and experiment specs -------------------------------------------------
CHECKPOINTS = ROOT / "policies" / "checkpoints"
SHIPPED = sorted(p for p in CHECKPOINTS.glob("deeprm-plus-*") if (p / "imitation.pt").is_file())
SPECS = sorted((ROOT / "experiments").glob("deeprmplus_*.toml"))


DEEPRM_FORMAT = sorted(
    p
    for p in CHECKPOINTS.glob("*/best.pt")
    if torch.load(p, map_location="cpu", weights_only=True)["format"] == "schedlab.deeprm"
)  # Liu's checkpoints have their own test


@pytest.mark.parametrize("path", DEEPRM_FORMAT, ids=lambda p: p.parent.name)
def test_every_shipped_checkpoint_loads_and_its_readme_gives_its_sha256(path: Path) -> None:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    readme = (path.parent / "README.md").read_text()
    assert f"best.pt sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}" in readme
    geometry = json.loads(payload["spec"])["geometry"]
    policy = DeepRMPolicy(checkpoint=path.parent.name)
    assert (policy.geometry.slots, policy.geometry.machines) == (
        geometry["slots"],
        geometry.get("machines", 1),
    )


def test_the_deeprm_format_checkpoints_are_all_found() -> None:
    names = {p.parent.name for p in DEEPRM_FORMAT}
    assert {
        "deeprm-0.7",
        "deeprm-1.3",
        "chen-m2",
        "deeprm-plus-1.4",
        "deeprm-plus-completion-1.4",
        "deeprm-plus-res20",
        "deeprm-plus-res40",
        "deeprm-plus-m20",
        "deeprm-plus-m40",
    } <= names  # Figs. 10-11's policies: the specs name them


def test_a_deeprm_plus_checkpoint_is_shipped() -> None:
    assert [p.name for p in SHIPPED] == [
        "deeprm-plus-1.4",
        "deeprm-plus-alibaba",
        "deeprm-plus-completion-1.4",
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_deeprm_plus_checkpoints_are_the_cnn_and_ship_the_clone(path: Path) -> None:
    spec = json.loads(torch.load(path / "best.pt", map_location="cpu", weights_only=True)["spec"])
    assert spec["network"] == "cnn-plus"
    assert isinstance(load_network(path / "best.pt")[0], CNNPlusNet)
    policy = DeepRMPlusPolicy(checkpoint=path.name)
    assert policy.geometry == ObsGeometry.from_json(spec["geometry"])
    cloned = shipped(f"{path.name}/imitation.pt")  # the cloned network, shipped beside it
    assert cloned is not None
    assert load_network(cloned)[1]["imitation"]["expert"] == "sjf"


def test_shipped_names_stay_inside_the_checkpoints_folder() -> None:
    assert shipped("deeprm-0.7") is not None
    for name in ("../deeprm-0.7", "deeprm-0.7/../deeprm-1.3", "deeprm-0.7/none.pt", "", "/"):
        assert shipped(name) is None, name


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_experiment_specs_validate(path: Path) -> None:
    spec = load_spec(path)
    assert spec.name.startswith("deeprmplus")
    assert any(p.name == "sjf" for p in spec.policies)
