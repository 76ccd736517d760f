"""The installed package layout matches the folders on disk (design.md §1)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


def test_every_data_file_in_a_package_folder_ships() -> None:
    """A tracked file of a package's folder that is not Python (a checkpoint, a paper's table,
    a bundled trace) is matched by that package's ``package-data`` globs, so the wheel has it
    (``include-package-data`` is off): a data file added without its glob fails here."""
    tool = _pyproject()["tool"]["setuptools"]
    folders = {name: ROOT / folder for name, folder in tool["package-dir"].items()}
    globs = tool["package-data"]
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode:
        pytest.skip("not a git checkout: no list of tracked files")
    tracked = listed.stdout.split("\0")
    unshipped = []
    for rel in filter(None, tracked):
        path = ROOT / rel
        if path.suffix == ".py" or not path.is_file():
            continue
        owners = [n for n, f in folders.items() if path.is_relative_to(f)]
        if not owners:
            continue
        owner = max(owners, key=lambda n: len(folders[n].parts))  # the innermost package
        inner = path.relative_to(folders[owner])  # a glob matches whole paths (no recursion)
        if not any(
            inner.match(g) and len(inner.parts) == g.count("/") + 1 for g in globs.get(owner, ())
        ):
            unshipped.append(rel)
    assert unshipped == []


def test_torch_is_the_learned_extra_pinned_in_constraints_and_ranged_in_pyproject() -> None:
    project = _pyproject()["project"]
    assert not [d for d in project["dependencies"] if d.startswith("torch")]  # a light core
    extras = project["optional-dependencies"]
    torch = [d for d in extras["learned"] if d.startswith("torch")]
    assert torch
    assert ">=" in torch[0]
    assert "==" not in torch[0]
    assert "schedlab[learned]" in extras["rl"]  # SB3 agents run on torch
    pins = (ROOT / "constraints.txt").read_text().split()
    assert "torch==2.13.0" in pins


def test_every_declared_dependency_is_pinned() -> None:
    """``make venv`` installs with ``-c constraints.txt``: every dependency and extra is pinned."""
    project = _pyproject()["project"]
    declared = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        declared += extra
    names = {re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0].lower() for d in declared} - {"schedlab"}
    pins = {line.split("==")[0].lower() for line in (ROOT / "constraints.txt").read_text().split()
            if "==" in line}  # fmt: skip
    assert names <= pins, sorted(names - pins)


@pytest.mark.parametrize(
    ("imports", "heavy"),
    [
        ("import schedlab.registry", ("torch", "numba")),
        ("import schedlab; schedlab.generators.names()", ("torch", "numba", "matplotlib")),
        ("import schedlab.cli", ("torch", "numba", "matplotlib", "polars", "scipy")),
        ("import schedlab.simulator.pick.env", ("torch",)),  # torch: the `learned` extra only
    ],
)
def test_imports_are_light(imports: str, heavy: tuple[str, ...]) -> None:
    """Registries, the facade and the CLI import none of the heavy libraries (each command
    imports what it needs when it runs)."""
    code = f"import sys; {imports}; heavy = [m for m in {heavy!r} if m in sys.modules]; "
    code += "assert not heavy, heavy"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def _readme_python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_readme_python_examples_run(tmp_path: Path) -> None:
    """Every ```python block of the README runs as written, in a fresh interpreter (only the
    number of jobsets is made small)."""
    blocks = _readme_python_blocks()
    assert blocks
    for block in blocks:
        code = re.sub(r"n_jobsets=\d+", "n_jobsets=4", block)
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "report" / "report.html").is_file()


def test_public_api_works_in_any_call_order() -> None:
    code = (
        "import schedlab, sys\n"
        # importing submodules binds the subpackages
        "import schedlab.policies.heuristics, schedlab.loaders.traces.swf\n"
        "assert schedlab.policies is sys.modules['schedlab.policies']\n"
        "assert schedlab.policies.make('sjf').name == 'sjf'\n"
        "assert schedlab.policies.make('tetris', knob=0.3).knob == 0.3\n"
        "assert 'fcfs' in schedlab.policies.names(tag='heuristic')\n"
        "assert schedlab.policies.entry('sjf').name == 'sjf'\n"
        "assert schedlab.loaders.load('swf').__name__ == 'read_swf'\n"
        "assert 'swf' in schedlab.loaders.names()\n"
        "assert schedlab.generators.make('deeprm').name == 'deeprm'\n"
        "assert 'deeprm' in schedlab.trainers.names()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_results_convert_to_pandas() -> None:
    import schedlab

    js = schedlab.generators.make("deeprm").generate(0.5, n_jobsets=2, seed=0)
    res = schedlab.simulate(js, [schedlab.policies.make("sjf")])
    frame = res.table.to_pandas()
    assert list(frame.columns) == res.table.columns
    assert len(frame) == res.table.height


def test_mypy_is_strict_on_every_module_of_the_core_folders() -> None:
    """Every module of ``schedlab/`` and every package of ``simulator/``, ``policies/`` and
    ``evaluation/`` is in the strict override (a new module joins it, or this fails)."""
    strict = next(
        o["module"]
        for o in _pyproject()["tool"]["mypy"]["overrides"]
        if o.get("disallow_untyped_defs")
    )
    modules = [
        f"schedlab.{p.stem}" for p in (ROOT / "schedlab").glob("*.py") if p.stem != "__init__"
    ]
    missing = [m for m in modules if m not in strict]
    assert not missing, f"add {missing} to the strict override in pyproject.toml"
    for package in ("simulator", "policies", "evaluation", "cli"):
        assert f"schedlab.{package}.*" in strict


def test_every_benchmark_is_listed_in_the_docs() -> None:
    """``make bench`` runs every ``benchmarks/bench_*.py``; the docs' table lists each one."""
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    missing = [
        p.name for p in (ROOT / "benchmarks").glob("bench_*.py") if f"`{p.name}`" not in index
    ]
    assert not missing, f"add {missing} to the benchmarks table of docs/index.md"
