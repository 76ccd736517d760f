"""mkdocs hook: the installed package layout, for the API reference (mkdocstrings, griffe).

Every top-level folder is installed under the one import name ``schedlab`` (pyproject's
``package-dir``: ``simulator/`` is ``schedlab.simulator``), a mapping griffe's static finder
cannot follow: it would find ``schedlab/`` and none of the folders mapped into it. Before any page
renders, this builds that layout from symbolic links to the sources under ``build/docs-api/``
(the ``paths`` of the python handler in ``mkdocs.yml``), as ``tools/typecheck.py`` does for mypy:
one real directory per package of pyproject's ``packages`` list, one link per ``.py`` file. The
sources are read statically (nothing is imported), so attribute docstrings are kept.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "docs-api"
"""Where the layout is built (``build/`` is git-ignored); mkdocs.yml's handler ``paths``."""


def source_folder(package: str, package_dir: dict[str, str]) -> str:
    """The folder of ``package``: its ``package-dir`` entry, or its parent's plus its name."""
    if package in package_dir:
        return package_dir[package]
    parent, _, name = package.rpartition(".")
    return f"{source_folder(parent, package_dir)}/{name}"


def build_tree(tree: Path = TREE) -> Path:
    """``tree/schedlab/...``: the installed layout of the packages, as links to the sources."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shutil.rmtree(tree, ignore_errors=True)
    for package in sorted(setup["packages"]):
        folder = ROOT / source_folder(package, setup["package-dir"])
        target = tree.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(folder.glob("*.py")):
            (target / source.name).symlink_to(source)
    return tree


@event_priority(100)  # before mkdocstrings creates its handler
def on_config(config: Any) -> Any:
    """Build the layout at the start of every build (``mkdocs serve`` rebuilds included)."""
    build_tree()
    return config
