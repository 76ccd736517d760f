"""The shipped checkpoints (each loads, its README gives its sha256; DeepRM_Plus ships the cloned
network beside it) and the experiment specs that use them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from schedlab.evaluation.spec import load_spec
from schedlab.policies.cnn_plus import CNNPlusNet
from schedlab.policies.deeprm import (
    DeepRMPlusPolicy,
    DeepRMPolicy,
    load_network,
)
from schedlab.policies.shipped import shipped
from schedlab.simulator.views.deeprm_image import ObsGeometry

ROOT = Path(__file__).resolve().parents[2]


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
