"""Maximum-likelihood fits of duration families to quantised, censored durations (design.md §7).

Observations
------------
Durations are integers ``d >= 1`` in time steps, interval-censored ``(d - 1, d]`` and, for a job
still running when the trace ends, right-censored (:mod:`schedlab.evaluation.fitting.observations`:
:class:`~schedlab.evaluation.fitting.observations.DurationData` and its log-likelihood).

Fitting
-------
Every family has its location fixed at 0. The **lognormal mixtures** are fitted by exact EM on
the interval-censored data from several starting points, the best kept
(:mod:`~schedlab.evaluation.fitting.mixture`). For the other families, starting values come from
a jittered subsample (``d - U(0, 1)``, which has the continuous distribution when the model is
right): closed forms on ``log x`` for the two-parameter families, moments of the excesses for
the generalized Pareto tail. The exact interval-censored likelihood is then maximised with
L-BFGS-B (numerical gradients) on log-transformed parameters, polished by Nelder–Mead when
L-BFGS-B does not report convergence.
The ``lognormal_gpd`` threshold is the empirical 90th percentile of the durations and its tail
probability the share of jobs above it (both fixed; the latter counted as a parameter).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from schedlab.evaluation.fitting.mixture import at_optimum, fit_mixture
from schedlab.evaluation.fitting.observations import DurationData
from schedlab.loaders.workload import families

TAIL_QUANTILE = 0.9
"""Quantile of the durations used as the ``lognormal_gpd`` threshold."""
MIN_TAIL = 30
"""Fewest jobs above the threshold for ``lognormal_gpd`` to be fitted."""


@dataclass(frozen=True, slots=True)
class FamilyFit:
    """The maximum-likelihood fit of one family."""

    family: str
    params: dict[str, Any]
    loglik: float
    """Maximised log-likelihood (interval/right-censored, steps)."""
    n_params: int
    converged: bool
    starts: dict[str, float] = field(default_factory=dict)
    """Log-likelihood reached from each starting point, by name (mixtures; empty otherwise)."""

    @property
    def starts_at_optimum(self) -> int | None:
        """Starts that reached the best log-likelihood (None for single-start families)."""
        return at_optimum(self.starts) if self.starts else None

    def distribution(self) -> Any:
        """The fitted distribution."""
        return families.build(self.family, self.params)

    def aic(self) -> float:
        """``2k - 2 log L``."""
        return 2 * self.n_params - 2 * self.loglik

    def bic(self, n: int) -> float:
        """``k log n - 2 log L`` for ``n`` jobs."""
        return self.n_params * math.log(n) - 2 * self.loglik


Spec = tuple[np.ndarray, Callable[[np.ndarray], dict[str, Any]], list[tuple[float, float]]]


def _simple_spec(name: str, x: np.ndarray) -> Spec:
    """Starting point, parameter map and bounds of a two-parameter (or exponential) family."""
    lx = np.log(x)
    m, s = float(lx.mean()), max(float(lx.std()), 1e-3)
    mean, median = float(x.mean()), float(np.median(x))
    e = math.exp
    shape_scale = lambda t: {"shape": e(t[0]), "scale": e(t[1])}  # noqa: E731
    bounds = [(-9.0, 9.0), (-15.0, 30.0)]
    if name == "exponential":
        return np.array([math.log(mean)]), lambda t: {"scale": e(t[0])}, bounds[1:]
    if name == "lognormal":
        return np.array([m, math.log(s)]), lambda t: {"mu": t[0], "sigma": e(t[1])}, bounds[::-1]
    if name == "gamma":  # the MLE of the jittered sample: log a - digamma(a) = log mean - mean log
        g = max(math.log(mean) - m, 1e-9)
        a = optimize.brentq(lambda a: math.log(a) - special.digamma(a) - g, 1e-6, 1e8)
        return np.log([a, mean / a]), shape_scale, bounds
    if name == "weibull":
        c = math.pi / (math.sqrt(6) * s)
        return np.array([math.log(c), m + 0.5772 / c]), shape_scale, bounds
    if name == "loglogistic":
        return np.array([math.log(math.pi / (math.sqrt(3) * s)), m]), shape_scale, bounds
    if name == "lomax":
        return np.log([2.0, median / (math.sqrt(2) - 1)]), shape_scale, bounds
    raise AssertionError(name)


def tail_threshold(data: DurationData) -> tuple[float, float] | None:
    """``lognormal_gpd``'s threshold (steps) and tail probability, or None if the tail is thin."""
    counts = data.exact + data.censored
    cum = np.cumsum(counts) / counts.sum()
    u = float(data.value[min(int(np.searchsorted(cum, TAIL_QUANTILE)), data.value.size - 1)])
    above = float(counts[data.value > u].sum())
    if above < MIN_TAIL or above >= counts.sum():
        return None
    return u, above / counts.sum()


