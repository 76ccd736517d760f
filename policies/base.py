"""The policy protocol shared by heuristics and learned policies (style.md §5)."""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schedlab.simulator.engine import Engine


@runtime_checkable
class Policy(Protocol):
    """Maps the engine state (through a view) to a slot index; ``-1`` is the void action."""

    name: str

    def act(self, state: Engine, *, mask: np.ndarray) -> int:
        """Choose a slot among ``mask`` (bool, shape ``(M,)``), or -1 for the void action."""
        ...

    def reset(self, *, seed: int | None = None) -> None:
        """Prepare for a new episode (jobset); randomised policies reseed here."""
        ...

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters, for reports and reproducibility."""
        ...


class ParamsMixin:
    """scikit-learn style ``get_params`` by introspecting the keyword-only constructor."""

    def get_params(self) -> dict[str, Any]:
        """Constructor arguments as stored on the instance."""
        sig = inspect.signature(type(self).__init__)
        return {
            name: getattr(self, name)
            for name, param in sig.parameters.items()
            if param.kind is inspect.Parameter.KEYWORD_ONLY
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
