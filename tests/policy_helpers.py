"""Toy policies for tests: the members of the Policy protocol a stateless toy shares."""

from __future__ import annotations

from typing import Any


class StatelessPolicy:
    """A policy without parameters or state: nothing to reset, no parameters to report.

    Subclasses give ``name``, ``models``, ``view`` and ``act_batch``.
    """

    def reset(self, *, seed: int | None = None) -> None:
        """Nothing to prepare: the policy keeps no state between episodes."""

    def get_params(self) -> dict[str, Any]:
        """No constructor parameters."""
        return {}
