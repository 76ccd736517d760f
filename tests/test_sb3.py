"""Agents trained elsewhere (issue 27): the environments' ``action_masks()`` for sb3-contrib, the
example's MaskablePPO model run as ``sb3:`` in ``simulate`` and in an experiment spec whose
report compares it with SJF, callables ``obs, mask -> action``, and the errors of a model that
does not fit. Needs the ``rl`` extra (skipped without it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

pytest.importorskip("sb3_contrib")

import gymnasium as gym
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import DummyVecEnv

import schedlab  # registers the environment ids
from schedlab.errors import MissingExtraError
from schedlab.policies.check import check_policy
from schedlab.policies.external import ModelMismatchError, SB3Policy, detect_algo
from schedlab.policies.image_agent import CallablePolicy
from schedlab.registry import generators, make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.env import ClusterEnv, ClusterVectorEnv
from schedlab.simulator.run import run_policy
from tests.cli_helpers import run_fail, run_ok
from tests.policies.example_agent import last_valid, last_valid_batch

ROOT = Path(__file__).resolve().parents[1]
FALLBACK = "ignore:.*placed by the time-limit fallback:RuntimeWarning"
"""A barely trained agent may hold jobs until the episode's time limit (counted, warned)."""


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "train_maskable_ppo", ROOT / "examples" / "train_maskable_ppo.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's model after 256 steps (its layout: ``runs/maskable_ppo/model.zip``)."""
    example = _example()
    out = tmp_path_factory.mktemp("sb3") / "runs" / "maskable_ppo"
    args = example.Args(steps=256, n_steps=128, batch_size=64, jobsets=8, out=str(out))
    path: Path = example.main(args)
    assert path == out / "model.zip"
    assert (out / "config.json").is_file()
    return path


# -- action_masks(): sb3-contrib's convention ----------------------------------------------


@pytest.mark.parametrize("env_id", ["schedlab/DeepRM-v0", "schedlab/MultiMachine-v0"])
def test_action_masks_is_the_info_mask_for_sb3_contrib(env_id: str) -> None:
    env = gym.make(env_id, load=0.9, jobsets=3)
    assert is_masking_supported(env)
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        mask = get_action_masks(env)
        assert mask.dtype == np.bool_
        assert mask.shape == (env.action_space.n,)
        np.testing.assert_array_equal(mask, info["action_mask"].astype(bool))
        _, _, done, _, info = env.step(rng.choice(np.flatnonzero(mask)))
        if done:
            np.testing.assert_array_equal(get_action_masks(env), info["action_mask"] == 1)
            _, info = env.reset()
    vec = DummyVecEnv([lambda: gym.make(env_id, load=0.9, jobsets=3)] * 2)
    assert is_masking_supported(vec)
    vec.reset()
    assert get_action_masks(vec).shape == (2, env.action_space.n)


def test_vector_env_action_masks_and_sb3_env_checker() -> None:
    from stable_baselines3.common.env_checker import check_env

    js = generators.make("deeprm").generate(0.9, n_jobsets=3, seed=2)
    vec = ClusterVectorEnv(js, num_envs=3)
    obs, info = vec.reset(seed=1)
    for _ in range(30):
        masks = vec.action_masks()
        assert masks.shape == (3, 11)
        assert masks.dtype == np.bool_
        np.testing.assert_array_equal(masks, info["action_mask"].astype(bool))
        obs, _, _, _, info = vec.step(last_valid_batch(obs, masks))
    # SB3's own checker passes, only noting that a 2-D observation is unusual (MlpPolicy
    # flattens it)
    with pytest.warns(UserWarning, match="unconventional shape"):
        check_env(ClusterEnv(js))


# -- the example's model in simulate and in an experiment spec ------------------------------


def test_algorithm_is_read_from_the_zip(trained: Path, tmp_path: Path) -> None:
    from stable_baselines3 import A2C, DQN, PPO

    assert detect_algo(trained) == "maskable_ppo"
    env = ClusterEnv(generators.make("deeprm").generate(0.7, n_jobsets=2, seed=0))
    for cls, algo in ((PPO, "ppo"), (A2C, "a2c"), (DQN, "dqn")):
        extra = {"buffer_size": 100} if cls is DQN else {"n_steps": 8}
        extra |= {"batch_size": 8} if cls is PPO else {}
        cls("MlpPolicy", env, seed=0, device="cpu", **extra).save(tmp_path / f"{algo}.zip")
        assert detect_algo(tmp_path / f"{algo}.zip") == algo
    (tmp_path / "bad.zip").write_text("not a zip")
    with pytest.raises(ModelMismatchError, match="not a Stable-Baselines3 model zip"):
        detect_algo(tmp_path / "bad.zip")


@pytest.mark.filterwarnings(FALLBACK)
def test_the_adapter_observes_exactly_what_the_env_gives(trained: Path) -> None:
    """The schedule of the adapter in the batched engine is the env's under the same model."""
    from sb3_contrib import MaskablePPO

    js = generators.make("deeprm").generate(0.7, n_jobsets=3, seed=9)
    model = MaskablePPO.load(trained, device="cpu")
    env = ClusterEnv(js)
    starts = []
    for jobset in js.jobset_ids:
        obs, _ = env.reset(options={"jobset": jobset})
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
            obs, _, done, _, _ = env.step(action)
        starts.append(env.engine.starts(0))
    adapter = run_policy(js, SB3Policy(checkpoint=str(trained)), ClusterConfig()).start
    np.testing.assert_array_equal(adapter, np.concatenate(starts))


