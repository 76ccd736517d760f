"""schedlab: evaluate cluster job schedulers on real traces and synthetic workloads.

The public API is imported lazily so ``import schedlab`` stays light (no numba, no torch)::

    import schedlab
    js = schedlab.generators.make("deeprm").generate(0.7, n_jobsets=100, seed=1)
    res = schedlab.simulate(js, [schedlab.policies.make("sjf"), schedlab.policies.make("tetris")])

``schedlab.generators`` and ``schedlab.trainers`` are registries; ``schedlab.policies`` and
``schedlab.loaders`` are the subpackages, which front their registries (``make``, ``names``,
``entry``, ``load``, ``register``): importing a submodule such as ``schedlab.policies.heuristics``
rebinds nothing.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from schedlab import loaders, policies
from schedlab.errors import (
    InfeasibleJobError,
    JobSetError,
    ParameterError,
    SchedlabError,
    SimulationError,
    TraceFormatError,
    UnknownNameError,
)
from schedlab.registry import generators, trainers
from schedlab.simulator import registration as _registration

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
    "fit": "schedlab.evaluation.fitting.workload",
    "compare": "schedlab.reports.notebook",
    "WorkloadModel": "schedlab.loaders.workload.model",
}

__all__ = [
    "ClusterConfig",
    "InfeasibleJobError",
    "JobSet",
    "JobSetError",
    "JobSetMeta",
    "ParameterError",
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
    "trainers",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'schedlab' has no attribute {name!r}"
    raise AttributeError(msg)


_registration.install()  # gymnasium.make("schedlab/DeepRM-v0") in any import order
