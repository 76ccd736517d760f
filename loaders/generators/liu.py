"""Liu et al.'s job arrival patterns: Uniform, Bernoulli and Beta (ICPP'20, §5, design.md §3).

Liu et al. draw "the time interval between job arriving events" i.i.d. from one of three patterns
taken from their reference [12]. Only the Uniform one is written out,
``P(i) = 1/(b − a + 1)`` for integer ``i`` in ``[a, b]``, with ``a = 1``, ``b = 33``. We define
all three on the same support ``[a, b]`` (steps) so that ``a`` and ``b`` mean the same thing in
each, and choose defaults that give every pattern the Uniform's mean interval of 17 steps, so the
three differ in burstiness only:

=================  =============================================  =======  ==========  =====
generator          base interval ``I`` (steps)                    E[I]     Var[I]      CV
=================  =============================================  =======  ==========  =====
``liu-uniform``    uniform on the integers ``a..b``               17       90.67       0.56
``liu-bernoulli``  two-point: ``b`` with probability ``p``, else  17       256         0.94
                   ``a`` (default ``p = 0.5``)
``liu-beta``       ``a + (b − a) · Beta(alpha, beta)``            17       51.2        0.42
                   (default ``alpha = beta = 2``)
=================  =============================================  =======  ==========  =====

The Bernoulli pattern is read as a Bernoulli-distributed *interval* (like the Uniform one, a law
of ``i`` on ``[a, b]``); arrivals that are a Bernoulli trial at every step are the ``deeprm``
generator's. The Beta pattern's interval is continuous; arrival steps are rounded down (below).

Arrivals at a target load
-------------------------
A target load fixes the rate (mean arrivals per step, see *Load formula*); the pattern keeps its
shape and is scaled to mean ``1 / rate``: intervals are ``X = s · I`` with
``s = 1 / (rate · E[I])``. Arrival times are the cumulative sums ``T_k = T_1 + X_2 + ... + X_k``
(real numbers), a job arrives at step ``floor(T_k)``, and the jobs with ``T_k < window`` form the
jobset. When the mean interval is below one step several jobs share a step (floored intervals of
0). The first time ``T_1 = s · U · I*`` (``U`` uniform on (0, 1), ``I*`` the length-biased
interval, ``P*(i) ∝ i · P(i)``) is the stationary renewal process's forward recurrence time: a
jobset is a window cut from a stream that has been running for ever, and holds exactly
``window · rate`` jobs on average. (A renewal process started at step 0 holds about
``(1 − CV²) / 2`` jobs fewer per jobset: 13% fewer for Uniform 1..33 over a 50-step window.)

At the *natural load* (:meth:`LiuGenerator.natural_load`, where ``s = 1``) the intervals are the
pattern exactly as parameterised: for integer patterns the gaps between consecutive arrival steps
are the integers ``I``. With the DeepRM job model below that load is
``1.845 / E[I] = 1.845 / 17 = 0.1085`` for every default (``a = 1, b = 33``) — Liu's jobs are far
larger relative to their clusters, where ``b = 33`` "could reasonably stress the computing
environment nearing to its maximum". In Python, ``gen.generate(gen.natural_load(), ...)``; on the
command line, ``--load 0.10853`` (s = 0.999995: over 1000 steps the times drift < 0.006 step).

Jobs
----
Liu's jobs (categories, executor requests on heterogeneous elastic clusters, deadlines) do not fit
one resource pool, so every job is drawn from DeepRM's job model, with all of
:class:`~schedlab.loaders.generators.deeprm_workload.DeepRMGenerator`'s parameters: 2 resources
of 10 slots, 80% of durations uniform {1, 2, 3} steps and 20% uniform {10..15}, one dominant
resource demanding {5..10} slots and {1, 2} of the other.

Load formula
------------
Offered load = rate · E[duration] · E[demand per resource] / capacity = 1.845 · rate (DeepRM's
``load_per_rate``), so ``rate = load / 1.845``. The default window is 1000 steps: about 59 jobs
at the natural load, 163 at load 0.3 and 1030 at load 1.9. Liu's episodes of 1000 jobs at
``b = 33`` correspond to ``window=17000``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

import numpy as np

from schedlab.loaders.generators.base import Sample
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.params import Interval


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuGenerator(DeepRMGenerator):
    """Jobs of DeepRM's model arriving as a stationary renewal process (abstract).

    Subclasses define the base interval ``I`` on ``[a, b]``: its mean and variance and how to
    draw it (:meth:`draw_intervals`).
    """

    window: Annotated[int, Interval(ge=1)] = 1000
    """Steps during which jobs arrive (the offered load's span)."""
    arrivals: Literal["renewal"] = field(default="renewal", init=False)  # type: ignore[assignment]  # fixed here, narrower than the base's choices
    """Arrivals form a stationary renewal process with scaled pattern intervals (fixed)."""
    a: Annotated[int, Interval(ge=0)] = 1
    """Shortest base interval, in steps (>= 0)."""
    b: Annotated[int, Interval(gt=0)] = 33
    """Longest base interval, in steps (>= a)."""

    # -- the pattern, provided by subclasses ---------------------------------------------------
    def interval_mean(self) -> float:
        """E[I], in steps."""
        raise NotImplementedError

    def interval_var(self) -> float:
        """Var[I], in steps²."""
        raise NotImplementedError

    def draw_intervals(
        self, rng: np.random.Generator, size: tuple[int, ...], *, size_biased: bool = False
    ) -> np.ndarray:
        """Base intervals ``I`` in steps (unscaled), float array of shape ``size``.

        With ``size_biased``, draw from the length-biased law ``P*(i) = i · P(i) / E[I]`` instead
        (the interval that covers a random time point).
        """
        raise NotImplementedError

    def _check(self) -> None:
        if not 0 <= self.a <= self.b or self.b <= 0:
            msg = f"{self.name}: need 0 <= a <= b and b > 0 (steps), got a={self.a}, b={self.b}"
            raise ValueError(msg)

    # -- shared --------------------------------------------------------------------------------
    def natural_rate(self) -> float:
        """Arrivals per step with unscaled intervals: ``1 / E[I]`` (1/17 by default)."""
        self._check()
        return 1.0 / self.interval_mean()

    def natural_load(self) -> float:
        """Offered load with unscaled intervals: ``1.845 / E[I]`` (0.1085 by default)."""
        return self.load_per_rate() * self.natural_rate()

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Arrivals of a stationary renewal process with mean interval ``1 / rate`` steps.

        Draws a block of intervals per jobset, long enough to cover the window except with
        negligible probability (a further block is drawn for every jobset if one falls short).
        """
        scale = self.natural_rate() / rate
        w = self.window
        cv2 = self.interval_var() / self.interval_mean() ** 2
        mean_count = w * rate
        k = math.ceil(mean_count + 8 * math.sqrt(mean_count * max(cv2, 1.0))) + 2
        u = rng.random((n_jobsets, 1))
        first = scale * u * self.draw_intervals(rng, (n_jobsets, 1), size_biased=True)
        rest = scale * self.draw_intervals(rng, (n_jobsets, k - 1))
        t = np.cumsum(np.concatenate([first, rest], axis=1), axis=1)
        while (t[:, -1] < w).any():
            more = t[:, -1:] + np.cumsum(scale * self.draw_intervals(rng, (n_jobsets, k)), axis=1)
            t = np.concatenate([t, more], axis=1)
        jobset, col = np.nonzero(t < w)
        arrival = np.floor(t[jobset, col]).astype(np.int64)
        duration, demand = self.sample_jobs(rng, jobset.shape[0])
        return Sample(jobset, arrival, duration, demand)


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuUniformGenerator(LiuGenerator):
    """Liu's Uniform pattern: ``P(i) = 1 / (b − a + 1)`` for integer ``i`` in ``[a, b]``."""

    name: ClassVar[str] = "liu-uniform"

    def interval_mean(self) -> float:
        """``(a + b) / 2`` steps (17 by default)."""
        return (self.a + self.b) / 2

    def interval_var(self) -> float:
        """``((b − a + 1)² − 1) / 12`` steps² (90.67 by default)."""
        return ((self.b - self.a + 1) ** 2 - 1) / 12

    def draw_intervals(
        self, rng: np.random.Generator, size: tuple[int, ...], *, size_biased: bool = False
    ) -> np.ndarray:
        """Integers uniform on ``a..b`` (length-biased: ``P*(i) ∝ i``), as floats."""
        if not size_biased:
            return rng.integers(self.a, self.b + 1, size).astype(np.float64)
        values = np.arange(self.a, self.b + 1, dtype=np.float64)
        return rng.choice(values, size=size, p=values / values.sum())


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuBernoulliGenerator(LiuGenerator):
    """Liu's Bernoulli pattern as a two-point interval: ``b`` with probability ``p``, else ``a``."""

    name: ClassVar[str] = "liu-bernoulli"

    p: Annotated[float, Interval(ge=0, le=1)] = 0.5
    """Probability that an interval is the long one, ``b`` (in [0, 1])."""

    def _check(self) -> None:
        LiuGenerator._check(self)
        if not 0 <= self.p <= 1 or self.interval_mean() <= 0:
            msg = f"{self.name}: need 0 <= p <= 1 and a mean interval > 0, got p={self.p}"
            raise ValueError(msg)

    def interval_mean(self) -> float:
        """``a + p · (b − a)`` steps (17 by default)."""
        return self.a + self.p * (self.b - self.a)

    def interval_var(self) -> float:
        """``(b − a)² · p · (1 − p)`` steps² (256 by default)."""
        return (self.b - self.a) ** 2 * self.p * (1 - self.p)

    def draw_intervals(
        self, rng: np.random.Generator, size: tuple[int, ...], *, size_biased: bool = False
    ) -> np.ndarray:
        """``b`` with probability ``p`` (length-biased: ``p · b / E[I]``), else ``a``."""
        p_long = self.p * self.b / self.interval_mean() if size_biased else self.p
        return np.where(rng.random(size) < p_long, float(self.b), float(self.a))


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuBetaGenerator(LiuGenerator):
    """Liu's Beta pattern: intervals ``a + (b − a) · Beta(alpha, beta)`` steps (continuous)."""

    name: ClassVar[str] = "liu-beta"

    alpha: Annotated[float, Interval(gt=0)] = 2.0
    """First shape parameter of the Beta law (> 0)."""
    beta: Annotated[float, Interval(gt=0)] = 2.0
    """Second shape parameter of the Beta law (> 0)."""

    def _check(self) -> None:
        LiuGenerator._check(self)
        if not (self.alpha > 0 and self.beta > 0):
            msg = f"{self.name}: need alpha > 0 and beta > 0, got {self.alpha}, {self.beta}"
            raise ValueError(msg)

    def _beta_mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def interval_mean(self) -> float:
        """``a + (b − a) · alpha / (alpha + beta)`` steps (17 by default)."""
        return self.a + (self.b - self.a) * self._beta_mean()

    def interval_var(self) -> float:
        """``(b − a)² · alpha · beta / ((alpha + beta)² (alpha + beta + 1))`` steps² (51.2)."""
        s = self.alpha + self.beta
        return (self.b - self.a) ** 2 * self.alpha * self.beta / (s**2 * (s + 1))

    def draw_intervals(
        self, rng: np.random.Generator, size: tuple[int, ...], *, size_biased: bool = False
    ) -> np.ndarray:
        """Scaled Beta draws; length-biased, a mixture of Beta(alpha, beta) and Beta(alpha+1, beta).

        ``(a + (b − a) x) f(x) / E[I]`` is ``Beta(alpha, beta)`` with weight ``a / E[I]`` plus
        ``Beta(alpha + 1, beta)`` with weight ``(b − a) · alpha / (alpha + beta) / E[I]``.
        """
        x = rng.beta(self.alpha, self.beta, size)
        if size_biased:
            w_shifted = (self.b - self.a) * self._beta_mean() / self.interval_mean()
            x = np.where(rng.random(size) < w_shifted, rng.beta(self.alpha + 1, self.beta, size), x)
        return self.a + (self.b - self.a) * x
