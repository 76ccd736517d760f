"""Agents' model zips read without unpickling (issue 36): zips that would write a marker file if
any part were unpickled (``_last_obs``, the spaces, the policy class, schedules, the optimizer, a
pickle in ``policy.pth``) never write it; what inference needs only as a pickle is refused in one
line naming the member; a zip declaring more than the cap is refused before it is read; and the
rebuilt policy acts exactly as Stable-Baselines3's own loader's. Needs the ``rl`` extra."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import torch
from click.testing import CliRunner
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, DQN, PPO

from schedlab.cli import main
from schedlab.policies.external import detect_algo
from schedlab.policies.sb3_zip import ModelMismatchError, UnsafeModelError, load_policy
from schedlab.registry import generators
from schedlab.simulator.env import ClusterEnv
from tests.cli_helpers import run_fail, run_ok
from tests.spec_helpers import spec_toml

MARKER = "SCHEDLAB_TEST_MARKER"


class Payload:
    """Unpickled, it appends its tag to the file named by ``$SCHEDLAB_TEST_MARKER``."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f'echo {self.tag} >> "${MARKER}"',))


def serialized(tag: str) -> str:
    return base64.b64encode(pickle.dumps(Payload(tag))).decode()


@pytest.fixture(scope="module")
def env() -> ClusterEnv:
    return ClusterEnv(generators.make("deeprm").generate(0.7, n_jobsets=2, seed=0))


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, env: ClusterEnv) -> Path:
    path = tmp_path_factory.mktemp("zips") / "good.zip"
    MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu").save(path)
    return path


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "marker"
    monkeypatch.setenv(MARKER, str(path))
    return path


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def write_zip(path: Path, parts: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return path


def with_data(good: Path, path: Path, **changes: Any) -> Path:
    parts = members(good)
    data = json.loads(parts["data"]) | changes
    return write_zip(path, {**parts, "data": json.dumps(data).encode()})


def torch_bytes(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


DATA_MEMBERS = [
    "_last_obs",
    "observation_space",
    "action_space",
    "policy_class",
    "lr_schedule",
    "clip_range",
    "rollout_buffer_class",
]


@pytest.mark.parametrize("member", DATA_MEMBERS)
def test_pickles_in_data_are_never_decoded(
    member: str, good: Path, tmp_path: Path, marker: Path
) -> None:
    data = json.loads(members(good)["data"])
    plain = data.get(member) if isinstance(data.get(member), dict) else {}
    value = {**plain, ":serialized:": serialized(member)}
    evil = with_data(good, tmp_path / "evil.zip", **{member: value})
    policy, algo = load_policy(evil)
    assert algo == "maskable_ppo"
    assert policy.action_space.n == 11
    assert not marker.exists()


def test_pickles_in_unused_members_are_never_read(good: Path, tmp_path: Path, marker: Path) -> None:
    parts = members(good)
    parts["policy.optimizer.pth"] = torch_bytes({"state": Payload("optimizer")})
    parts["pytorch_variables.pth"] = pickle.dumps(Payload("variables"))
    load_policy(write_zip(tmp_path / "evil.zip", parts))
    assert not marker.exists()


@pytest.mark.parametrize("how", ["plain pickle", "torch.save"])
def test_a_pickle_in_policy_pth_is_refused_naming_it(
    how: str, good: Path, tmp_path: Path, marker: Path
) -> None:
    parts = members(good)
    payload = Payload("policy.pth")
    parts["policy.pth"] = (
        pickle.dumps(payload) if how == "plain pickle" else torch_bytes({"w": payload})
    )
    evil = write_zip(tmp_path / "evil.zip", parts)
    with pytest.raises(UnsafeModelError, match=r"evil.zip: member policy.pth is not tensors alone"):
        load_policy(evil)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("observation_space", {":type:": "<class 'x'>", ":serialized:": "..."}),
        ("action_space", {":type:": "<class 'x'>", ":serialized:": "..."}),
        ("policy_kwargs", {":serialized:": "...", "features_extractor_class": "<class 'a.B'>"}),
        ("policy_kwargs", {":serialized:": "...", "activation_fn": "<class 'os.system'>"}),
    ],
)
def test_what_only_a_pickle_describes_is_refused_naming_the_member(
    member: str, value: dict[str, Any], good: Path, tmp_path: Path, marker: Path
) -> None:
    value = {**value, ":serialized:": serialized(member)}
    evil = with_data(good, tmp_path / "evil.zip", **{member: value})
    with pytest.raises(UnsafeModelError, match=rf"evil.zip: data member {member}\b.*refused"):
        load_policy(evil)
    assert not marker.exists()


