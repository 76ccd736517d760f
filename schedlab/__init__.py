"""schedlab: evaluate cluster job schedulers on real traces and synthetic workloads.

The public API is imported lazily so ``import schedlab`` stays light (no numba, no torch)::

    import schedlab
    js = schedlab.generators.make("deeprm").generate(0.7, n_jobsets=100, seed=1)
    res = schedlab.simulate(js, [schedlab.policies.make("sjf"), schedlab.policies.make("tetris")])
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from schedlab.errors import (
    InfeasibleJobError,
    JobSetError,
    SchedlabError,
    SimulationError,
    TraceFormatError,
    UnknownNameError,
)
from schedlab.registry import generators, loaders, policies

try:
    __version__ = version("schedlab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_LAZY = {
    "JobSet": "schedlab.jobset",
    "JobSetMeta": "schedlab.jobset",
    "offered_load": "schedlab.jobset",
    "Results": "schedlab.results",
    "ClusterConfig": "schedlab.simulator.config",
    "simulate": "schedlab.simulator.run",
    "write_report": "schedlab.reports.render",
    "fit": "schedlab.evaluation.fit",
    "compare": "schedlab.reports.notebook",
    "WorkloadModel": "schedlab.loaders.workload_model",
}

__all__ = [
    "ClusterConfig",
    "InfeasibleJobError",
    "JobSet",
    "JobSetError",
    "JobSetMeta",
    "Results",
    "SchedlabError",
    "SimulationError",
    "TraceFormatError",
    "UnknownNameError",
    "WorkloadModel",
    "__version__",
    "compare",
    "fit",
    "generators",
    "loaders",
    "offered_load",
    "policies",
    "simulate",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'schedlab' has no attribute {name!r}"
    raise AttributeError(msg)
