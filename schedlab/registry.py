"""Registries map names to lazily imported entry points (Gymnasium's ``register``/``make``).

One registry per kind (generators, loaders, policies); ``import schedlab`` imports none of the
entry points, so torch or numba are loaded only when a name that needs them is made.
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from schedlab.errors import UnknownNameError


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """A registered name."""

    name: str
    """The name users type (lower case)."""
    target: str
    """``"module.path:attribute"`` of the class or function to call."""
    summary: str = ""
    """One line for ``--help`` and listings."""
    positional: str | None = None
    """Keyword that a bare first option of a spec fills (``deeprm:run/best.pt`` -> checkpoint)."""


@dataclass(slots=True)
class Registry:
    """Name -> lazily imported callable, for one kind of object."""

    kind: str
    _entries: dict[str, Entry] = field(default_factory=dict)

    def register(
        self, name: str, target: str, summary: str = "", *, positional: str | None = None
    ) -> None:
        """Register ``target`` (``"module:attr"``) under ``name``; names are unique."""
        key = name.lower()
        if key in self._entries:
            msg = f"{self.kind} {name!r} is already registered"
            raise ValueError(msg)
        self._entries[key] = Entry(name=key, target=target, summary=summary, positional=positional)

    def entry(self, name: str) -> Entry:
        """The entry for ``name``; an unknown name suggests the closest known ones."""
        key = name.lower()
        if key not in self._entries:
            close = difflib.get_close_matches(key, list(self._entries), n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            msg = f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            raise UnknownNameError(msg)
        return self._entries[key]

    def load(self, name: str) -> Callable[..., Any]:
        """Import and return the callable registered as ``name``."""
        module, _, attr = self.entry(name).target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def make(self, name: str, **kwargs: Any) -> Any:
        """Call the entry point registered as ``name`` with ``kwargs``."""
        return self.load(name)(**kwargs)

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries[n] for n in self.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._entries


generators = Registry("generator")
policies = Registry("policy")
loaders = Registry("loader")

generators.register(
    "deeprm",
    "schedlab.loaders.generators.deeprm_workload:DeepRMGenerator",
    "DeepRM (Mao et al. 2016): Bernoulli/binomial arrivals, bimodal durations, dominant demands",
)
generators.register(
    "poisson",
    "schedlab.loaders.generators.poisson:PoissonGenerator",
    "DeepRM_Plus: Poisson(λ) arrivals per step, DeepRM's job model (load = 1.845·λ)",
)
generators.register(
    "liu-uniform",
    "schedlab.loaders.generators.liu:LiuUniformGenerator",
    "Liu et al.: intervals uniform on a..b steps (1..33), scaled to the load; DeepRM jobs",
)
generators.register(
    "liu-bernoulli",
    "schedlab.loaders.generators.liu:LiuBernoulliGenerator",
    "Liu et al.: intervals b with probability p else a (33/1, p=0.5), scaled; DeepRM jobs",
)
generators.register(
    "liu-beta",
    "schedlab.loaders.generators.liu:LiuBetaGenerator",
    "Liu et al.: intervals a + (b−a)·Beta(alpha, beta) (2, 2), scaled; DeepRM jobs",
)
generators.register(
    "fitted",
    "schedlab.loaders.generators.fitted:FittedGenerator",
    "a workload model fitted to a trace by `schedlab fit` (--model fit/model.json)",
)
for _name, _cls, _summary in [
    ("random", "RandomPolicy", "uniformly random job among those that fit now"),
    ("fcfs", "FCFS", "first come, first served among jobs that fit now"),
    ("sjf", "SJF", "shortest job first (score 1/duration)"),
    ("packer", "Packer", "alignment of demand with free resources (Tetris packing score)"),
    ("tetris", "TetrisStar", "Tetris*: knob-weighted packing + shortest-job score"),
    ("hrrn", "HRRN", "highest response ratio next ((wait + duration) / duration)"),
]:
    policies.register(_name, f"schedlab.policies.heuristics:{_cls}", _summary)
policies.register(
    "deeprm",
    "schedlab.policies.deeprm:DeepRMPolicy",
    "DeepRM policy network trained by `schedlab train` (deeprm:PATH.pt or a shipped name)",
    positional="checkpoint",
)


def parse_spec(spec: str, *, positional: str | None = None) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and keyword arguments.

    Values are read as JSON where they parse (numbers, booleans), else kept as strings, e.g.
    ``"tetris:knob=0.3"`` -> ``("tetris", {"knob": 0.3})``. When ``positional`` names a keyword,
    a first option without ``=`` is its value: ``"deeprm:runs/a/best.pt"`` with
    ``positional="checkpoint"`` -> ``("deeprm", {"checkpoint": "runs/a/best.pt"})``.
    """
    name, _, rest = spec.partition(":")
    kwargs: dict[str, Any] = {}
    for i, item in enumerate(filter(None, rest.split(","))):
        key, eq, raw = item.partition("=")
        if not eq and i == 0 and positional is not None:
            kwargs[positional] = item.strip()
            continue
        if not eq or not key.strip():
            msg = f"bad option {item!r} in {spec!r}: expected key=value"
            raise ValueError(msg)
        try:
            kwargs[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key.strip()] = raw
    return name.strip(), kwargs


def make_policy(spec: str) -> Any:
    """A policy from a spec such as ``"sjf"`` or ``"tetris:knob=0.3"``.

    A policy made with parameters is named by its spec, so variants stay apart in results;
    ``label=NAME`` names it explicitly (``deeprm:runs/a/best.pt,label=deeprm-0.7``).
    """
    name = spec.partition(":")[0].strip()
    positional = policies.entry(name).positional if name in policies else None
    name, kwargs = parse_spec(spec, positional=positional)
    label = kwargs.pop("label", None)
    try:
        policy = policies.make(name, **kwargs)
    except TypeError as exc:
        msg = f"policy {spec!r}: {exc}"
        raise ValueError(msg) from exc
    if label is not None:
        policy.name = str(label)
    elif kwargs:
        policy.name = spec
    return policy


for _name, _target, _summary in [
    ("alibaba2018", "alibaba2018:read_alibaba2018", "Alibaba cluster-trace-v2018 batch_task"),
    ("alibaba2017", "alibaba2017:read_alibaba2017", "Alibaba cluster-trace-v2017 batch_task"),
    ("swf", "swf:read_swf", "Standard Workload Format (Parallel Workloads Archive)"),
]:
    loaders.register(_name, f"schedlab.loaders.traces.{_target}", _summary)
