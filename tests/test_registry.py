"""Registries of lazily imported entry points (style.md §8)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from schedlab.errors import SchedlabError, UnknownNameError
from schedlab.registry import Entry, Registry, generators, loaders, policies

HEURISTICS = {"random", "fcfs", "sjf", "packer", "tetris", "hrrn"}


def test_names_list_generators_and_policies() -> None:
    assert "deeprm" in generators.names()
    assert set(policies.names()) >= HEURISTICS
    for reg in (generators, policies, loaders):
        assert reg.names() == sorted(reg.names())
        assert [e.name for e in reg] == reg.names()


def test_kinds() -> None:
    assert (generators.kind, policies.kind, loaders.kind) == ("generator", "policy", "loader")


def test_entry_holds_target_and_summary() -> None:
    entry = generators.entry("deeprm")
    assert entry == Entry(name="deeprm", target=entry.target, summary=entry.summary)
    assert entry.target == "schedlab.loaders.generators.deeprm_workload:DeepRMGenerator"
    assert entry.summary.startswith("DeepRM")
    assert policies.entry("sjf").target == "schedlab.policies.heuristics:SJF"


def test_lookup_is_case_insensitive() -> None:
    assert "SJF" in policies
    assert "DeepRM" in generators
    assert generators.entry("DEEPRM").name == "deeprm"
    assert 3 not in policies
    assert "sjf" not in generators


def test_unknown_name_suggests_closest() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown policy 'sfj'; did you mean 'sjf'") as info:
        policies.entry("sfj")
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, SchedlabError)
    assert str(info.value).startswith("unknown policy")  # not quoted like a plain KeyError
    assert f"(known: {', '.join(policies.names())})" in str(info.value)


def test_unknown_name_through_make() -> None:
    with pytest.raises(KeyError, match=r"unknown generator 'deeprn'; did you mean 'deeprm'"):
        generators.make("deeprn")


def test_unknown_name_without_close_match() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown policy 'zzzzzz' \(known: ") as info:
        policies.load("zzzzzz")
    assert "did you mean" not in str(info.value)


def test_duplicate_registration_raises() -> None:
    reg = Registry("widget")
    reg.register("spam", "builtins:dict", "a dict")
    with pytest.raises(ValueError, match=r"widget 'Spam' is already registered"):
        reg.register("Spam", "builtins:list")
    assert reg.entry("spam").target == "builtins:dict"
    assert reg.names() == ["spam"]


def test_duplicate_registration_in_global_registry_changes_nothing() -> None:
    before = generators.entry("deeprm")
    with pytest.raises(ValueError, match="already registered"):
        generators.register("deeprm", "builtins:dict")
    assert generators.entry("deeprm") == before


def test_load_and_make_import_lazily() -> None:
    reg = Registry("widget")
    reg.register("od", "collections:OrderedDict")
    cls = reg.load("od")
    assert cls.__name__ == "OrderedDict"
    made = reg.make("od", a=1)
    assert made == {"a": 1}
    assert type(made) is cls


def test_import_does_not_load_numba_or_torch() -> None:
    code = (
        "import schedlab.registry, sys; "
        "assert 'numba' not in sys.modules and 'torch' not in sys.modules, "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'torch'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_import_schedlab_does_not_load_numba_or_torch() -> None:
    code = (
        "import schedlab, sys; schedlab.generators.names(); "
        "assert 'numba' not in sys.modules and 'torch' not in sys.modules"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
