"""A heuristic added as a user would add one: this one file (a score and a class) plus one
registration call, ``policies.register("ljf", "tests.policies.example_heuristic:LJF")`` (see
``tests/policies/test_check.py``). Nothing in ``simulator/`` changes and no kernel recompiles."""

from __future__ import annotations

from schedlab.policies.heuristics import Heuristic, score_function


@score_function
def _longest(duration, arrival, index, now, knob, alignment, capacity2, size):
    return float(duration)


class LJF(Heuristic):
    """Longest job first: score ``duration`` (static, so the whole queue keeps it in a tree)."""

    key, score, static = "ljf", _longest, True
