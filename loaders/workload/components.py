"""The three components of a fitted workload model (:mod:`schedlab.loaders.workload.model`):
durations, arrivals and demands, each with its sampling.

Every time is in **time steps** of the fitted JobSet; demands are in the units of the model's
resources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from schedlab.loaders.workload import families


@dataclass(frozen=True, kw_only=True, slots=True)
class DurationModel:
    """Job durations: a continuous family in steps, quantised as ``max(1, ceil(x))``."""

    family: str
    """One of :data:`schedlab.loaders.workload.families.FAMILIES`."""
    params: Mapping[str, Any]
    """The family's parameters (see :mod:`schedlab.loaders.workload.families`)."""
    max_steps: int
    """Longest duration generated, in steps (draws above it are redrawn: truncation)."""

    def distribution(self) -> Any:
        """The continuous distribution (frozen-scipy interface), in steps."""
        return families.build(self.family, self.params)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` durations in steps (int64, ``1 .. max_steps``)."""
        return families.sample_steps(self.distribution(), n, rng, self.max_steps)

    def pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """Values (steps) and probabilities of the generated durations."""
        return families.discrete_pmf(self.distribution(), self.max_steps)


@dataclass(frozen=True, kw_only=True, slots=True)
class ArrivalModel:
    """Arrivals: Poisson events (homogeneous or with a periodic rate), each a batch of jobs."""

    kind: Literal["poisson", "nhpp"]
    """``"poisson"``: constant rate; ``"nhpp"``: rate × ``profile`` of the time of day."""
    rate_per_step: float
    """Mean jobs per step in the fitted workload (generation rescales it to a target load)."""
    period_steps: float | None = None
    """Length of the rate's period in steps (one day), for ``"nhpp"``."""
    profile: tuple[float, ...] = ()
    """Rate multipliers of equal-width bins of the period (mean 1), for ``"nhpp"``; bin ``h``
    covers ``[h, h + 1) · period / len(profile)`` of the trace's clock modulo the period."""
    batch_sizes: tuple[int, ...] = ()
    """Jobs per arrival event (empty: one job per event)."""
    batch_probs: tuple[float, ...] = ()
    """Probability of each batch size."""
    modulation: tuple[float, ...] = ()
    """Rate multipliers (mean 1) of whole windows: the trace's window-to-window variation
    beyond the daily profile; a generated jobset draws one (empty: none)."""
    modulation_window: int | None = None
    """Window (steps) over which the multipliers were measured."""

    def mean_batch(self) -> float:
        """Mean jobs per arrival event."""
        if not self.batch_sizes:
            return 1.0
        return float(np.dot(self.batch_sizes, self.batch_probs))

    def sample(
        self,
        rng: np.random.Generator,
        rate: float,
        n_jobsets: int,
        window: int,
        phase: float | None = None,
        modulate: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Arrivals of ``n_jobsets`` jobsets with a mean of ``rate`` jobs per step.

        Events are drawn by **thinning**: candidates of a homogeneous Poisson process at the
        peak event rate over ``[0, window)`` are kept with probability ``profile / max(profile)``
        at their time of day; each kept event brings a batch of jobs; arrival step =
        ``floor(t)``. A jobset starts at ``phase`` steps into the period, or at a uniformly
        random phase (None), so the expected jobs per jobset are ``rate · window`` either way
        when the window covers whole periods, and on average over phases otherwise. With
        ``modulate`` and a model with ``modulation``, each jobset's rate is also multiplied by
        one of the multipliers drawn uniformly (mean 1, so the mean rate is unchanged).

        Returns
        -------
        jobset, arrival
            int64 arrays sorted by (jobset, arrival).
        """
        event_rate = rate / self.mean_batch()
        prof = np.asarray(self.profile if self.kind == "nhpp" else (1.0,), dtype=np.float64)
        peak = float(prof.max())
        scale = np.ones(n_jobsets)
        if modulate and self.modulation:
            scale = np.asarray(self.modulation)[rng.integers(len(self.modulation), size=n_jobsets)]
        counts = rng.poisson(event_rate * peak * window * scale)
        owner = np.repeat(np.arange(n_jobsets, dtype=np.int64), counts)
        t = rng.random(owner.size) * window
        if self.kind == "nhpp":
            period = float(self.period_steps or 1.0)
            start = rng.random(n_jobsets) * period if phase is None else np.full(n_jobsets, phase)
            pos = np.mod(start[owner] + t, period)
            bins = np.minimum((pos / period * prof.size).astype(np.int64), prof.size - 1)
            keep = rng.random(owner.size) * peak < prof[bins]
            owner, t = owner[keep], t[keep]
        if self.batch_sizes:
            sizes = rng.choice(np.asarray(self.batch_sizes), size=owner.size, p=self.batch_probs)
            owner, t = np.repeat(owner, sizes), np.repeat(t, sizes)
        arrival = np.floor(t).astype(np.int64)
        order = np.lexsort((arrival, owner))
        return owner[order], arrival[order]


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class DemandModel:
    """Empirical joint distribution of demands, per duration class."""

    class_edges: tuple[int, ...]
    """Upper duration bound (steps, inclusive) of every class but the last: class ``c`` holds
    durations in ``(edges[c-1], edges[c]]``; no edge means one class (no conditioning)."""
    values: tuple[np.ndarray, ...]
    """Per class: distinct demand vectors, float64 ``(m_c, d)``."""
    probs: tuple[np.ndarray, ...]
    """Per class: their probabilities, float64 ``(m_c,)``, summing to 1."""
    coverage: tuple[float, ...] = ()
    """Per class: share of the class's jobs whose demand vector was kept in the table."""

    def classes(self, durations: np.ndarray) -> np.ndarray:
        """Class index of each duration (steps)."""
        return np.searchsorted(np.asarray(self.class_edges), durations, side="left")

    def class_means(self) -> np.ndarray:
        """Mean demand per class and resource, ``(n_classes, d)``."""
        return np.stack([p @ v for v, p in zip(self.values, self.probs, strict=True)])

    def sample(self, rng: np.random.Generator, durations: np.ndarray) -> np.ndarray:
        """Demand vectors ``(n, d)`` for jobs of the given durations (steps)."""
        cls = self.classes(durations)
        out = np.empty((durations.size, self.values[0].shape[1]), dtype=np.float64)
        for c, (vals, probs) in enumerate(zip(self.values, self.probs, strict=True)):
            idx = np.flatnonzero(cls == c)
            if idx.size:
                out[idx] = vals[rng.choice(vals.shape[0], size=idx.size, p=probs)]
        return out
