"""Quantised, censored duration observations and their log-likelihood under a distribution.

Durations are integers ``d >= 1`` in time steps; the trace loaders quantise a duration of ``x``
seconds to ``d = max(1, ceil(x / step))``, so a job of ``d`` steps lasted ``x`` in
``(d - 1, d]`` steps: every observation is **interval-censored** and contributes
``log(F(d) - F(d - 1))`` to the log-likelihood (no continuity correction, no spike at ``d = 1``:
zero-length jobs are in ``(0, 1]``). A job still running when the trace ends
(**right-censored**) with ``d`` steps observed contributes ``log S(d - 1)``: it is only known to
last longer than ``d - 1`` steps. The likelihood is computed once per distinct ``d`` with counts
as weights (:class:`DurationData`), so its cost does not grow with the number of jobs. The
families are fitted by :mod:`schedlab.evaluation.fitting.durations` and
:mod:`schedlab.evaluation.fitting.mixture`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

LOG_FLOOR = -1e4
"""Floor of a per-observation log-probability, so that a hopeless candidate stays finite."""


@dataclass(frozen=True, slots=True)
class DurationData:
    """Distinct durations (steps) with counts of completed and of still-running jobs."""

    value: np.ndarray
    """int64 ``(k,)``: distinct durations, increasing."""
    exact: np.ndarray
    """float64 ``(k,)``: completed jobs of that duration (interval ``(d - 1, d]``)."""
    censored: np.ndarray
    """float64 ``(k,)``: running jobs observed for that many steps (``> d - 1``)."""

    @classmethod
    def from_arrays(cls, duration: np.ndarray, censored: np.ndarray | None = None) -> DurationData:
        """Tally ``duration`` (int steps, >= 1) and an optional boolean ``censored`` mask."""
        d = np.asarray(duration, dtype=np.int64)
        c = np.zeros(d.size, dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
        value, inverse = np.unique(d, return_inverse=True)
        exact = np.bincount(inverse, weights=~c, minlength=value.size)
        cens = np.bincount(inverse, weights=c, minlength=value.size)
        return cls(value, exact.astype(np.float64), cens.astype(np.float64))

    @property
    def n(self) -> int:
        """Number of jobs."""
        return int(self.exact.sum() + self.censored.sum())

    @property
    def n_censored(self) -> int:
        """Number of right-censored jobs."""
        return int(self.censored.sum())

    def loglik(self, dist: Any) -> float:
        """Log-likelihood of ``dist`` (continuous, in steps) for these observations."""
        lp_exact, lp_cens = pointwise(dist, self.value)
        return float(self.exact @ lp_exact + self.censored @ lp_cens)

    def jitter(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Up to ``size`` completed durations drawn with replacement, minus ``U(0, 1)``."""
        w = self.exact / self.exact.sum()
        picks = self.value[rng.choice(self.value.size, size=size, p=w)]
        return np.maximum(picks - rng.random(size), 1e-3)


def pointwise(dist: Any, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct duration ``d``: ``log P(d - 1 < X <= d)`` and ``log P(X > d - 1)``.

    The difference of probabilities is taken on the side (cdf or sf) where it is accurate; when
    both underflow, ``log pdf(d - 1/2)`` stands in (an interval of one step).
    """
    hi = value.astype(np.float64)
    lo = hi - 1.0
    with np.errstate(all="ignore"):
        lc_hi, lc_lo = dist.logcdf(hi), dist.logcdf(lo)
        ls_hi, ls_lo = dist.logsf(hi), dist.logsf(lo)
        left = lc_hi + np.log1p(-np.exp(lc_lo - lc_hi))
        right = ls_lo + np.log1p(-np.exp(ls_hi - ls_lo))
        lp = np.where(lc_lo < -math.log(2), left, right)
        lp = np.where(lo <= 0, lc_hi, lp)
        bad = ~np.isfinite(lp)
        if bad.any():
            lp[bad] = dist.logpdf(hi[bad] - 0.5)
        lp = np.where(np.isfinite(lp), lp, LOG_FLOOR)
        cens = np.where(lo <= 0, 0.0, ls_lo)
        cens = np.where(np.isfinite(cens), cens, LOG_FLOOR)
    return np.maximum(lp, LOG_FLOOR), np.maximum(cens, LOG_FLOOR)
