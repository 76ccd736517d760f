"""Liu et al.'s hybrid workload for heterogeneous elastic multi-clusters (ICPP'20, §3–§5).

Jobs arrive by one of the three patterns of :mod:`schedlab.loaders.generators.liu` (Uniform,
Bernoulli, Beta on ``[a, b]``); an episode is ``n_jobs`` jobs (Liu's ``N_w = 1000``). Each job
belongs to one of three **categories** (§3): ``streaming`` (Cate-1: repeated executions, one
data batch each), ``critical`` (Cate-2: time-critical, one execution) and ``general`` (Cate-3:
one execution, no deadline). The paper leaves the job model to its reference [12]; every
number below is our documented default, exposed as a parameter.

Job columns (per job; ``C`` clusters, ``C = len(capacities)``)
--------------------------------------------------------------
``category`` (str)
    ``streaming``, ``critical`` or ``general``, drawn with ``category_probs``.
``standard_time`` (int, steps)
    Standard execution time of one execution w.r.t. the job's expected heterogeneity factor,
    uniform on ``standard_time[category]``.
``executions`` (int)
    Executions of the job: uniform on ``executions`` for streaming jobs, 1 otherwise. A
    streaming job runs them back to back: each next execution requests its executors the step
    the previous one finished.
``duration`` (int, steps)
    ``executions · standard_time``: the job's total standard run time (the JobSet's ideal run
    time, used by the offered load).
``hetero`` (int), ``sensitivity`` (int)
    Expected heterogeneity factor ``h`` (uniform on ``hetero``) and sensitivity ``sen``
    (uniform on ``sensitivity``, Liu's [1, 5]).
``requests`` (``Array(Int64, (C, 10))``)
    Discrete executor-request distribution per cluster (§4.2): each of the 10 entries has
    probability 0.1. Per job a base request ``r`` (uniform on ``request[category]``) and per
    cluster a factor ``f_c`` (uniform on ``request_spread``) give the cluster's usual request
    ``round(r · f_c)``. A streaming job has ``k`` burst entries (uniform on ``burst_entries``,
    at most 4, so the usual request stays the most likely one) of ``round(r · f_c · m)``, ``m``
    uniform on ``burst_factor``; other jobs request the same amount in all 10 entries.
    Requests are clipped to ``[1, capacities[c]]``.
``deadline`` (int, steps; null for general jobs)
    End-to-end deadline of each execution, ``ceil(standard_time · u)``, ``u`` uniform on
    ``slack``. A cluster's deadline is ``deadline − transfer[c]`` (§4.2: cluster-specific
    transmission overhead under a uniform end-to-end batch time).
``transfer`` (``Array(Int64, C)``, steps)
    Transmission overhead per cluster, ``floor(standard_time · v_c)``, ``v_c`` uniform on
    ``transfer``.
``executors`` (float, the JobSet's one resource)
    The job's expected request: the mean over clusters and entries of ``requests`` (the
    offered load's demand; the baselines' *worker request* of §5 is the mean over clusters of
    the most likely request, computed by the simulator's views).

Load
----
The JobSet's capacity is ``Σ capacities`` executors (normal capacity, without elastic
expansion) and the offered load is ``Σ executors · duration / (Σ capacities · span)`` with the
span of each jobset's arrivals (the metadata has no fixed arrival window: an episode is a job
count). :meth:`LiuMultiClusterGenerator.load_per_rate` is its expectation per unit arrival rate
(exact up to the rounding of requests), so a target load scales the pattern's intervals as in
:mod:`~schedlab.loaders.generators.liu`; the pattern *as parameterised* (Liu's setting, intervals
not scaled) is :meth:`~LiuMultiClusterGenerator.natural_rate`: give it as ``rates = [...]`` in a
spec, or ``--rate``.

Defaults and why
----------------
Liu's setting says only that Uniform ``b = 33`` "could reasonably stress the computing
environment nearing to its maximum, yet not over-saturate" it (§5). With the defaults an
episode at ``b = 33`` offers 0.846 of the normal capacity (:meth:`natural_load`; ``b = 36``:
0.778, ``b = 40``: 0.702). Measured under MAF (6 episodes, seed 1; executors in use over the
normal 7600 during the arrivals): ``b = 33`` mean 0.73, 95th percentile 0.92, 7% of the moments
above 0.90, the elastic clusters change capacity ~200 times per episode; ``b = 40`` mean 0.60,
95th percentile 0.80, no moment above 0.90. Execution on clusters faster than the job's expected
factor makes the busy share lower than the offered load. RAN and RR saturate the small cluster 1
(0.9 busy over the whole episode) and wait ~50× longer than MAF (240 vs 4.7 steps per
execution). Streaming executions of 20–60 steps with deadlines of 1.15–1.5 standard times minus
up to 15% transfer make both halting and slow clusters costly (MAF misses ~600 deadlines per
episode at ``b = 33``, about half of them without any waiting: improper heterogeneity);
expected factors 55–95 around the clusters' [70, 60, 100, 80, 90] make the cluster choice matter
for AJER (MAF ~91.6, RAN ~97).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import polars as pl

from schedlab.loaders.generators.base import Sample, SyntheticGenerator
from schedlab.loaders.generators.liu import (
    LiuBernoulliGenerator,
    LiuBetaGenerator,
    LiuGenerator,
    LiuUniformGenerator,
)

LIU_CAPACITIES = (800, 1200, 1500, 1800, 2300)
"""Executors of Liu's five clusters (§5), normal capacity."""
CATEGORIES = ("streaming", "critical", "general")
"""Job categories in Liu's order (Cate-1, Cate-2, Cate-3)."""
ENTRIES = 10
"""Entries of a discrete request distribution (each with probability 0.1, §4.2)."""
PATTERNS: dict[str, type[LiuGenerator]] = {
    "uniform": LiuUniformGenerator,
    "bernoulli": LiuBernoulliGenerator,
    "beta": LiuBetaGenerator,
}

