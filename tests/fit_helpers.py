"""Shared helpers of the workload-fitting tests: known models and quantised samples.

Import as ``from tests.fit_helpers import ...``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.loaders.workload import families
from schedlab.loaders.workload.components import ArrivalModel, DemandModel, DurationModel
from schedlab.loaders.workload.model import WorkloadModel

PROFILE = tuple(float(x) for x in 1 + 0.8 * np.sin(2 * np.pi * (np.arange(24) + 0.5) / 24))
"""A smooth daily profile (mean 1): peak 1.8x at hour 6, trough 0.2x at hour 18."""


def quantised(family: str, params: dict[str, Any], n: int, seed: int) -> np.ndarray:
    """``n`` draws of a family quantised like the loaders: ``max(1, ceil(x))`` steps."""
    rng = np.random.default_rng(seed)
    x = families.build(family, params).rvs(size=n, random_state=rng)
    return np.maximum(1, np.ceil(x)).astype(np.int64)


def known_model(
    *,
    family: str = "lognormal",
    params: dict[str, Any] | None = None,
    kind: str = "poisson",
    batches: bool = False,
    window: int = 200,
    step: float | None = 60.0,
) -> WorkloadModel:
    """A hand-written model: 2 resources of 10 units, demands tied to two duration classes."""
    demands = DemandModel(
        class_edges=(10,),
        values=(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[4.0, 4.0], [1.0, 1.0], [6.0, 2.0]])),
        probs=(np.array([0.7, 0.3]), np.array([0.5, 0.3, 0.2])),
        coverage=(1.0, 1.0),
    )
    arrivals = ArrivalModel(
        kind=kind,  # type: ignore[arg-type]
        rate_per_step=0.5,
        period_steps=86_400 / step if kind == "nhpp" and step else None,
        profile=PROFILE if kind == "nhpp" else (),
        batch_sizes=(1, 2, 5) if batches else (),
        batch_probs=(0.6, 0.3, 0.1) if batches else (),
    )
    return WorkloadModel(
        resources=("cpu", "mem"),
        capacity=(10.0, 10.0),
        units=("core", "GB"),
        time_step_seconds=step,
        window=window,
        durations=DurationModel(
            family=family, params=params or {"mu": 2.0, "sigma": 1.0}, max_steps=2000
        ),
        arrivals=arrivals,
        demands=demands,
        source={"test": True},
    )
