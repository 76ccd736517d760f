"""A registered name (:class:`Entry`) and what a plug-in or a referenced object says of itself
(:func:`described`): the pieces of :mod:`schedlab.registry` that know nothing of registries.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import sys
from dataclasses import dataclass, replace
from typing import Any


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
    tags: frozenset[str] = frozenset()
    """What the entry is, for selections: ``heuristic``/``learned``, ``model:cluster`` (a simulator
    model it supports), ``baseline`` (a heuristic learned policies are compared with) ..."""
    config: str | None = None
    """``"module:attribute"`` of the config dataclass of the entry (model kinds: loaded
    without importing the simulator, for spec validation)."""
    report: str | None = None
    """``"module:attribute"`` of the function drawing a result's report (trainers:
    ``report(result, config_dict) -> Path``); reports live above policies, so the CLI calls it."""
    origin: str = "schedlab"
    """Where the name comes from: ``schedlab`` (built in), ``plugin DIST VERSION`` (an entry
    point of that installed distribution) or ``reference`` (a ``package.module:attr`` name)."""
    extra: str | None = None
    """The extra of schedlab the entry needs (``learned``: torch; :mod:`schedlab.extras`), None
    for the core: without it, using the name is one line saying how to install it."""


def import_target(target: str) -> Any:
    """The object ``"package.module:attr"`` names (``attr`` may be dotted: ``Class.method``)."""
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def origin_of(ep: importlib.metadata.EntryPoint) -> str:
    """``plugin DIST VERSION`` of an entry point (``plugin ?`` without distribution data)."""
    dist = ep.dist
    return "plugin ?" if dist is None else f"plugin {dist.name} {dist.version}"


def described(entry: Entry) -> Entry:
    """A plug-in or reference ``entry`` with what its object says of itself: ``summary``
    (else its docstring's first line), ``tags``, ``models`` (as ``model:<kind>`` tags) and
    ``positional``; always tagged ``plugin``."""
    obj = import_target(entry.target)
    summary = getattr(obj, "summary", None)
    if not isinstance(summary, str):
        owner = obj  # an instance (a trainer's Trainer) is described by its module
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            owner = sys.modules.get(entry.target.partition(":")[0])
        doc = getattr(owner, "__dict__", {}).get("__doc__")  # its own, not a base class's
        if not isinstance(doc, str) or doc.startswith(f"{getattr(owner, '__name__', '')}("):
            doc = ""  # (a dataclass without a docstring gets its signature as one)
        first = inspect.cleandoc(doc).split("\n\n")[0]  # the first paragraph, plain text
        summary = " ".join(first.replace("``", "").split())
    tags = {"plugin", *_strings(getattr(obj, "tags", ()))}
    tags |= {f"model:{m}" for m in _strings(getattr(obj, "models", ()))}
    name = getattr(obj, "name", None)  # a model kind registers under its own name
    if isinstance(name, str) and hasattr(obj, "from_jobset"):
        tags.add(f"model:{name}")
    positional = getattr(obj, "positional", None)
    return replace(
        entry,
        summary=summary,
        tags=frozenset(tags),
        positional=positional if isinstance(positional, str) else None,
    )


def _strings(value: Any) -> list[str]:
    """The strings of a tag-like attribute (a string, or a collection of them)."""
    if isinstance(value, str):
        return [value]
    try:
        return [v for v in value if isinstance(v, str)]
    except TypeError:
        return []
