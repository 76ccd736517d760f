"""Lognormal mixtures fitted to quantised, censored durations: several starts, exact EM.

Observations
------------
In log space a ``lognormal_mix<k>`` is a Gaussian mixture of ``y = log x``. A completed job of
``d`` steps is the interval ``log(d - 1) < y <= log d`` (``-inf`` below for ``d = 1``), a
running one ``y > log(d - 1)`` (see :mod:`~schedlab.evaluation.fitting.observations`); distinct
intervals carry their job counts as weights.

Fitting
-------
EM for grouped and censored data (Dempster, Laird & Rubin 1977; McLachlan & Jones 1988): the
E-step gives each component's responsibility for an interval and the first two moments of
``y`` under that component truncated to the interval; the M-step is closed-form. It maximises
the exact interval-censored likelihood, increasing it at every step; SQUAREM (Varadhan &
Roland 2008) extrapolates its steps, keeping an extrapolation only when it does not lower the
likelihood. Iterations stop when an EM step gains less than :data:`TOL` per job.

**Starts** (:func:`starting_points`) on the weighted midpoints ``log(d - 1/2)``: ``quantile``
(means at the ``(i + 1/2)/k`` quantiles), ``tails`` (at quantiles evenly spread over 5–95%),
``spread`` (evenly over the range), and 1-D k-means from the ``quantile`` and ``spread``
means (``kmeans``, ``kmeans-spread``: each cluster's share, mean and standard deviation). The
best log-likelihood is kept; the others tell whether the optimum is robust: the number of
starts within :data:`OPTIMUM_TOL` of the best is reported.

**Guard against collapse**: ``mu >= log(1/2)`` and ``sigma >= 0.05``. A component whose median
is below half a step puts virtually all its mass in ``(0, 1]`` steps, where integer durations
cannot locate it: a single EM or gradient run can drift there (the Alibaba 2017 table gave a
component of median 0.0007 steps at a poorer optimum). With the floors the same mass at one
step is still representable, and the M-step stays the constrained maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from schedlab.evaluation.fitting.observations import DurationData

MU_FLOOR = math.log(0.5)
"""Lowest component mean of ``log x`` (median half a step)."""
SIGMA_FLOOR = 0.05
"""Lowest component standard deviation of ``log x``."""
TOL = 1e-9
"""Stop when an EM step gains less than this log-likelihood per job."""
MAX_ITER = 500
"""Most SQUAREM iterations (each two or three EM steps) per start."""
STARTS = ("quantile", "tails", "spread", "kmeans", "kmeans-spread")
"""Names of the starting points of every mixture fit (:func:`starting_points`)."""
OPTIMUM_TOL = 0.5
"""A start reached the optimum when its log-likelihood is within this of the best (ΔAIC < 1)."""
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True, slots=True)
class Intervals:
    """Weighted intervals of ``log x`` (log steps), shape ``(m,)`` each."""

    lo: np.ndarray
    """Lower ends (``-inf`` for ``d = 1``)."""
    hi: np.ndarray
    """Upper ends (``+inf`` for running jobs)."""
    weight: np.ndarray
    """Jobs per interval."""
    mid: np.ndarray
    """``log(d - 1/2)``: where the starting points put the jobs."""

    @classmethod
    def from_data(cls, data: DurationData) -> Intervals:
        """Completed jobs as ``(log(d - 1), log d]``, running ones as ``(log(d - 1), inf)``."""
        d = data.value.astype(np.float64)
        with np.errstate(divide="ignore"):
            lo = np.log(d - 1.0)
        both = np.concatenate([data.exact, data.censored])
        keep = both > 0
        return cls(
            lo=np.concatenate([lo, lo])[keep],
            hi=np.concatenate([np.log(d), np.full(d.size, np.inf)])[keep],
            weight=both[keep],
            mid=np.log(np.concatenate([d, d]) - 0.5)[keep],
        )


@dataclass(frozen=True, slots=True)
class MixtureFit:
    """The best of several EM runs for one number of components."""

    weights: np.ndarray
    """Component weights, shape ``(k,)``, summing to 1."""
    mu: np.ndarray
    """Component means of ``log x`` (log steps), increasing."""
    sigma: np.ndarray
    """Component standard deviations of ``log x``."""
    converged: bool
    """Whether the best start met :data:`TOL` within :data:`MAX_ITER` iterations."""
    starts: dict[str, float]
    """Log-likelihood reached from each start, by start name."""


def starting_points(obs: Intervals, k: int) -> dict[str, np.ndarray]:
    """Named starting parameter vectors ``(weights, mu, sigma)`` concatenated, shape ``(3k,)``.

    See the module docstring; every start respects the floors.
    """
    y, w = obs.mid, obs.weight
    order = np.argsort(y)
    cum = np.cumsum(w[order]) / w.sum()

    def quantile(p: np.ndarray) -> np.ndarray:
        return y[order][np.minimum(np.searchsorted(cum, p), y.size - 1)]

    sd = math.sqrt(float(np.average((y - np.average(y, weights=w)) ** 2, weights=w)))
    lo, hi = float(y.min()), float(y.max())
    equal = np.full(k, 1.0 / k)
    means = {
        "quantile": quantile((np.arange(k) + 0.5) / k),
        "tails": quantile(np.linspace(0.05, 0.95, k)),
        "spread": np.linspace(lo, hi, 2 * k + 1)[1::2],
    }
    out = {
        "quantile": (equal, means["quantile"], np.full(k, sd / k)),
        "tails": (equal, means["tails"], np.full(k, sd / k)),
        "spread": (equal, means["spread"], np.full(k, (hi - lo) / (2 * k))),
        "kmeans": _kmeans(y, w, means["quantile"]),
        "kmeans-spread": _kmeans(y, w, means["spread"]),
    }
    return {name: _project(np.concatenate(out[name])) for name in STARTS}


def _kmeans(
    y: np.ndarray, w: np.ndarray, centres: np.ndarray, iterations: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted 1-D k-means (Lloyd) from ``centres``: cluster shares, means and std devs."""
    c = centres.astype(np.float64).copy()
    for _ in range(iterations):
        label = np.argmin(np.abs(y[:, None] - c), axis=1)
        mass = np.bincount(label, weights=w, minlength=c.size)
        total = np.bincount(label, weights=w * y, minlength=c.size)
        new = np.where(mass > 0, total / np.maximum(mass, 1e-300), c)
        if np.array_equal(new, c):
            break
        c = new
    label = np.argmin(np.abs(y[:, None] - c), axis=1)
    mass = np.bincount(label, weights=w, minlength=c.size)
    sq = np.bincount(label, weights=w * (y - c[label]) ** 2, minlength=c.size)
    sd = np.sqrt(sq / np.maximum(mass, 1e-300))
    return np.maximum(mass / mass.sum(), 1e-3), c, sd


