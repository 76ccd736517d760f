"""The generated spec reference (docs/spec.md, docs/hooks/spec_reference.py) cannot drift: every
key that ``parse_spec_dict`` accepts, in every table, is on the page.

The keys accepted are not read from the code's lists but asked of the parser: an unknown key in
a table is an error that lists the keys it allows.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from schedlab.errors import SpecError
from schedlab.evaluation.spec import parse_spec_dict
from schedlab.registry import generators, loaders
from schedlab.traces import bundled, sample_for

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"
UNKNOWN = "zz_not_a_key"
BASE: dict[str, Any] = {
    "experiment": {"name": "x", "reference": "sjf"},
    "policies": ["sjf"],
    "workloads": [{"name": "w", "generator": "deeprm", "loads": [0.5], "jobsets": 1}],
}


@pytest.fixture(scope="module")
def hook() -> Iterator[Any]:
    sys.path.insert(0, str(HOOKS))  # as mkdocs does while it loads a hook
    try:
        spec = importlib.util.spec_from_file_location("spec_reference", HOOKS / "spec_reference.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(HOOKS))


@pytest.fixture(scope="module")
def page(hook: Any) -> str:
    return hook.render()


def _section(page: str, *headings: str) -> str:
    """The text under the heading starting with ``headings[-1]`` (looked for after the ones
    before it), up to the next heading of the same or a higher level."""
    start = 0
    for heading in headings:
        found = re.search(rf"^{re.escape(heading)}.*$", page[start:], flags=re.M)
        assert found, f"no heading {heading!r} on the generated page"
        start += found.end()
    level = headings[-1].split()[0]
    end = re.search(rf"^#{{1,{len(level)}}} ", page[start:], flags=re.M)
    return page[start : start + end.start()] if end else page[start:]


def _parse(data: dict[str, Any]) -> None:
    parse_spec_dict(data, base_dir=ROOT, source="spec.toml")


def _accepted(change: Callable[[dict[str, Any]], None]) -> list[str]:
    """The keys the parser accepts where ``change`` puts an unknown key."""
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(SpecError, match=UNKNOWN) as info:
        _parse(data)
    listed = re.search(r"(?:allowed: |its parameters: )([^()]*?)\)?$", str(info.value))
    assert listed, str(info.value)
    return listed[1].split(", ")


def _workload(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["workloads"][0] = {"name": "w", **fields}

    return change


def _trace(loader: str, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return _workload(loader=loader, path=str(bundled(sample_for(loader) or loader)), **fields)


def _multicluster(data: dict[str, Any]) -> None:
    data["policies"] = ["liu-maf"]
    data["experiment"]["reference"] = "liu-maf"
    data["cluster"] = {UNKNOWN: 1}


PROBES: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "top": (lambda d: d.update({UNKNOWN: 1}), ("## Top level",)),
    "experiment": (lambda d: d["experiment"].update({UNKNOWN: 1}), ("## `[experiment]`",)),
    "policies": (lambda d: d.update(policies=[{"spec": "sjf", UNKNOWN: 1}]), ("## `policies`",)),
    "cluster": (lambda d: d.update(cluster={UNKNOWN: 1}), ("## `[cluster]`", "### `cluster`")),
    "multicluster": (_multicluster, ("## `[cluster]`", "### `multicluster`")),
    "workloads": (lambda d: d["workloads"][0].update({UNKNOWN: 1}), ("## `[[workloads]]`",)),
    "workload cluster": (
        lambda d: d["workloads"][0].update(cluster={UNKNOWN: 1}),
        ("## `[cluster]`", "### `cluster`"),
    ),
    "workload options": (
        _trace("swf", options={UNKNOWN: 1}),
        ("## `[[workloads]]`", "### `options`"),
    ),
    "metrics": (lambda d: d.update(metrics={UNKNOWN: 1}), ("## `[metrics]`",)),
    "report": (lambda d: d.update(report={UNKNOWN: 1}), ("## `[report]`",)),
}
for _name in generators.names():
    PROBES[f"generator {_name}"] = (
        _workload(generator=_name, loads=[0.5], params={UNKNOWN: 1}),
        ("### `params` of a generator", f"#### `{_name}`"),
    )
for _name in loaders.names():
    PROBES[f"loader {_name}"] = (
        _trace(_name, params={UNKNOWN: 1}),
        ("### `params` of a trace", f"#### `{_name}`"),
    )


@pytest.mark.parametrize("where", list(PROBES))
def test_every_accepted_key_is_documented(where: str, page: str) -> None:
    change, headings = PROBES[where]
    keys = _accepted(change)
    assert keys
    section = _section(page, *headings)
    missing = [k for k in keys if f"| `{k}` |" not in section]
    assert not missing, f"{where}: keys accepted but not on the page: {missing}"


def test_documented_defaults_hold() -> None:
    """Keys the page calls required are required; keys whose default the parser computes
    (``PARSER_DEFAULTS``) may be left out (BASE leaves out a workload's seed)."""
    _parse(BASE)
    _parse({**BASE, "policies": [{"spec": "sjf"}]})  # a policy table without a name
    for table, key in [("experiment", "name"), ("experiment", "reference")]:
        data = copy.deepcopy(BASE)
        del data[table][key]
        with pytest.raises(SpecError, match=key):
            _parse(data)
    data = copy.deepcopy(BASE)
    del data["workloads"][0]["name"]
    with pytest.raises(SpecError, match="name"):
        _parse(data)


def test_page_has_the_marker_the_hook_replaces(hook: Any) -> None:
    assert hook.MARKER in (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
