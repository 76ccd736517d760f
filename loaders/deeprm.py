"""DeepRM workload generator (seed 000 §4.1, as its reference code behaves: design.md §8).

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
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import polars as pl

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.rng import SeedLike, as_generator


@dataclass(frozen=True, kw_only=True, slots=True)
class DeepRMGenerator:
    """Generate DeepRM jobsets at a target offered load."""

    n_resources: int = 2
    """Number of resource types d."""
    variant: Literal["code", "paper"] = "code"
    """``"code"``: capacity 10 slots (published numbers); ``"paper"``: capacity 20 slots."""
    arrival_window: int = 50
    """Steps during which jobs arrive (the reference's ``simu_len``)."""
    short_prob: float = 0.8
    """Probability that a job is short."""
    short_durations: tuple[int, int] = (1, 3)
    """Inclusive range of short durations, in steps."""
    long_durations: tuple[int, int] = (10, 15)
    """Inclusive range of long durations, in steps."""
    dominant_demand: tuple[int, int] = (5, 10)
    """Inclusive range of the dominant resource's demand, in slots."""
    other_demand: tuple[int, int] = (1, 2)
    """Inclusive range of every other resource's demand, in slots."""
    arrivals: Literal["bernoulli", "poisson"] = "bernoulli"
    """Arrival counts per step: binomial (Bernoulli when rate <= 1) or Poisson."""

    @property
    def capacity(self) -> float:
        """Slots per resource."""
        return 10.0 if self.variant == "code" else 20.0

    def load_per_rate(self) -> float:
        """Offered load produced by one arrival per step on average (1.845 for the preset)."""
        mean = lambda lo_hi: (lo_hi[0] + lo_hi[1]) / 2  # noqa: E731
        e_dur = self.short_prob * mean(self.short_durations) + (1 - self.short_prob) * mean(
            self.long_durations
        )
        d = self.n_resources
        e_dem = (mean(self.dominant_demand) + (d - 1) * mean(self.other_demand)) / d
        return e_dur * e_dem / self.capacity

    def rate_for_load(self, load: float) -> float:
        """Mean arrivals per step that give offered ``load`` (load = rate · load_per_rate)."""
        if not load > 0:
            msg = f"target load must be > 0, got {load}"
            raise ValueError(msg)
        return load / self.load_per_rate()

    def generate(self, load: float, *, n_jobsets: int, seed: SeedLike, first_id: int = 0) -> JobSet:
        """Generate ``n_jobsets`` jobsets at offered ``load``, numbered from ``first_id``.

        Jobsets with no arrival (likely at low load) are kept in the provenance count
        ``empty_jobsets``; they have no rows.
        """
        rng = as_generator(seed)
        jobs = self._jobs(rng, load, n_jobsets, first_id)
        return JobSet.create(jobs, self._meta(load, n_jobsets, seed, jobs))

    def generate_sweep(self, loads: list[float], *, n_jobsets: int, seed: int) -> JobSet:
        """One JobSet holding ``n_jobsets`` jobsets per load; load ``i`` uses child seed ``i``.

        Child streams come from ``SeedSequence(seed).spawn(len(loads))``, so a jobset is determined
        by ``(seed, position of its load, n_jobsets)``.
        """
        children = np.random.SeedSequence(seed).spawn(len(loads))
        frames = [
            self._jobs(np.random.default_rng(ss), load, n_jobsets, i * n_jobsets)
            for i, (load, ss) in enumerate(zip(loads, children, strict=True))
        ]
        jobs = pl.concat(frames)
        return JobSet.create(jobs, self._meta(loads, n_jobsets, seed, jobs))

    def _jobs(
        self, rng: np.random.Generator, load: float, n_jobsets: int, first_id: int
    ) -> pl.DataFrame:
        rate = self.rate_for_load(load)
        shape = (n_jobsets, self.arrival_window)
        if self.arrivals == "poisson":
            counts = rng.poisson(rate, size=shape)
        else:
            n_max = max(1, math.ceil(rate))
            counts = rng.binomial(n_max, rate / n_max, size=shape)
        per_set = counts.sum(axis=1)
        n = int(per_set.sum())
        jobset = np.repeat(np.arange(first_id, first_id + n_jobsets, dtype=np.int32), per_set)
        arrival = np.repeat(np.tile(np.arange(self.arrival_window), n_jobsets), counts.ravel())
        starts = np.cumsum(per_set) - per_set
        job_id = np.arange(n) - np.repeat(starts, per_set)
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
        return pl.DataFrame(
            {
                "jobset": jobset,
                "job_id": job_id.astype(np.int64),
                "arrival": arrival.astype(np.int64),
                "duration": duration.astype(np.int64),
                **{name: demand[:, k].astype(np.float64) for k, name in enumerate(self._names())},
                "load": np.full(n, load, dtype=np.float64),
            }
        )

    def _names(self) -> list[str]:
        d = self.n_resources
        return ["cpu", "mem"] if d == 2 else [f"r{k}" for k in range(d)]

    def _meta(
        self, load: float | list[float], n_jobsets: int, seed: SeedLike, jobs: pl.DataFrame
    ) -> JobSetMeta:
        loads = load if isinstance(load, list) else [load]
        present = jobs.get_column("jobset").n_unique()
        return JobSetMeta(
            resources=tuple(self._names()),
            capacity=(self.capacity,) * self.n_resources,
            units=("slot",) * self.n_resources,
            arrival_window=self.arrival_window,
            length_buckets={"short": self.short_durations, "long": self.long_durations},
            provenance={
                "generator": "deeprm",
                "params": asdict(self),
                "loads": loads,
                "rates": [self.rate_for_load(x) for x in loads],
                "n_jobsets_per_load": n_jobsets,
                "seed": seed if isinstance(seed, int) else repr(seed),
                "empty_jobsets": n_jobsets * len(loads) - present,
            },
        )
