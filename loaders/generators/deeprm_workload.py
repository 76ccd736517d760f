"""DeepRM workload generator (Mao et al. 2016, §4.1, as its reference code behaves: design.md §8).

Workload
--------
* ``d`` resources (default 2), each of ``capacity`` slots (10 as in the reference code).
* Arrivals in each of ``arrival_window`` steps (50): the number of jobs arriving at a step is
  ``Binomial(n_max, rate / n_max)`` with ``n_max = ceil(rate)``. For ``rate <= 1`` this is
  exactly the reference's Bernoulli process (one job with probability ``rate``); above 1 it lets
  more than one job arrive per step so every load the papers plot (up to 190%) can be generated.
  ``arrivals="poisson"`` uses ``Poisson(rate)`` counts instead. Both have mean ``rate`` jobs per
  step.
* Durations: with probability 0.8 uniform in {1, 2, 3}, else uniform in {10, ..., 15} steps.
* Demands: one dominant resource chosen uniformly; it demands uniform {5, ..., 10} slots, every
  other resource uniform {1, 2} slots. With capacity 10 that is 0.5–1.0 r and 0.1–0.2 r (the
  reference code); ``variant="paper"`` uses capacity 20, i.e. the paper text's 0.25–0.5 r and
  0.05–0.1 r.

Load formula
------------
Offered load per resource = rate · E[duration] · E[demand per resource] / capacity, with
E[duration] = 0.8·2 + 0.2·12.5 = 4.1 and E[demand per resource] = (7.5 + (d−1)·1.5)/d = 4.5 for
d = 2, so load = 1.845 · rate for the reference geometry (0.9225 · rate for ``variant="paper"``).
The generator inverts it: ``rate = load / 1.845``. The realised load of a jobset is measured by
:func:`schedlab.jobset.offered_load` (work over capacity × ``arrival_window``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import numpy as np

from schedlab.loaders.generators.base import Sample, SyntheticGenerator
from schedlab.params import Interval


def _mean(lo_hi: tuple[int, int]) -> float:
    return (lo_hi[0] + lo_hi[1]) / 2


@dataclass(frozen=True, kw_only=True, slots=True)
class DeepRMGenerator(SyntheticGenerator):
    """Generate DeepRM jobsets at a target offered load."""

    name: ClassVar[str] = "deeprm"

    n_resources: Annotated[int, Interval(ge=1)] = 2
    """Number of resource types d."""
    variant: Literal["code", "paper"] = "code"
    """``"code"``: capacity 10 slots (published numbers); ``"paper"``: capacity 20 slots."""
    res_slot: Annotated[int, Interval(ge=1)] | None = None
    """Slots per resource (the reference code's ``res_slot``), replacing the variant's. Demands
    keep their ranges, so more slots are a bigger cluster for the same jobs (Guo et al. 2021,
    Fig. 10; give rates, not loads, to keep the job stream)."""
    window: Annotated[int, Interval(ge=1)] = 50
    """Steps during which jobs arrive (the reference's ``simu_len``)."""
    short_prob: Annotated[float, Interval(ge=0, le=1)] = 0.8
    """Probability that a job is short."""
    short_durations: Annotated[tuple[int, int], Interval(ge=1)] = (1, 3)
    """Inclusive range of short durations, in steps."""
    long_durations: Annotated[tuple[int, int], Interval(ge=1)] = (10, 15)
    """Inclusive range of long durations, in steps."""
    dominant_demand: Annotated[tuple[int, int], Interval(ge=0)] = (5, 10)
    """Inclusive range of the dominant resource's demand, in slots."""
    other_demand: Annotated[tuple[int, int], Interval(ge=0)] = (1, 2)
    """Inclusive range of every other resource's demand, in slots."""
    arrivals: Literal["bernoulli", "poisson"] = "bernoulli"
    """Arrival counts per step: binomial (Bernoulli when rate <= 1) or Poisson."""
    machines: int = 1
    """Identical machines of ``capacity`` each (Chen et al. 2017); the load refers to all of
    them."""

    def resources(self) -> tuple[str, ...]:
        """``cpu``, ``mem`` for d = 2, else ``r0 .. r{d-1}``."""
        d = self.n_resources
        return ("cpu", "mem") if d == 2 else tuple(f"r{k}" for k in range(d))

    def capacity(self) -> tuple[float, ...]:
        """``res_slot`` slots per resource, else 10 (``"code"``) or 20 (``"paper"``)."""
        slots = self.res_slot or (10 if self.variant == "code" else 20)
        return (float(slots),) * self.n_resources

    def arrival_window(self) -> int:
        """The ``window`` parameter."""
        return self.window

    def length_buckets(self) -> dict[str, tuple[int, int]]:
        """Short and long duration ranges."""
        return {"short": self.short_durations, "long": self.long_durations}

    def load_per_rate(self) -> float:
        """Offered load produced by one arrival per step on average (1.845 for the preset)."""
        p = self.short_prob
        e_dur = p * _mean(self.short_durations) + (1 - p) * _mean(self.long_durations)
        d = self.n_resources
        e_dem = (_mean(self.dominant_demand) + (d - 1) * _mean(self.other_demand)) / d
        return e_dur * e_dem / self.capacity()[0]

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Draw arrivals per step, then durations and demands per job (vectorised)."""
        shape = (n_jobsets, self.window)
        if self.arrivals == "poisson":
            counts = rng.poisson(rate, size=shape)
        else:
            n_max = max(1, math.ceil(rate))
            counts = rng.binomial(n_max, rate / n_max, size=shape)
        jobset = np.repeat(np.arange(n_jobsets), counts.sum(axis=1))
        arrival = np.repeat(np.tile(np.arange(self.window), n_jobsets), counts.ravel())
        duration, demand = self.sample_jobs(rng, int(counts.sum()))
        return Sample(jobset, arrival, duration, demand)

    def sample_jobs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Durations (int, ``(n,)``, steps) and demands (float, ``(n, d)``, slots) of n jobs."""
        short = rng.random(n) < self.short_prob
        duration = np.where(
            short,
            rng.integers(self.short_durations[0], self.short_durations[1] + 1, n),
            rng.integers(self.long_durations[0], self.long_durations[1] + 1, n),
        )
        d = self.n_resources
        demand = rng.integers(self.other_demand[0], self.other_demand[1] + 1, (n, d))
        dominant = rng.integers(0, d, n)
        demand[np.arange(n), dominant] = rng.integers(
            self.dominant_demand[0], self.dominant_demand[1] + 1, n
        )
        return duration, demand.astype(np.float64)
