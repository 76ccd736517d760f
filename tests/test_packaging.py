"""The installed package layout matches the folders on disk (design.md §1)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_package_list_matches_folders_on_disk() -> None:
    tool = _pyproject()["tool"]["setuptools"]
    mapping: dict[str, str] = tool["package-dir"]
    on_disk = set()
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *rel)))
    assert set(tool["packages"]) == on_disk
    assert set(tool["packages"]) >= set(mapping)


def test_every_mapped_package_imports_from_the_install() -> None:
    for pkg in _pyproject()["tool"]["setuptools"]["packages"]:
        module = __import__(pkg, fromlist=["_"])
        assert module.__name__ == pkg


def test_torch_pinned_in_constraints_and_ranged_in_pyproject() -> None:
    deps = _pyproject()["project"]["dependencies"]
    torch = [d for d in deps if d.startswith("torch")]
    assert torch
    assert ">=" in torch[0]
    assert "==" not in torch[0]
    pins = (ROOT / "constraints.txt").read_text().split()
    assert "torch==2.13.0" in pins


def test_import_schedlab_is_light() -> None:
    code = (
        "import sys, schedlab; schedlab.generators.names(); "
        "heavy = [m for m in ('torch', 'numba', 'matplotlib') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
