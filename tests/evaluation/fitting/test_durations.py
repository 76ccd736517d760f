"""Duration fits: parameter recovery, model selection, censoring, integer observations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from schedlab.evaluation.fitting.durations import fit_family, tail_threshold
from schedlab.evaluation.fitting.gof import goodness, kaplan_meier, ks_ad, randomized_pit
from schedlab.evaluation.fitting.observations import DurationData
from schedlab.loaders.workload import families
from tests.fit_helpers import quantised

TRUTH: dict[str, dict[str, Any]] = {
    "exponential": {"scale": 40.0},
    "gamma": {"shape": 0.6, "scale": 80.0},
    "weibull": {"shape": 0.7, "scale": 50.0},
    "lognormal": {"mu": 3.0, "sigma": 1.5},
    "loglogistic": {"shape": 1.3, "scale": 30.0},
    "lomax": {"shape": 1.8, "scale": 60.0},
    "lognormal_gpd": {
        "mu": 3.0,
        "sigma": 1.0,
        "threshold": 0.0,
        "tail_prob": 0.1,
        "xi": 0.4,
        "beta": 40.0,
    },
    "lognormal_mix2": {"weights": [0.7, 0.3], "mu": [1.0, 5.0], "sigma": [0.6, 1.0]},
    "lognormal_mix3": {"weights": [0.5, 0.3, 0.2], "mu": [0.5, 3.5, 7.0], "sigma": [0.5, 0.6, 0.8]},
}
TOLERANCE = {"mu": 0.15, "xi": 0.15, "weights": 0.04}
"""Absolute tolerance of these parameters; the others are checked within 12% (relative)."""


def _fit(name: str, d: np.ndarray, censored: np.ndarray | None = None) -> Any:
    data = DurationData.from_arrays(d, censored)
    fit = fit_family(name, data, data.jitter(np.random.default_rng(1), 5000))
    assert fit is not None
    return fit


def _truth(name: str) -> dict[str, Any]:
    params = dict(TRUTH[name])
    if name == "lognormal_gpd":  # the threshold is the 90th percentile of the body + tail
        body = families.build("lognormal", {"mu": 3.0, "sigma": 1.0})
        params["threshold"] = float(np.ceil(body.ppf(0.9)))
    return params


@pytest.mark.parametrize("name", list(TRUTH))
def test_parameters_are_recovered(name: str) -> None:
    truth = _truth(name)
    d = quantised(name, truth, 5000, seed=7)
    fit = _fit(name, d)
    assert fit.converged
    for key, want in truth.items():
        got = np.asarray(fit.params[key], dtype=float)
        if key in TOLERANCE:
            np.testing.assert_allclose(got, want, atol=TOLERANCE[key], err_msg=key)
        elif key != "threshold":
            np.testing.assert_allclose(got, want, rtol=0.12, err_msg=key)


@pytest.mark.parametrize(
    ("truth", "params"),
    [
        ("lognormal", {"mu": 3.0, "sigma": 1.5}),
        ("weibull", {"shape": 0.6, "scale": 40.0}),
        ("gamma", {"shape": 3.0, "scale": 10.0}),
    ],
)
def test_aic_picks_the_true_family(truth: str, params: dict[str, Any]) -> None:
    d = quantised(truth, params, 5000, seed=11)
    aic = {name: _fit(name, d).aic() for name in ("lognormal", "weibull", "gamma")}
    assert min(aic, key=aic.__getitem__) == truth
    assert sorted(aic.values())[1] - aic[truth] > 10  # a clear margin, not a coin toss


def test_right_censored_durations_are_recovered_and_ignoring_them_is_biased() -> None:
    rng = np.random.default_rng(3)
    x = families.build("lognormal", {"mu": 4.0, "sigma": 1.0}).rvs(size=8000, random_state=rng)
    stop = rng.uniform(0, 150, size=x.size)  # still running when the trace ended
    censored = x > stop
    d = np.maximum(1, np.ceil(np.minimum(x, stop))).astype(np.int64)
    assert 0.3 < censored.mean() < 0.8
    fit = _fit("lognormal", d, censored)
    assert fit.params["mu"] == pytest.approx(4.0, abs=0.1)
    assert fit.params["sigma"] == pytest.approx(1.0, rel=0.08)
    naive = _fit("lognormal", d)
    assert naive.params["mu"] < 3.6  # treating running jobs as finished underestimates


def test_integer_durations_are_intervals_not_points() -> None:
    # Most jobs last 1-3 steps: treating d as the exact value would overestimate the scale by
    # about half a step; the interval likelihood recovers it.
    d = quantised("exponential", {"scale": 1.5}, 20_000, seed=5)
    assert _fit("exponential", d).params["scale"] == pytest.approx(1.5, rel=0.03)
    assert d.mean() > 1.9  # the naive estimate


def test_tail_threshold_needs_a_tail() -> None:
    assert tail_threshold(DurationData.from_arrays(np.array([1, 1, 2, 2, 3] * 10))) is None
    d = quantised("lognormal", {"mu": 3.0, "sigma": 1.0}, 2000, seed=2)
    u, p = tail_threshold(DurationData.from_arrays(d))  # type: ignore[misc]
    assert p == pytest.approx(0.1, abs=0.01)
    assert np.mean(d > u) == pytest.approx(p)


def test_randomized_pit_is_uniform_under_the_true_model_only() -> None:
    d = quantised("lognormal", {"mu": 1.0, "sigma": 1.0}, 20_000, seed=9)  # many ties
    rng = np.random.default_rng(0)
    true = families.build("lognormal", {"mu": 1.0, "sigma": 1.0})
    wrong = families.build("exponential", {"scale": float(d.mean())})
    ks_true, ad_true = ks_ad(*randomized_pit(true, d, rng))
    ks_wrong, ad_wrong = ks_ad(*randomized_pit(wrong, d, rng))
    assert ks_true < 0.015
    assert ad_true < 3.0
    assert ks_wrong > 0.05
    assert ad_wrong > 100


def test_goodness_reports_quantile_ratios_near_one_for_the_true_model() -> None:
    d = quantised("weibull", {"shape": 0.8, "scale": 100.0}, 20_000, seed=4)
    data = DurationData.from_arrays(d)
    dist = families.build("weibull", {"shape": 0.8, "scale": 100.0})
    g = goodness(dist, data, d, int(d.max()), np.random.default_rng(0))
    for key in ("q50_ratio", "q90_ratio", "q99_ratio"):
        assert g[key] == pytest.approx(1.0, abs=0.06), key


def test_kaplan_meier_is_the_ecdf_without_censoring() -> None:
    d = np.array([1, 2, 2, 3, 5, 5, 5, 8])
    t, s = kaplan_meier(DurationData.from_arrays(d))
    np.testing.assert_array_equal(t, [1, 2, 3, 5, 8])
    np.testing.assert_allclose(s, 1 - np.array([1, 3, 4, 7, 8]) / 8)
