"""Workloads for schedlab: trace loaders, synthetic generators and the fitted workload model.

Sub-packages: :mod:`~schedlab.loaders.traces` (format parsers, the shared finishing steps, the
drop report, :func:`load_trace`), :mod:`~schedlab.loaders.generators` (synthetic generators)
and :mod:`~schedlab.loaders.workload` (the fitted workload model). The names below are
imported lazily, so importing this package stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "DropReport": "schedlab.loaders.traces.drop_report",
    "LoadResult": "schedlab.loaders.traces.drop_report",
    "TraceOptions": "schedlab.loaders.traces.transform",
    "load_trace": "schedlab.loaders.traces.load",
    "SyntheticGenerator": "schedlab.loaders.generators.base",
    "check_generator": "schedlab.loaders.check",
    "check_loader": "schedlab.loaders.check",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'schedlab.loaders' has no attribute {name!r}"
    raise AttributeError(msg)
