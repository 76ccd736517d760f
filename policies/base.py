"""The policy contract shared by heuristics and learned policies (docs/architecture.md).

The :class:`Policy` protocol itself is declared beside the model's, in
:mod:`schedlab.simulator.model` (the simulator drives policies through it and may not import
this layer); it is re-exported here. :class:`ParamsMixin` gives every policy scikit-learn's
``get_params``; :class:`Reloaded` and :class:`Sampling` are what policies that load something
on first use, or sample their actions, share; :func:`policy_fields` writes a policy's
keyword-only constructor from its annotated fields.

A policy observes a model through its ``view`` and answers every decision of a batch of
environments at once with one action convention: ``0`` is void (let time advance), ``a ≥ 1`` a
(job, target) pair; on the cluster model ``a = 1 + i·M + q`` places the job of visible slot ``q``
on machine ``i``. Evaluation (:func:`schedlab.simulator.run.simulate`), training and imitation
drive every policy through :meth:`Policy.act_batch`; heuristics may also expose compiled
functions the fast paths take as arguments (:class:`schedlab.policies.heuristics.Heuristic`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, dataclass_transform

import numpy as np

from schedlab.simulator.model import Policy

__all__ = ["ParamsMixin", "Policy", "QueueNamed", "Reloaded", "Sampling", "policy_fields"]

T = TypeVar("T")


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


class QueueNamed:
    """``name`` of an agent acting under a queue discipline: its ``key``, with ``+queue``
    unless greedy (``deeprm+easy``), or a label given by assignment."""

    key: ClassVar[str]
    queue: str

    @property
    def name(self) -> str:
        """``key`` or ``key+queue``, or the label assigned."""
        label = getattr(self, "_label", None)
        if label is not None:
            return str(label)
        return self.key if self.queue == "greedy" else f"{self.key}+{self.queue}"

    @name.setter
    def name(self, value: str) -> None:
        self._label = value


class Reloaded:
    """A policy holding what it loads or imports on first use (a network, a function): the
    attributes named in ``transient`` are dropped when it is pickled (sent to a worker) and
    rebuilt there on first use."""

    transient: ClassVar[tuple[str, ...]] = ("_loaded",)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, **dict.fromkeys(self.transient)}


class Sampling:
    """A policy drawing from the stream ``default_rng(seed)``, restarted for each jobset."""

    seed: int
    _rng: np.random.Generator

    def reset(self, *, seed: int | None = None) -> None:
        """Restart the stream, from ``[self.seed, seed]`` (seed = jobset id) when given."""
        self._rng = np.random.default_rng(self.seed if seed is None else [self.seed, seed])


@dataclass_transform(kw_only_default=True, eq_default=False)
def policy_fields(cls: type[T]) -> type[T]:
    """Class decorator: the keyword-only ``__init__`` of a policy whose parameters are its
    annotated fields (in declaration order, as :class:`ParamsMixin` and
    :func:`schedlab.params.parameters` read them), storing each as an attribute of that name;
    what it sets up besides goes in ``__post_init__``. Equality stays identity (policies are
    hashed, e.g. as dictionary keys) and the repr stays :class:`ParamsMixin`'s."""
    return dataclass(eq=False, repr=False, kw_only=True)(cls)
