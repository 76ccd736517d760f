"""Data flows one way (docs/architecture.md): no first-party import runs against the layers, and
module-level imports have no cycles. Function-level (lazy) imports must respect the layers too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("schedlab", "traces", "loaders", "simulator", "policies", "evaluation", "reports")
# higher layers may import lower ones, never the reverse; ``schedlab`` core is the bottom, its
# ``cli`` sub-package the top.
LAYER = {"core": 0, "traces": 1, "loaders": 2, "simulator": 3, "policies": 4, "evaluation": 5,
         "reports": 6, "cli": 7}  # fmt: skip


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


def test_no_cycles_among_module_level_imports() -> None:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        deps = set()
        for name, top in _imports(path):
            if not top:
                continue
            while name and name not in MODULES:  # ``from pkg.mod import x`` -> pkg.mod
                name = name.rpartition(".")[0]
            if name and name != module:
                deps.add(name)
        graph[module] = deps
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    # a package __init__ re-exporting its own submodules is not a cycle of the flow
    real = [c for c in cycles if not all(m.startswith(c[0]) or c[0].startswith(m) for m in c)]
    assert not real, real