def _spliced_spec(data: DurationData, x: np.ndarray) -> Spec | None:
    cut = tail_threshold(data)
    if cut is None:
        return None
    u, p = cut
    body, excess = np.log(x[x <= u]), x[x > u] - u
    if body.size < 2 or excess.size < 2:
        return None
    me, ve = float(excess.mean()), float(excess.var())
    xi = float(np.clip(0.5 * (1 - me**2 / max(ve, 1e-12)), -0.4, 2.0))
    theta0 = np.array(
        [
            body.mean(),
            math.log(max(body.std(), 1e-2)),
            xi,
            math.log(max(me * (1 - min(xi, 0.9)), 1e-3)),
        ]
    )

    def params(t: np.ndarray) -> dict[str, Any]:
        return {
            "mu": float(t[0]),
            "sigma": math.exp(t[1]),
            "threshold": u,
            "tail_prob": p,
            "xi": float(t[2]),
            "beta": math.exp(t[3]),
        }

    return theta0, params, [(-15.0, 30.0), (-4.0, 3.0), (-0.9, 5.0), (-15.0, 30.0)]


def fit_family(name: str, data: DurationData, x: np.ndarray) -> FamilyFit | None:
    """Maximum-likelihood fit of family ``name`` to ``data``; ``x``: jittered starting sample.

    Returns None when the family cannot be fitted to these data (``lognormal_gpd`` without a
    tail of at least :data:`MIN_TAIL` jobs). Mixtures ignore ``x``
    (:func:`~schedlab.evaluation.fitting.mixture.fit_mixture`).
    """
    k = families.mixture_components(name)
    if k:
        return _fit_mixture_family(name, k, data)
    spec = _spliced_spec(data, x) if name == "lognormal_gpd" else _simple_spec(name, x)
    if spec is None:
        return None
    theta0, to_params, bounds = spec
    n = max(data.n, 1)

    def nll(theta: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            value = -data.loglik(families.build(name, to_params(theta))) / n
        return value if np.isfinite(value) else 1e12

    theta0 = np.clip(theta0, [b[0] for b in bounds], [b[1] for b in bounds])
    res = optimize.minimize(nll, theta0, method="L-BFGS-B", bounds=bounds)
    converged = bool(res.success)
    if not converged:
        polish = optimize.minimize(
            nll,
            res.x,
            method="Nelder-Mead",
            bounds=bounds,
            options={"maxiter": 4000, "xatol": 1e-8, "fatol": 1e-12},
        )
        res = polish if polish.fun <= res.fun else res
        converged = bool(polish.success)
    params = to_params(res.x)
    return _family_fit(name, params, data, converged)


def _fit_mixture_family(name: str, k: int, data: DurationData) -> FamilyFit:
    mix = fit_mixture(data, k)
    params = {"weights": mix.weights, "mu": mix.mu, "sigma": mix.sigma}
    return _family_fit(name, params, data, mix.converged, mix.starts)


def _family_fit(
    name: str,
    params: dict[str, Any],
    data: DurationData,
    converged: bool,
    starts: dict[str, float] | None = None,
) -> FamilyFit:
    """The :class:`FamilyFit` of ``params`` (numbers or lists of numbers) on ``data``."""
    return FamilyFit(
        family=name,
        params={
            k: float(v) if np.ndim(v) == 0 else [float(a) for a in v] for k, v in params.items()
        },
        loglik=data.loglik(families.build(name, params)),
        n_params=families.n_free_params(name),
        converged=converged,
        starts=starts or {},
    )
