"""Workloads for schedlab: trace loaders, synthetic generators and the fitted workload model.

Sub-packages: :mod:`~schedlab.loaders.traces` (format parsers, the shared finishing steps, the
drop report, :func:`load_trace`), :mod:`~schedlab.loaders.generators` (synthetic generators)
and :mod:`~schedlab.loaders.workload` (the fitted workload model). The names below are
imported lazily, so importing this package stays light.

The package also fronts the loader registry: ``schedlab.loaders.load("swf")``, ``names()``,
``entry``, ``make`` and ``register`` are those of :data:`schedlab.registry.loaders`, so the
documented API works whether ``schedlab.loaders`` was reached as the registry or as this package.
"""

from __future__ import annotations

import importlib
from typing import Any

from schedlab.registry import loaders as registry

entry, load, make, names, register = registry.front

_LAZY = {
    "DropReport": "schedlab.loaders.traces.drop_report",
    "LoadResult": "schedlab.loaders.traces.drop_report",
    "TraceOptions": "schedlab.loaders.traces.options",
    "load_trace": "schedlab.loaders.traces.load",
    "SyntheticGenerator": "schedlab.loaders.generators.base",
    "check_generator": "schedlab.loaders.check",
    "check_loader": "schedlab.loaders.check",
}

__all__ = sorted([*_LAZY, "entry", "load", "make", "names", "register"])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'schedlab.loaders' has no attribute {name!r}"
    raise AttributeError(msg)
