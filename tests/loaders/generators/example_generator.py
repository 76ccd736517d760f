"""A generator added as a user would add one: this one file (a class) plus one registration
call, ``generators.register("steady", "tests.loaders.generators.example_generator:Steady")``
(see ``tests/loaders/test_check.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.loaders.generators.base import Sample, SyntheticGenerator


@dataclass(frozen=True, kw_only=True, slots=True)
class Steady(SyntheticGenerator):
    """Poisson arrivals of identical jobs: ``duration`` steps, ``demand`` of one resource."""

    name: ClassVar[str] = "steady"

    window: int = 40
    """Arrival window in steps."""
    duration: int = 5
    """Duration of every job, in steps."""
    demand: float = 2.0
    """Demand of every job, of a capacity of 10."""

    def resources(self) -> tuple[str, ...]:
        """One resource, ``cpu``."""
        return ("cpu",)

    def capacity(self) -> tuple[float, ...]:
        """10 units."""
        return (10.0,)

    def arrival_window(self) -> int:
        """The ``window`` parameter."""
        return self.window

    def load_per_rate(self) -> float:
        """``duration · demand / capacity``."""
        return self.duration * self.demand / self.capacity()[0]

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Poisson(rate) arrivals per step over the window."""
        counts = rng.poisson(rate, size=(n_jobsets, self.window))
        jobset = np.repeat(np.arange(n_jobsets), counts.sum(axis=1))
        arrival = np.repeat(np.tile(np.arange(self.window), n_jobsets), counts.ravel())
        n = arrival.size
        return Sample(jobset, arrival, np.full(n, self.duration), np.full((n, 1), self.demand))
