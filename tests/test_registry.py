"""Registries of lazily imported entry points (style.md §8)."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

import pytest

from schedlab.entries import Entry
from schedlab.errors import ImplausibleValueWarning, ParameterError, SchedlabError, UnknownNameError
from schedlab.params import REQUIRED
from schedlab.registry import (
    Registry,
    generators,
    loaders,
    make_policy,
    parse_spec,
    policies,
    policy_key,
    trainers,
)


def test_names_in_registration_order_and_by_tag() -> None:
    assert "deeprm" in generators.names()
    heuristics = policies.names(tag="heuristic")  # the report order: registration order
    assert heuristics[:5] == ["random", "fcfs", "sjf", "packer", "tetris"]  # DeepRM's first
    assert policies.names(tag="baseline") == ["sjf", "packer", "tetris"]
    assert policies.names(tag="learned") == [
        "deeprm",
        "deeprm-plus",
        "liu-rl",
        "jobscore",
        "sb3",
        "sb3-pick",
        "callable",
    ]
    learned = set(policies.names(tag="learned")) - set(policies.names(tag="model:multicluster"))
    assert set(policies.names(tag="model:cluster")) == {*heuristics, *learned}
    assert policies.names(tag="model:multicluster") == ["liu-ran", "liu-rr", "liu-maf", "liu-rl"]
    assert trainers.names() == ["deeprm", "deeprm-plus", "jobscore", "liu"]
    assert policies.names(tag="no-such-tag") == []
    for reg in (generators, policies, loaders, trainers):
        assert [e.name for e in reg] == reg.names()


def test_kinds() -> None:
    kinds = (generators.kind, policies.kind, loaders.kind, trainers.kind)
    assert kinds == ("generator", "policy", "loader", "trainer")


def test_trainers_give_a_trainer_with_its_config_dataclass_and_report() -> None:
    import dataclasses

    from schedlab.params import parameters
    from schedlab.policies.training import Trainer

    for name in trainers.names():
        trainer = trainers.load(name)
        assert isinstance(trainer, Trainer)
        assert dataclasses.is_dataclass(trainer.config)
        assert trainer.budget in parameters(trainer.config)
        assert trainers.load_report(name).__module__.startswith("schedlab.reports.")
    with pytest.raises(ValueError, match="declares no report function"):
        policies.load_report("sjf")


def test_entry_holds_target_and_summary() -> None:
    entry = generators.entry("deeprm")
    assert entry == Entry(
        name="deeprm", target=entry.target, summary=entry.summary, tags=frozenset({"synthetic"})
    )
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


def test_policy_specs_are_parsed_checked_and_named() -> None:
    assert parse_spec("tetris:knob=0.3") == ("tetris", {"knob": 0.3})
    assert parse_spec("deeprm:run/best.pt,greedy=true", positional="checkpoint") == (
        "deeprm",
        {"checkpoint": "run/best.pt", "greedy": True},
    )
    with pytest.raises(ParameterError, match="expected key=value"):
        parse_spec("tetris:knob")
    with pytest.raises(ParameterError, match="'knob' is given twice"):
        parse_spec("tetris:knob=0.1,knob=0.2")
    policy = make_policy("tetris:knob=1")
    assert policy.knob == 1.0
    assert isinstance(policy.knob, float)  # an int is converted for a float parameter
    assert policy.name == "tetris:knob=1"
    assert make_policy("sjf:label=mine").name == "mine"
    assert policy_key(make_policy("tetris")) == policy_key(make_policy("tetris:knob=0.5"))
    assert policy_key(make_policy("tetris")) != policy_key(make_policy("tetris:knob=0.4"))


def _invalid_values(hint: Any, bounds: tuple) -> list[tuple[Any, type]]:
    """Values that must be rejected (ParameterError) or warned about (the warning class)."""
    from schedlab.params import Typical

    base = hint
    if get_origin(hint) in (Union, types.UnionType):
        members = [a for a in get_args(hint) if a is not type(None)]
        base = members[0] if len(members) == 1 else hint
    out: list[tuple[Any, type]] = []
    if get_origin(base) is Literal:
        out.append(("surely-not-a-choice", ParameterError))
    if base in (int, float):
        out.append(("not-a-number", ParameterError))
    if base is bool:
        out.append(("yes", ParameterError))
    for b in bounds:
        kind = ImplausibleValueWarning if isinstance(b, Typical) else ParameterError
        for outside in (
            None if b.ge is None else b.ge - 1,
            b.gt,
            None if b.le is None else b.le + 1,
            b.lt,
        ):
            if outside is not None:
                n = len(get_args(base)) if get_origin(base) is tuple else 0
                out.append(((outside,) * n if n else outside, kind))
    return out


REGISTRIES = {"generator": generators, "policy": policies, "loader": loaders}


@pytest.mark.parametrize(
    ("kind", "name"),
    [(k, n) for k, reg in REGISTRIES.items() for n in reg.names()],
)
def test_every_enumerated_or_bounded_parameter_rejects_invalid_values(kind: str, name: str) -> None:
    registry = REGISTRIES[kind]
    params = registry.parameters(name)
    required = {k: "x" for k, p in params.items() if p.default is REQUIRED}
    for pname, p in params.items():
        for value, outcome in _invalid_values(p.hint, p.bounds):
            given = {**required, pname: value}
            if outcome is ParameterError:
                with pytest.raises(
                    ParameterError, match=rf"parameter '{pname}' of {kind} '{name}'"
                ):
                    registry.check(name, given, where="-p")
            else:
                with pytest.warns(outcome, match=rf"'{pname}' of {kind} '{name}' is usually"):
                    registry.check(name, given)
    with pytest.raises(ParameterError, match=rf"{kind} '{name}' has no parameter 'no_such_param'"):
        registry.check(name, {**required, "no_such_param": 1})


def test_the_generic_parameter_test_is_not_vacuous() -> None:
    from schedlab.params import Typical

    found = {"literal": 0, "interval": 0, "typical": 0}
    for reg in REGISTRIES.values():
        for name in reg.names():
            for p in reg.parameters(name).values():
                found["literal"] += "Literal" in str(p.hint)
                found["typical"] += any(isinstance(b, Typical) for b in p.bounds)
                found["interval"] += any(not isinstance(b, Typical) for b in p.bounds)
    assert all(found.values()), found
    assert "variant" in generators.parameters("deeprm")
    assert "Literal" in str(generators.parameters("deeprm")["arrivals"].hint)
    assert "Literal" in str(loaders.parameters("swf")["memory"].hint)
    assert "options" not in loaders.parameters("swf")  # passed by load_trace itself


def test_required_parameters_and_docs() -> None:
    with pytest.raises(ParameterError, match=r"generator 'fitted' needs parameter 'model'"):
        generators.check("fitted", {})
    doc = generators.parameters("deeprm")["short_prob"].doc
    assert doc == "Probability that a job is short."
