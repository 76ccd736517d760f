"""Bursty arrivals of DeepRM jobs: a generator written as schedlab's built-in ones are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

import numpy as np

from schedlab.loaders.generators.base import Sample
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.params import Interval


@dataclass(frozen=True, kw_only=True, slots=True)
class BurstyGenerator(DeepRMGenerator):
    """DeepRM's jobs in bursts: each step is on with probability ``duty``; on-steps draw
    Poisson(rate / duty) arrivals, so the mean rate, and the offered load, are DeepRM's."""

    name: ClassVar[str] = "bursty"

    duty: Annotated[float, Interval(gt=0, le=1)] = 0.2
    """Fraction of steps on which jobs arrive."""

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Arrival counts per step (shape ``(n_jobsets, window)``), then DeepRM's jobs."""
        on = rng.random((n_jobsets, self.window)) < self.duty
        counts = np.where(on, rng.poisson(rate / self.duty, (n_jobsets, self.window)), 0)
        jobset = np.repeat(np.arange(n_jobsets), counts.sum(axis=1))
        arrival = np.repeat(np.tile(np.arange(self.window), n_jobsets), counts.ravel())
        duration, demand = self.sample_jobs(rng, arrival.size)
        return Sample(jobset=jobset, arrival=arrival, duration=duration, demand=demand)