def test_a_zip_declaring_a_gibibyte_is_refused_unread(good: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members(good).items():
            z.writestr(name, data)
        with z.open("filler", "w", force_zip64=True) as f:
            for _ in range(64):
                f.write(b" " * 2**24)
    assert bomb.stat().st_size < 5 * 2**20
    with pytest.raises(ModelMismatchError, match=r"expand to 1\.0 GiB \(filler: 1\.0 GiB\)"):
        load_policy(bomb)
    with pytest.raises(ModelMismatchError, match="more than the"):
        detect_algo(bomb)


def test_not_a_model_zip(tmp_path: Path) -> None:
    write_zip(tmp_path / "x.zip", {"data": b"[1, 2]"})
    with pytest.raises(ModelMismatchError, match="member data is not a JSON object"):
        load_policy(tmp_path / "x.zip")
    write_zip(tmp_path / "y.zip", {"data": b"{" * 100_000})
    with pytest.raises(ModelMismatchError, match="member data is not JSON"):
        load_policy(tmp_path / "y.zip")


@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo", "a2c", "dqn", "ppo-relu"])
def test_the_rebuilt_policy_acts_as_sb3s_loader(algo: str, env: ClusterEnv, tmp_path: Path) -> None:
    cls = {"maskable_ppo": MaskablePPO, "ppo": PPO, "a2c": A2C, "dqn": DQN, "ppo-relu": PPO}[algo]
    extra: dict[str, Any] = {"buffer_size": 100} if cls is DQN else {"n_steps": 16}
    extra |= {"batch_size": 16} if cls in (PPO, MaskablePPO) else {}
    if algo == "ppo-relu":
        extra["policy_kwargs"] = {
            "activation_fn": torch.nn.ReLU,
            "net_arch": {"pi": [32], "vf": [8]},
        }
    model = cls("MlpPolicy", env, seed=0, device="cpu", **extra)
    if cls is not DQN:
        model.learn(32)  # a trained model also saves _last_obs (a pickle)
    model.save(tmp_path / "m.zip")
    policy, found = load_policy(tmp_path / "m.zip")
    assert found == algo.partition("-")[0]
    obs = np.random.default_rng(0).random((16, *env.observation_space.shape), dtype=np.float32)
    theirs = cls.load(tmp_path / "m.zip", device="cpu")
    np.testing.assert_array_equal(
        policy.predict(obs, deterministic=True)[0], theirs.predict(obs, deterministic=True)[0]
    )


def test_simulate_and_experiment_run_no_code_from_a_model(
    good: Path, small_jobs: Path, tmp_path: Path, marker: Path
) -> None:
    evil = with_data(good, tmp_path / "evil.zip", _last_obs={":serialized:": serialized("x")})
    run_ok(
        "simulate", str(small_jobs), "--policy", f"sb3:{evil}", "-o", str(tmp_path / "r.parquet")
    )
    parts = members(good)
    parts["policy.pth"] = pickle.dumps(Payload("policy.pth"))
    bad = write_zip(tmp_path / "bad.zip", parts)
    out = run_fail("simulate", str(small_jobs), "--policy", f"sb3:{bad}", "-o", "x.parquet")
    assert "bad.zip: member policy.pth is not tensors alone" in out
    spec = tmp_path / "spec.toml"
    policies = f'"sjf", "sb3:{bad}", "sb3:{evil}"'
    spec.write_text(spec_toml(policies, name="x", reference="sjf", loads="[0.7]", jobsets=2))
    args = ["experiment", "run", str(spec), "-o", str(tmp_path / "exp"), "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert "Traceback" not in result.output
    assert "member policy.pth is not tensors alone" in result.output
    assert not marker.exists()
