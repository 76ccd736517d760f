"""Duration distribution families of a fitted workload model (design.md §7).

Every family is a continuous distribution on ``x > 0`` with its **location fixed at 0**; ``x`` is
a duration in **time steps** of the JobSet it was fitted to (a trace's durations are quantised as
``max(1, ceil(seconds / step))``, so a job of ``d`` steps lasted ``x`` in ``(d - 1, d]``).

==================  =====================================  ===================================
name                parameters (JSON)                       distribution
==================  =====================================  ===================================
``exponential``     ``scale``                               ``scipy.stats.expon``
``gamma``           ``shape``, ``scale``                    ``scipy.stats.gamma``
``weibull``         ``shape``, ``scale``                    ``scipy.stats.weibull_min``
``lognormal``       ``mu``, ``sigma`` (of ``log x``)        ``scipy.stats.lognorm``
``loglogistic``     ``shape``, ``scale``                    ``scipy.stats.fisk``
``lomax``           ``shape`` (tail index α), ``scale``     ``scipy.stats.lomax`` (Pareto II)
``lognormal_gpd``   ``mu``, ``sigma``, ``threshold``,       lognormal body below ``threshold``,
                    ``tail_prob``, ``xi``, ``beta``         generalized Pareto tail above it
``lognormal_mix2``  ``weights``, ``mu``, ``sigma`` (lists)  mixture of 2 lognormals
``lognormal_mix3``  same, 3 components                      mixture of 3 lognormals
==================  =====================================  ===================================

:func:`build` returns an object with the frozen-scipy interface used here (``cdf``, ``sf``,
``logcdf``, ``logsf``, ``logpdf``, ``ppf``, ``rvs(size=, random_state=)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

Params = Mapping[str, Any]

SCIPY_FAMILIES: dict[str, tuple[tuple[str, ...], Callable[[Params], Any]]] = {
    "exponential": (("scale",), lambda p: sps.expon(scale=p["scale"])),
    "gamma": (("shape", "scale"), lambda p: sps.gamma(p["shape"], scale=p["scale"])),
    "weibull": (("shape", "scale"), lambda p: sps.weibull_min(p["shape"], scale=p["scale"])),
    "lognormal": (("mu", "sigma"), lambda p: sps.lognorm(p["sigma"], scale=math.exp(p["mu"]))),
    "loglogistic": (("shape", "scale"), lambda p: sps.fisk(p["shape"], scale=p["scale"])),
    "lomax": (("shape", "scale"), lambda p: sps.lomax(p["shape"], scale=p["scale"])),
}
SPLICED_PARAMS = ("mu", "sigma", "threshold", "tail_prob", "xi", "beta")
MIXTURE_PARAMS = ("weights", "mu", "sigma")
FAMILIES = (*SCIPY_FAMILIES, "lognormal_gpd", "lognormal_mix2", "lognormal_mix3")
"""Every family name, in report order."""


def mixture_components(name: str) -> int:
    """Number of components of ``lognormal_mix<k>`` (0 for the other families)."""
    return int(name.removeprefix("lognormal_mix")) if name.startswith("lognormal_mix") else 0


def param_names(name: str) -> tuple[str, ...]:
    """JSON parameter names of family ``name``."""
    if name in SCIPY_FAMILIES:
        return SCIPY_FAMILIES[name][0]
    if name == "lognormal_gpd":
        return SPLICED_PARAMS
    if mixture_components(name):
        return MIXTURE_PARAMS
    msg = f"unknown duration family {name!r}; known: {', '.join(FAMILIES)}"
    raise ValueError(msg)


def n_free_params(name: str) -> int:
    """Free parameters counted by AIC/BIC (``lognormal_gpd``'s threshold is fixed, not counted)."""
    k = mixture_components(name)
    if k:
        return 3 * k - 1
    return 5 if name == "lognormal_gpd" else len(param_names(name))


def check_params(name: str, params: Params) -> str | None:
    """Why ``params`` are invalid for family ``name`` (a message), or None when valid."""
    try:
        names = param_names(name)
    except ValueError as exc:
        return str(exc)
    missing = [p for p in names if p not in params]
    if missing:
        return f"parameters {missing} are missing"
    k = mixture_components(name)
    try:
        vals = {p: np.asarray(params[p], dtype=np.float64) for p in names}
    except (TypeError, ValueError):
        return f"parameters {dict(params)} are not numbers"
    if any(not np.all(np.isfinite(v)) for v in vals.values()):
        return "parameters must be finite"
    if k:
        if any(v.shape != (k,) for v in vals.values()):
            return f"weights, mu and sigma must be lists of {k} numbers"
        if np.any(vals["weights"] < 0) or abs(vals["weights"].sum() - 1) > 1e-6:
            return "mixture weights must be >= 0 and sum to 1"
        return None if np.all(vals["sigma"] > 0) else "every sigma must be > 0"
    if any(v.shape != () for v in vals.values()):
        return "parameters must be numbers"
    positive = [p for p in names if p not in ("mu", "xi")]
    bad = [p for p in positive if not vals[p] > 0]
    if bad:
        return f"parameters {bad} must be > 0"
    if name == "lognormal_gpd" and not 0 < vals["tail_prob"] < 1:
        return "tail_prob must be in (0, 1)"
    return _check_usable(name, params)


def _check_usable(name: str, params: Params) -> str | None:
    """Why finite but extreme ``params`` give no usable distribution (an overflow, a CDF that is
    not a number at 1 and 10 steps), or None."""
    try:
        probe = np.asarray(build(name, params).cdf(np.array([1.0, 10.0])), dtype=np.float64)
    except (ArithmeticError, ValueError) as exc:
        return f"parameters {dict(params)} give no usable distribution ({exc})"[:300]
    if not np.all(np.isfinite(probe)):
        return f"parameters {dict(params)} give no usable distribution (CDF {probe.tolist()})"
    return None


def build(name: str, params: Params) -> Any:
    """The distribution of family ``name`` with ``params`` (frozen-scipy interface)."""
    if name in SCIPY_FAMILIES:
        return SCIPY_FAMILIES[name][1](params)
    if name == "lognormal_gpd":
        return SplicedLognormalGPD(**{p: float(params[p]) for p in SPLICED_PARAMS})
    if mixture_components(name):
        return LognormalMixture(params["weights"], params["mu"], params["sigma"])
    param_names(name)  # raises with the list of known names
    raise AssertionError(name)


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(x)


class _FromLogs:
    """``cdf`` and ``sf`` of a distribution that computes them in logs (for the tails)."""

    def logcdf(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def logsf(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def cdf(self, x: Any) -> np.ndarray:
        return np.exp(self.logcdf(x))

    def sf(self, x: Any) -> np.ndarray:
        return np.exp(self.logsf(x))


class LognormalMixture(_FromLogs):
    """Mixture of lognormals: ``log x`` is a Gaussian mixture (weights, mu, sigma)."""

    def __init__(self, weights: Any, mu: Any, sigma: Any) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        self.mu = np.asarray(mu, dtype=np.float64)
        self.sigma = np.asarray(sigma, dtype=np.float64)
        self._logw = _log(self.weights)

    def _z(self, x: Any) -> np.ndarray:
        lx = _log(np.maximum(np.asarray(x, dtype=np.float64), 0.0))
        return (lx[..., None] - self.mu) / self.sigma

    def logcdf(self, x: Any) -> np.ndarray:
        return special.logsumexp(self._logw + special.log_ndtr(self._z(x)), axis=-1)

    def logsf(self, x: Any) -> np.ndarray:
        return special.logsumexp(self._logw + special.log_ndtr(-self._z(x)), axis=-1)

    def logpdf(self, x: Any) -> np.ndarray:
        z = self._z(x)
        lx = _log(np.asarray(x, dtype=np.float64))
        terms = self._logw + sps.norm.logpdf(z) - np.log(self.sigma)
        return special.logsumexp(terms, axis=-1) - lx

    def ppf(self, q: Any) -> np.ndarray:
        """Quantiles by bisection on ``log x`` (80 halvings: exact to float precision)."""
        q = np.asarray(q, dtype=np.float64)
        lo = np.full(q.shape, float(np.min(self.mu - 12 * self.sigma)))
        hi = np.full(q.shape, float(np.max(self.mu + 12 * self.sigma)))
        for _ in range(80):
            mid = (lo + hi) / 2
            below = self.cdf(np.exp(mid)) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return np.exp((lo + hi) / 2)

    def rvs(self, size: int, random_state: np.random.Generator) -> np.ndarray:
        comp = random_state.choice(self.weights.size, size=size, p=self.weights)
        return np.exp(self.mu[comp] + self.sigma[comp] * random_state.standard_normal(size))

    def mean(self) -> float:
        return float(np.sum(self.weights * np.exp(self.mu + self.sigma**2 / 2)))


class SplicedLognormalGPD(_FromLogs):
    """Lognormal body on ``(0, threshold]`` (weight ``1 - tail_prob``) and a generalized
    Pareto tail ``threshold + GPD(xi, beta)`` above it (weight ``tail_prob``)."""

    def __init__(
        self, *, mu: float, sigma: float, threshold: float, tail_prob: float, xi: float, beta: float
    ) -> None:
        self.body = sps.lognorm(sigma, scale=math.exp(mu))
        self.tail = sps.genpareto(xi, scale=beta)
        self.u, self.p = threshold, tail_prob
        self._log_fu = float(self.body.logcdf(threshold))

    def _parts(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        return x, np.minimum(x, self.u), np.maximum(x - self.u, 0.0)

    def logcdf(self, x: Any) -> np.ndarray:
        x, low, excess = self._parts(x)
        body = math.log1p(-self.p) + self.body.logcdf(low) - self._log_fu
        tail = np.log1p(-self.p * self.tail.sf(excess))
        return np.where(x <= self.u, body, tail)

    def logsf(self, x: Any) -> np.ndarray:
        x, low, excess = self._parts(x)
        ratio = np.exp(self.body.logcdf(low) - self._log_fu)
        body = np.log1p(-(1 - self.p) * np.minimum(ratio, 1.0))
        tail = math.log(self.p) + self.tail.logsf(excess)
        return np.where(x <= self.u, body, tail)

    def logpdf(self, x: Any) -> np.ndarray:
        x, low, excess = self._parts(x)
        body = math.log1p(-self.p) + self.body.logpdf(low) - self._log_fu
        tail = math.log(self.p) + self.tail.logpdf(excess)
        return np.where(x <= self.u, body, tail)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        cut = 1 - self.p
        body = self.body.ppf(np.minimum(q / cut, 1.0) * math.exp(self._log_fu))
        tail = self.u + self.tail.ppf(np.clip((q - cut) / self.p, 0.0, 1.0))
        return np.where(q <= cut, body, tail)

    def rvs(self, size: int, random_state: np.random.Generator) -> np.ndarray:
        return self.ppf(random_state.random(size))


def sample_steps(dist: Any, n: int, rng: np.random.Generator, max_steps: int) -> np.ndarray:
    """``n`` durations in steps: ``max(1, ceil(x))`` of draws ``x`` truncated to ``x <= max_steps``.

    Draws above ``max_steps`` are redrawn (the truncated distribution, not a clip).
    """
    x = np.asarray(dist.rvs(size=n, random_state=rng), dtype=np.float64).reshape(n)
    for _ in range(200):
        over = ~(x <= max_steps)
        if not over.any():
            break
        x[over] = np.asarray(dist.rvs(size=int(over.sum()), random_state=rng)).reshape(-1)
    x = np.minimum(x, max_steps)  # only if 200 rounds left some (F(max) ~ 0): never in practice
    return np.clip(np.ceil(x), 1, max_steps).astype(np.int64)


EXACT_GRID = 100_000
"""Durations up to this many steps get their own grid point in :func:`discrete_pmf`."""


def discrete_pmf(dist: Any, max_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of the durations :func:`sample_steps` draws (``max(1, ceil(x))``, truncated).

    Returns
    -------
    values, probs
        float64 arrays: every integer ``1 .. max_steps`` up to :data:`EXACT_GRID`, then
        geometric bins (ratio 1.001) represented by their midpoint, so moments are exact to
        about 0.05% for very long durations. ``probs`` sums to 1.
    """
    top = int(max_steps)
    edges = np.arange(0, min(top, EXACT_GRID) + 1, dtype=np.float64)
    if top > EXACT_GRID:
        geo = np.geomspace(EXACT_GRID, top, num=int(np.log(top / EXACT_GRID) / 1e-3) + 2)
        edges = np.concatenate([edges, np.unique(np.ceil(geo[1:]))])
    cdf = np.asarray(dist.cdf(edges), dtype=np.float64)
    cdf[0] = 0.0
    probs = np.diff(cdf) / cdf[-1]
    values = np.where(np.diff(edges) == 1, edges[1:], (edges[:-1] + 1 + edges[1:]) / 2)
    return values, probs
