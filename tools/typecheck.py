"""Type-check schedlab with mypy (``make lint``), settings in ``pyproject.toml`` ``[tool.mypy]``.

The top-level folders are installed under one import name (``simulator/`` is
``schedlab.simulator``, pyproject's ``package-dir``), a mapping mypy cannot follow in an editable
install. This builds that layout from symbolic links under ``build/typecheck/`` (never copies;
``$SCHEDLAB_TYPECHECK_TREE`` elsewhere) and runs mypy there, printing paths relative to the
repository. Arguments are passed to mypy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = Path(os.environ.get("SCHEDLAB_TYPECHECK_TREE", ROOT / "build" / "typecheck"))
"""Where the layout is built (one per concurrent run)."""


def build_tree() -> Path:
    """``build/typecheck/schedlab/...``: the installed layout, as links to the sources."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shutil.rmtree(TREE, ignore_errors=True)
    for package in sorted(setup["packages"]):
        folder = source_folder(package, setup["package-dir"])
        target = TREE.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in [*sorted((ROOT / folder).glob("*.py")), ROOT / folder / "py.typed"]:
            if source.is_file():
                (target / source.name).symlink_to(source)
    return TREE


def source_folder(package: str, package_dir: dict[str, str]) -> str:
    """The folder of ``package``: its ``package-dir`` entry, or its parent's plus its name."""
    if package in package_dir:
        return package_dir[package]
    parent, _, name = package.rpartition(".")
    return f"{source_folder(parent, package_dir)}/{name}"


def main() -> int:
    tree = build_tree()
    config = ROOT / "pyproject.toml"
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(config),
        "-p",
        "schedlab",
        *sys.argv[1:],
    ]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
    prefix = str(tree) + os.sep
    for line in (done.stdout + done.stderr).splitlines():
        path, sep, rest = line.partition(":")
        link = tree / path
        shown = os.path.relpath(link.resolve(), ROOT) if sep and link.is_symlink() else path
        print(f"{shown}{sep}{rest}".replace(prefix, ""))
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