Range = tuple[int, int]
FRange = tuple[float, float]


def _mean(r: tuple[float, float]) -> float:
    return (r[0] + r[1]) / 2


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuMultiClusterGenerator(SyntheticGenerator):
    """Liu's hybrid workload (see the module docstring for the job model)."""

    name: ClassVar[str] = "liu-multicluster"

    pattern: Literal["uniform", "bernoulli", "beta"] = "uniform"
    """Arrival pattern of :mod:`schedlab.loaders.generators.liu`."""
    a: int = 1
    """Shortest base interval between arrivals, in steps."""
    b: int = 33
    """Longest base interval, in steps (Liu's stress knob: 33, 36, 40)."""
    p: float = 0.5
    """Bernoulli pattern: probability of the long interval ``b``."""
    alpha: float = 2.0
    """Beta pattern: first shape parameter."""
    beta: float = 2.0
    """Beta pattern: second shape parameter."""
    n_jobs: int = 1000
    """Jobs per jobset (episode), Liu's ``N_w``."""
    capacities: tuple[int, ...] = LIU_CAPACITIES
    """Normal executor capacity per cluster (requests are clipped to it)."""
    category_probs: tuple[float, float, float] = (0.3, 0.3, 0.4)
    """Probabilities of streaming, critical and general jobs."""
    standard_time: tuple[Range, Range, Range] = ((20, 60), (50, 200), (150, 600))
    """Per category, inclusive range of the standard time of one execution (steps)."""
    executions: Range = (10, 30)
    """Inclusive range of a streaming job's number of executions."""
    request: tuple[Range, Range, Range] = ((45, 220), (110, 550), (110, 660))
    """Per category, inclusive range of the base executor request."""
    request_spread: FRange = (0.8, 1.25)
    """Range of the per-cluster factor on the base request."""
    burst_entries: Range = (0, 4)
    """Inclusive range of a streaming job's burst entries (of 10; at most 4)."""
    burst_factor: FRange = (1.5, 2.0)
    """Range of the burst multiplier of a streaming job's request."""
    hetero: Range = (55, 95)
    """Inclusive range of a job's expected heterogeneity factor."""
    sensitivity: Range = (1, 5)
    """Inclusive range of a job's heterogeneity sensitivity ``sen`` (§4.2)."""
    slack: FRange = (1.15, 1.5)
    """Range of the end-to-end deadline over the standard time."""
    transfer: FRange = (0.0, 0.15)
    """Range of a cluster's transmission overhead over the standard time."""

    # -- the arrival pattern --------------------------------------------------------------------
    def arrival_pattern(self) -> LiuGenerator:
        """The interval law (its window is unused: an episode is ``n_jobs`` jobs)."""
        if self.pattern not in PATTERNS:
            msg = f"{self.name}: pattern must be one of {list(PATTERNS)}, got {self.pattern!r}"
            raise ValueError(msg)
        kw: dict[str, float] = {"a": self.a, "b": self.b}
        if self.pattern == "bernoulli":
            kw["p"] = self.p
        elif self.pattern == "beta":
            kw |= {"alpha": self.alpha, "beta": self.beta}
        return PATTERNS[self.pattern](**kw)  # type: ignore[arg-type]

    def natural_rate(self) -> float:
        """Arrivals per step with the pattern's own intervals (``1 / E[I]``; 1/17 for 1..33)."""
        return self.arrival_pattern().natural_rate()

    def natural_load(self) -> float:
        """Offered load at :meth:`natural_rate`."""
        return self.load_per_rate() * self.natural_rate()

    # -- SyntheticGenerator ----------------------------------------------------------------------
    def resources(self) -> tuple[str, ...]:
        """One resource: ``executors``."""
        return ("executors",)

    def capacity(self) -> tuple[float, ...]:
        """Total normal capacity, ``Σ capacities``."""
        return (float(sum(self.capacities)),)

    def arrival_window(self) -> None:
        """None: the offered load's span is each jobset's own arrival span."""
        return None

    def jobs_per_jobset(self, load: float) -> float:
        """``n_jobs``: an episode has that many jobs at every load."""
        return float(self.n_jobs)

    def length_buckets(self) -> dict[str, tuple[int, int]]:
        """No fixed buckets (reports use duration terciles)."""
        return {}

    def load_per_rate(self) -> float:
        """``E[executors · duration] / Σ capacities`` (executor-steps per arrival / capacity;
        exact up to the rounding and clipping of requests)."""
        self._check()
        spread = _mean(self.request_spread)
        burst = 1 + _mean(self.burst_entries) / ENTRIES * (_mean(self.burst_factor) - 1)
        work = 0.0
        for c, prob in enumerate(self.category_probs):
            n, mean_request = (_mean(self.executions), burst) if c == 0 else (1.0, 1.0)
            mean_request *= _mean(self.request[c]) * spread
            work += prob * n * _mean(self.standard_time[c]) * mean_request
        return work / sum(self.capacities)

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """``n_jobs`` arrivals per jobset (stationary renewal start, intervals scaled to
        ``1 / rate``), then the jobs."""
        pattern = self.arrival_pattern()
        scale = pattern.natural_rate() / rate
        if math.isclose(scale, 1.0, rel_tol=1e-9):
            scale = 1.0  # the pattern as given: integer intervals stay integers
        n = self.n_jobs
        first = (
            scale
            * rng.random((n_jobsets, 1))
            * pattern.draw_intervals(rng, (n_jobsets, 1), size_biased=True)
        )
        rest = scale * pattern.draw_intervals(rng, (n_jobsets, n - 1))
        t = np.cumsum(np.concatenate([first, rest], axis=1), axis=1)
        arrival = np.floor(t).astype(np.int64).ravel()
        jobset = np.repeat(np.arange(n_jobsets), n)
        return self.sample_jobs(rng, jobset, arrival)

    # -- the jobs ---------------------------------------------------------------------------------
    def _check(self) -> None:
        probs = np.asarray(self.category_probs, dtype=np.float64)
        if probs.shape != (3,) or np.any(probs < 0) or not math.isclose(probs.sum(), 1.0):
            msg = f"{self.name}: category_probs must be 3 probabilities summing to 1, got {probs}"
            raise ValueError(msg)
        if self.n_jobs < 1 or not self.capacities or min(self.capacities) < 1:
            msg = f"{self.name}: need n_jobs >= 1 and capacities >= 1, got {self.n_jobs}, "
            msg += f"{self.capacities}"
            raise ValueError(msg)
        if not 0 <= self.burst_entries[0] <= self.burst_entries[1] <= ENTRIES // 2 - 1:
            msg = f"{self.name}: burst_entries must lie in 0..4, got {self.burst_entries}"
            raise ValueError(msg)
        ranges = (*self.standard_time, self.executions, *self.request, self.hetero)
        if any(lo < 1 or hi < lo for lo, hi in (*ranges, self.sensitivity)):
            msg = f"{self.name}: every integer range must be 1 <= low <= high, got {ranges}"
            raise ValueError(msg)

    def sample_jobs(
        self, rng: np.random.Generator, jobset: np.ndarray, arrival: np.ndarray
    ) -> Sample:
        """Draw the jobs arriving at ``arrival`` (steps) in ``jobset`` (see the module docs)."""
        self._check()
        n: int
        n, caps = arrival.shape[0], np.asarray(self.capacities, dtype=np.int64)
        cat = rng.choice(3, size=n, p=np.asarray(self.category_probs))
        std = _per_category(rng, cat, self.standard_time)
        runs = np.where(cat == 0, rng.integers(*_inclusive(self.executions), n), 1)
        base = _per_category(rng, cat, self.request).astype(np.float64)
        spread = rng.uniform(*self.request_spread, (n, caps.size))
        usual = np.clip(np.rint(base[:, None] * spread), 1, caps).astype(np.int64)
        bursts = np.where(cat == 0, rng.integers(*_inclusive(self.burst_entries), n), 0)
        factor = rng.uniform(*self.burst_factor, n)
        high = np.clip(np.rint(usual * factor[:, None]), 1, caps).astype(np.int64)
        is_burst = np.arange(ENTRIES)[None, None, :] >= ENTRIES - bursts[:, None, None]
        requests = np.where(is_burst, high[:, :, None], usual[:, :, None])
        deadline = np.ceil(std * rng.uniform(*self.slack, n)).astype(np.int64)
        transfer = np.floor(std[:, None] * rng.uniform(*self.transfer, (n, caps.size)))
        columns = {
            "category": pl.Series("category", np.asarray(CATEGORIES)[cat], dtype=pl.Utf8),
            "deadline": pl.Series("deadline", deadline).set(pl.Series(cat == 2), None),
            "standard_time": std.astype(np.int64),
            "executions": runs.astype(np.int64),
            "hetero": rng.integers(*_inclusive(self.hetero), n),
            "sensitivity": rng.integers(*_inclusive(self.sensitivity), n),
            "requests": pl.Series(
                "requests", requests, dtype=pl.Array(pl.Int64, (caps.size, ENTRIES))
            ),
            "transfer": pl.Series(
                "transfer", transfer.astype(np.int64), dtype=pl.Array(pl.Int64, caps.size)
            ),
        }
        demand = requests.mean(axis=(1, 2))[:, None]
        return Sample(jobset, arrival, std * runs, demand, columns)


def _inclusive(r: tuple[int, int]) -> tuple[int, int]:
    """``(low, high + 1)`` for ``Generator.integers``."""
    return r[0], r[1] + 1


def _per_category(
    rng: np.random.Generator, cat: np.ndarray, ranges: tuple[Range, Range, Range]
) -> np.ndarray:
    """Integers uniform on ``ranges[cat[i]]`` (inclusive), int64, shape ``cat.shape``."""
    lo = np.asarray([r[0] for r in ranges])[cat]
    hi = np.asarray([r[1] for r in ranges])[cat]
    return lo + np.floor(rng.random(cat.shape) * (hi - lo + 1)).astype(np.int64)
