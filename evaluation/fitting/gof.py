"""Goodness of fit of a duration model: KS and Anderson–Darling distances, quantile errors.

* **Distances** use the randomised probability integral transform of the completed jobs'
  quantised durations: ``u = F(d - 1) + V · (F(d) - F(d - 1))`` with ``V ~ U(0, 1)`` is exactly
  uniform when the model is right, even though ``d`` is an integer. ``KS = sup |F_n(u) - u|`` and
  ``A² = -n - Σ (2i - 1)/n · (log u_(i) + log(1 - u_(n+1-i)))`` on a subsample (their size is
  stated; with millions of jobs every model is "rejected", so they are distances, not tests).
* **Quantile errors**: ratio of the model's quantile of the generated durations (quantised and
  truncated, what the generator draws) to the empirical quantile, at p50, p90, p99 and p99.9.
  The empirical distribution is the Kaplan–Meier estimate, which is the ECDF when nothing is
  censored (censored jobs are at risk up to ``d - 1`` steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.evaluation.fitting.observations import DurationData

QUANTILES = (0.5, 0.9, 0.99, 0.999)
"""Probabilities of the quantile errors."""


def kaplan_meier(data: DurationData) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan–Meier survival ``S(t)`` just after each event time ``t`` (steps).

    Completed jobs are events at ``d``; running jobs are censored at ``d - 1``.
    """
    times = np.concatenate([data.value, data.value - 1]).astype(np.float64)
    events = np.concatenate([data.exact, np.zeros_like(data.censored)])
    cens = np.concatenate([np.zeros_like(data.exact), data.censored])
    t, inv = np.unique(times, return_inverse=True)
    d = np.bincount(inv, weights=events, minlength=t.size)
    c = np.bincount(inv, weights=cens, minlength=t.size)
    at_risk = (d + c)[::-1].cumsum()[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(at_risk > 0, 1 - d / at_risk, 1.0)
    keep = d > 0
    return t[keep], np.cumprod(factor)[keep]


def km_quantile(times: np.ndarray, surv: np.ndarray, p: float) -> float:
    """Smallest event time with ``1 - S(t) >= p`` (NaN if the estimate never reaches ``p``)."""
    hit = np.flatnonzero(1 - surv >= p - 1e-12)
    return float(times[hit[0]]) if hit.size else float("nan")


def model_quantile(dist: Any, max_steps: int, p: np.ndarray | float) -> np.ndarray:
    """Quantiles of the generated durations: ``max(1, ceil(F⁻¹(p · F(max))))`` steps."""
    q = np.asarray(p, dtype=np.float64) * float(dist.cdf(float(max_steps)))
    steps: np.ndarray = np.clip(np.ceil(dist.ppf(q)), 1, max_steps)
    return steps


def randomized_pit(
    dist: Any, durations: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``u`` and ``1 - u`` (computed separately, for accuracy in both tails) of integer
    durations (steps) under ``dist``."""
    hi = durations.astype(np.float64)
    lo = hi - 1.0
    v = rng.random(hi.size)
    f_lo, f_hi = np.where(lo > 0, dist.cdf(lo), 0.0), dist.cdf(hi)
    s_lo, s_hi = np.where(lo > 0, dist.sf(lo), 1.0), dist.sf(hi)
    return f_lo + v * (f_hi - f_lo), s_lo - v * (s_lo - s_hi)


def ks_ad(u: np.ndarray, one_minus_u: np.ndarray) -> tuple[float, float]:
    """Kolmogorov–Smirnov ``D`` and Anderson–Darling ``A²`` of PIT values against U(0, 1)."""
    order = np.argsort(u)
    us, ws = u[order], one_minus_u[order]
    n = us.size
    i = np.arange(1, n + 1)
    ks = float(max(np.max(i / n - us), np.max(us - (i - 1) / n)))
    lu = np.log(np.clip(us, 1e-300, 1))
    lw = np.log(np.clip(ws[::-1], 1e-300, 1))
    ad = float(-n - np.sum((2 * i - 1) * (lu + lw)) / n)
    return ks, ad


def goodness(
    dist: Any,
    data: DurationData,
    sample: np.ndarray,
    max_steps: int,
    rng: np.random.Generator,
    km: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, float]:
    """``ks``, ``ad`` (on ``sample``: completed durations, steps) and ``q50_ratio`` ...
    ``q999_ratio`` (model / Kaplan–Meier quantile, on ``data``)."""
    u, w = randomized_pit(dist, sample, rng)
    ks, ad = ks_ad(u, w)
    times, surv = km if km is not None else kaplan_meier(data)
    out = {"ks": ks, "ad": ad}
    model_q = model_quantile(dist, max_steps, np.asarray(QUANTILES))
    for p, mq in zip(QUANTILES, model_q, strict=True):
        emp = km_quantile(times, surv, p)
        out[quantile_column(p)] = float(mq / emp) if emp > 0 else float("nan")
    return out


def quantile_column(p: float) -> str:
    """``0.999 -> "q999_ratio"``, ``0.5 -> "q50_ratio"``."""
    digits = f"{p * 100:g}".replace(".", "")
    return f"q{digits}_ratio"