@pytest.mark.filterwarnings(FALLBACK)
def test_sb3_policy_conforms(trained: Path) -> None:
    check_policy(make_policy(f"sb3:{trained},deterministic=false"))
    check_policy(make_policy(f"sb3:{trained}"))


@pytest.mark.filterwarnings(FALLBACK)
def test_simulate_runs_the_model_beside_sjf(
    trained: Path, small_jobs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "res.parquet"
    run_ok("simulate", str(small_jobs), "--policy", "sjf", "--policy",
           f"sb3:{trained},deterministic=false,label=ppo", "-o", str(out))  # fmt: skip
    table = pl.read_parquet(out)
    assert set(table["policy"]) == {"sjf", "ppo"}
    per = table.group_by("policy").len()
    assert per["len"].n_unique() == 1  # every job of every jobset, for both


@pytest.mark.slow
def test_experiment_spec_and_report_compare_it_with_sjf(trained: Path, tmp_path: Path) -> None:
    """The example's spec, as shipped but for 10 jobsets, beside the example's model."""
    root = trained.parents[2]  # .../runs/maskable_ppo/model.zip -> the "repository"
    spec = (ROOT / "examples" / "maskable_ppo.toml").read_text()
    assert "jobsets = 100" in spec
    (root / "examples").mkdir()
    path = root / "examples" / "maskable_ppo.toml"
    path.write_text(spec.replace("jobsets = 100", "jobsets = 10"))
    run_ok("experiment", "run", str(path), "-o", str(tmp_path / "exp"), "--workers", "1")
    run_ok("report", str(tmp_path / "exp"), "-o", str(tmp_path / "out"))
    comparison = pl.read_csv(tmp_path / "out" / "comparison.csv")
    row = comparison.filter((pl.col("policy") == "maskable-ppo") & (pl.col("metric") == "slowdown"))
    assert row.height == 1
    assert row["n_paired"][0] == 10
    assert row["ratio"][0] > 0
    assert row["wins"][0] + row["ties"][0] + row["losses"][0] == 10
    pairwise = pl.read_csv(tmp_path / "out" / "pairwise.csv")
    assert pairwise.filter(
        (pl.col("a") == "sjf") & (pl.col("b") == "maskable-ppo")
    ).height >= 1  # fmt: skip
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| maskable-ppo |" in report
    assert "sjf (reference)" in report


# -- callables -----------------------------------------------------------------------------


def test_callable_policies_by_object_and_by_name(small_jobs: Path, tmp_path: Path) -> None:
    js = schedlab.JobSet.read_parquet(small_jobs)
    one = run_policy(js, CallablePolicy(fn=last_valid), ClusterConfig()).start
    batched = make_policy("callable:tests.policies.example_agent:last_valid_batch,batched=true")
    np.testing.assert_array_equal(run_policy(js, batched, ClusterConfig()).start, one)
    check_policy(CallablePolicy(fn="tests.policies.example_agent:last_valid"))
    out = tmp_path / "res.parquet"
    spec = "callable:tests.policies.example_agent:last_valid"
    run_ok("simulate", str(small_jobs), "--policy", spec, "--policy", "sjf", "-o", str(out))
    assert set(pl.read_parquet(out)["policy"]) == {spec, "sjf"}


def test_invalid_callable_actions_act_as_void() -> None:
    js = generators.make("deeprm").generate(0.9, n_jobsets=2, seed=1)
    policy = CallablePolicy(fn=lambda obs, mask: 99, batched=False)
    with pytest.warns(RuntimeWarning, match="time-limit fallback"):  # nothing is ever started
        run_policy(js, policy, ClusterConfig())


def test_unimportable_callable_is_named(small_jobs: Path) -> None:
    spec = "callable:tests.policies.example_agent:nothing_here"
    out = run_fail("simulate", str(small_jobs), "--policy", spec, "-o", "x.parquet")
    assert "'tests.policies.example_agent:nothing_here' cannot be imported" in out


# -- models that do not fit ----------------------------------------------------------------


def test_a_model_on_another_geometry_names_both_shapes(trained: Path, small_jobs: Path) -> None:
    out = run_fail("simulate", str(small_jobs), "--slots", "5", "--policy", f"sb3:{trained}",
                   "-o", "x.parquet")  # fmt: skip
    assert "trained on 10 slots but this cluster has 5; use --slots 10" in out
    out = run_fail("simulate", str(small_jobs), "--slots", "5", "--policy",
                   f"sb3:{trained},slots=5", "-o", "x.parquet")  # fmt: skip
    assert "expects observations Box(0.0, 1.0, (20, 224), float32)" in " ".join(out.split())
    assert "gives observations of shape (20, 124)" in " ".join(out.split())
    js = schedlab.JobSet.read_parquet(small_jobs)
    with pytest.raises(ModelMismatchError, match=r"\(20, 224\).*shape \(20, 222\)"):
        run_policy(js, SB3Policy(checkpoint=str(trained), backlog_view=20), ClusterConfig())


def test_missing_file_and_missing_extra(trained: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    js = generators.make("deeprm").generate(0.7, n_jobsets=1, seed=0)
    with pytest.raises(ModelMismatchError, match="no such model file"):
        run_policy(js, SB3Policy(checkpoint="nowhere/model.zip"), ClusterConfig())
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # as if not installed
    said = r"the sb3 policy needs sb3-contrib, which is not installed: .* pip install '\.\[rl\]'"
    with pytest.raises(MissingExtraError, match=said):
        run_policy(js, SB3Policy(checkpoint=str(trained)), ClusterConfig())