def _project(theta: np.ndarray) -> np.ndarray:
    """``theta`` with weights normalised (> 0) and ``mu``, ``sigma`` at least their floors."""
    k = theta.size // 3
    w = np.maximum(theta[:k], 1e-12)
    return np.concatenate(
        [
            w / w.sum(),
            np.maximum(theta[k : 2 * k], MU_FLOOR),
            np.maximum(theta[2 * k :], SIGMA_FLOOR),
        ]
    )


def _truncated_moments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log P(a < Z <= b)``, ``E[Z]`` and ``E[Z²]`` given ``a < Z <= b``, ``Z ~ N(0, 1)``.

    Computed on the left side (the interval reflected when ``a > 0``), with the differences of
    tiny probabilities in log space, so narrow intervals far in a tail stay accurate.
    """
    flip = a > 0
    lo, hi = np.where(flip, -b, a), np.where(flip, -a, b)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        l_hi, l_lo = special.log_ndtr(hi), special.log_ndtr(lo)
        logp = np.maximum(l_hi + np.log(-np.expm1(l_lo - l_hi)), -1e4)
        fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
        r_lo = np.where(fin_lo, np.exp(-0.5 * lo * lo - _HALF_LOG_2PI - logp), 0.0)
        r_hi = np.where(fin_hi, np.exp(-0.5 * hi * hi - _HALF_LOG_2PI - logp), 0.0)
        both = fin_lo & fin_hi
        ratio = np.exp(0.5 * (lo * lo - hi * hi))  # phi(hi) / phi(lo)
        m1 = np.where(both, -r_lo * np.expm1(0.5 * (lo * lo - hi * hi)), r_lo - r_hi)
        tail = np.where(fin_lo, lo * r_lo, 0.0) - np.where(fin_hi, hi * r_hi, 0.0)
        m2 = 1.0 + np.where(both, r_lo * (lo - hi * ratio), tail)
        mid = np.where(both, 0.5 * (lo + hi), 0.0)  # where the formulas overflow
        m1 = np.where(np.isfinite(m1), m1, mid)
        m2 = np.where(np.isfinite(m2), m2, mid * mid)
    return logp, np.where(flip, -m1, m1), m2


def _em_step(theta: np.ndarray, obs: Intervals) -> tuple[np.ndarray, float]:
    """One EM step from ``theta``: the new parameters and the log-likelihood *at* ``theta``."""
    k = theta.size // 3
    w, mu, sigma = theta[:k], theta[k : 2 * k], theta[2 * k :]
    a = (obs.lo[:, None] - mu) / sigma
    b = (obs.hi[:, None] - mu) / sigma
    logp, m1, m2 = _truncated_moments(a, b)
    joint = np.log(w) + logp
    total = special.logsumexp(joint, axis=1)
    n_ic = obs.weight[:, None] * np.exp(joint - total[:, None])
    n_c = n_ic.sum(axis=0)
    ok = n_c > 0
    safe = np.where(ok, n_c, 1.0)
    ey = mu + sigma * m1
    ey2 = mu * mu + 2.0 * mu * sigma * m1 + sigma * sigma * m2
    new_mu = np.where(ok, np.maximum((n_ic * ey).sum(axis=0) / safe, MU_FLOOR), mu)
    var = (n_ic * (ey2 - 2.0 * new_mu * ey + new_mu * new_mu)).sum(axis=0) / safe
    new_sigma = np.where(ok, np.maximum(np.sqrt(np.maximum(var, 0.0)), SIGMA_FLOOR), sigma)
    new_w = np.maximum(n_c / obs.weight.sum(), 1e-300)
    return np.concatenate([new_w, new_mu, new_sigma]), float(obs.weight @ total)


def run_em(theta: np.ndarray, obs: Intervals) -> tuple[np.ndarray, float, bool]:
    """SQUAREM-accelerated EM from ``theta``: parameters, log-likelihood, converged."""
    tol, converged = TOL * float(obs.weight.sum()), False
    for _ in range(MAX_ITER):
        t1, ll0 = _em_step(theta, obs)
        t2, ll1 = _em_step(t1, obs)
        r, v = t1 - theta, t2 - 2.0 * t1 + theta
        if ll1 - ll0 < tol or not float(v @ v) > 0:  # no gain, or a fixed point
            theta, converged = t2, True
            break
        alpha = -math.sqrt(float(r @ r) / float(v @ v))
        theta = t2
        while alpha < -1.0:  # alpha = -1 is the plain double EM step t2
            jump = _project(theta - 2.0 * alpha * r + alpha * alpha * v)
            stepped, ll_jump = _em_step(jump, obs)
            if ll_jump >= ll1:
                theta = stepped
                break
            alpha = (alpha - 1.0) / 2.0
    return _sorted(theta), _em_step(theta, obs)[1], converged


def _sorted(theta: np.ndarray) -> np.ndarray:
    """``theta`` with the components in increasing order of ``mu``."""
    k = theta.size // 3
    order = np.argsort(theta[k : 2 * k], kind="stable")
    return np.concatenate([theta[:k][order], theta[k : 2 * k][order], theta[2 * k :][order]])


def fit_mixture(data: DurationData, k: int) -> MixtureFit:
    """Maximum-likelihood ``k``-component lognormal mixture of ``data`` (module docstring)."""
    obs = Intervals.from_data(data)
    runs = {name: run_em(theta, obs) for name, theta in starting_points(obs, k).items()}
    best = max(runs, key=lambda name: runs[name][1])
    theta, _, converged = runs[best]
    return MixtureFit(
        weights=theta[:k],
        mu=theta[k : 2 * k],
        sigma=theta[2 * k :],
        converged=converged,
        starts={name: run[1] for name, run in runs.items()},
    )


def at_optimum(starts: dict[str, float]) -> int:
    """Starts whose log-likelihood is within :data:`OPTIMUM_TOL` of the best."""
    best = max(starts.values())
    return sum(ll >= best - OPTIMUM_TOL for ll in starts.values())
