"""Data flows one way (docs/architecture.md): no first-party import runs against the layers, and
no import makes a cycle, whether at module level, inside a function or under ``TYPE_CHECKING``.
Function-level (lazy) imports must respect the layers too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("schedlab", "traces", "loaders", "simulator", "policies", "evaluation", "reports")
# higher layers may import lower ones, never the reverse; ``schedlab`` core is the bottom, its
# ``cli`` sub-package the top.
LAYER = {
    "core": 0,
    "traces": 1,
    "loaders": 2,
    "simulator": 3,
    "policies": 4,
    "evaluation": 5,
    "reports": 6,
    "cli": 7,
}


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "schedlab" or len(parts) == 1:
        return "core"
    if parts[1] in LAYER:
        return parts[1]
    return "core"  # schedlab.jobset, schedlab.errors, ...


def _modules() -> dict[str, Path]:
    out = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            prefix = ["schedlab"] if folder == "schedlab" else ["schedlab", folder]
            out[".".join(prefix + parts)] = path
    return out


def _imports(path: Path) -> list[tuple[str, bool]]:
    """First-party modules imported by ``path``, each with whether it is at module level."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("schedlab"):
                found.append((name, id(node) in top))
    return found


MODULES = _modules()


def test_modules_found() -> None:
    assert "schedlab.simulator.cluster.batched" in MODULES
    assert "schedlab.cli.app" in MODULES


@pytest.mark.parametrize("module", sorted(set(MODULES) - {"schedlab"}))  # the facade: every layer
def test_no_import_against_the_flow(module: str) -> None:
    own = LAYER[_layer(module)]
    against = [name for name, _ in _imports(MODULES[module]) if LAYER[_layer(name)] > own]
    assert not against, f"{module} (layer {_layer(module)}) imports {against}"


def _resolved(module: str, path: Path) -> set[str]:
    """The first-party modules ``path`` imports anywhere: at module level, inside functions and
    under ``if TYPE_CHECKING:``; ``from pkg import sub`` counts as ``pkg.sub`` where ``sub`` is a
    module, ``from pkg.mod import x`` as ``pkg.mod``."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("schedlab") and name != module:
                deps.add(name)
    return deps


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more modules that import each other, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in graph[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _in_package(a: str, b: str) -> bool:
    """Whether one of the modules ``a``, ``b`` is a package holding the other."""
    return a.startswith(f"{b}.") or b.startswith(f"{a}.")


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others, by any import: at module
    level, inside a function or under ``if TYPE_CHECKING:``. A package ``__init__`` re-exporting
    its own submodules is not a cycle of the flow."""
    graph = {module: _resolved(module, path) for module, path in MODULES.items()}
    for module, deps in graph.items():  # a package and its own submodules: not the flow's
        graph[module] = {d for d in deps if not _in_package(d, module)}
    cycles = [sorted(g) for g in _strongly_connected(graph)]
    assert not cycles, cycles


def test_cycles_are_found_through_every_kind_of_import(tmp_path: Path) -> None:
    """The check sees a cycle made by a function-level import and one under TYPE_CHECKING."""
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("def f():\n    from schedlab.fake.b import g\n")
    b.write_text("import typing\nif typing.TYPE_CHECKING:\n    import schedlab.fake.c\n")
    c.write_text("from schedlab.fake import a\n")
    names = {"schedlab.fake.a": a, "schedlab.fake.b": b, "schedlab.fake.c": c}
    MODULES.update(names)
    try:
        graph = {module: _resolved(module, path) for module, path in names.items()}
    finally:
        for name in names:
            del MODULES[name]
    assert _strongly_connected(graph) == [set(names)]
