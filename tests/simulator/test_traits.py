"""The declared part of the policy contract: :class:`Traits`, read by :func:`traits` only."""

from __future__ import annotations

import pytest

from schedlab.errors import ParameterError
from schedlab.registry import make_policy
from schedlab.simulator.model import Traits, traits


class Bare:
    name = "bare"


def test_a_policy_that_declares_nothing_gets_the_defaults() -> None:
    assert traits(Bare()) == Traits()


def test_built_in_policies_declare_theirs() -> None:
    assert traits(make_policy("sjf+easy")) == Traits(queue="easy", static=True)
    assert traits(make_policy("wfp3+conservative")).queue == "conservative"
    assert traits(make_policy("cpf")).sees == "rank"


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("queue", "fifo", "queue 'fifo' is not one of"),
        ("sees", "all", "sees 'all' is not one of"),
        ("clairvoyant", "yes", "clairvoyant and static are booleans"),
    ],
)
def test_a_wrong_declaration_is_one_line_naming_the_policy(
    field: str, value: str, match: str
) -> None:
    bad = Bare()
    setattr(bad, field, value)
    with pytest.raises(ParameterError, match=f"policy 'bare': {match}"):
        traits(bad)
