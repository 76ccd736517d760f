"""The policy contract shared by heuristics and learned policies (docs/architecture.md).

A policy observes a model through its ``view`` and answers every decision of a batch of
environments at once with one action convention: ``0`` is void (let time advance), ``a ≥ 1`` a
(job, target) pair; on the cluster model ``a = 1 + i·M + q`` places the job of visible slot ``q``
on machine ``i``. Evaluation (:func:`schedlab.simulator.run.simulate`), training and imitation
drive every policy through :meth:`Policy.act_batch`; heuristics may also expose compiled
functions the fast paths take as arguments (:class:`schedlab.policies.heuristics.Heuristic`).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schedlab.simulator.model import View


@runtime_checkable
class Policy(Protocol):
    """What every registered policy provides."""

    name: str
    """Label in results (a policy made with parameters is named by its spec)."""
    models: frozenset[str]
    """Model kinds it can act on (:attr:`schedlab.simulator.model.Model.kind`)."""

    @property
    def view(self) -> View:
        """The view it observes."""
        ...

    def reset(self, *, seed: int | None = None) -> None:
        """Prepare for a new batch of episodes; randomised policies reseed here (``seed`` is the
        jobset id when one jobset is run at a time)."""
        ...

    def act_batch(self, obs: Any, *, mask: np.ndarray) -> np.ndarray:
        """Actions, int64, shape ``(n,)``, for ``n`` observations whose valid actions are
        ``mask`` (bool, shape ``(n, n_actions)``); an action outside ``mask`` acts as void."""
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
