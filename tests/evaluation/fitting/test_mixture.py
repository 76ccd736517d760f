"""Lognormal mixtures: exact EM from several starts, the collapse guard, the real v2017 table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

from schedlab.evaluation.fitting import mixture as mx
from schedlab.evaluation.fitting.durations import fit_family
from schedlab.evaluation.fitting.observations import DurationData
from schedlab.loaders.traces.alibaba2017 import read_alibaba2017
from schedlab.loaders.workload import families
from tests.fit_helpers import quantised

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
REAL = SHARED / "traces" / "alibaba-v2017-batch_task.csv"
needs_real = pytest.mark.skipif(not REAL.is_file(), reason=f"{REAL} is not available")

# Issue 14: the better optimum of the 3-component mixture on the Alibaba 2017 table, as printed
# (3 decimals); under schedlab's likelihood it scores -369,523.75 ("-369,523.7"), while the
# single-start fit stopped at -370,156.5 with a component of median 0.0007 steps.
ISSUE_OPTIMUM = {
    "weights": [0.067, 0.453, 0.480],
    "mu": [1.438, 2.205, 5.080],
    "sigma": [0.162, 1.035, 1.277],
}
OLD_LOGLIK = -370_156.5


def reference_moments(a: float, b: float) -> tuple[float, float, float]:
    """``log P(a < Z <= b)``, ``E[Z]``, ``E[Z²]`` by quadrature, scaled against underflow."""
    shift = 0.0 if a <= 0 <= b else min(a * a, b * b) / 2  # exp(-z²/2 + shift) <= 1 on [a, b]
    mass = [
        integrate.quad(lambda z, p=p: z**p * np.exp(-z * z / 2 + shift), a, b, epsabs=0)[0]
        for p in (0, 1, 2)
    ]
    return np.log(mass[0]) - shift - 0.5 * np.log(2 * np.pi), mass[1] / mass[0], mass[2] / mass[0]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (-1.0, 0.5),
        (2.0, 2.5),
        (-40.0, -39.99),
        (30.0, 30.0001),
        (-np.inf, -3.0),
        (5.0, np.inf),
        (-60.0, -59.999),
        (-np.inf, 0.3),
    ],
)
def test_truncated_moments_match_quadrature(a: float, b: float) -> None:
    logp, m1, m2 = mx._truncated_moments(np.array([a]), np.array([b]))
    ref_logp, ref_m1, ref_m2 = reference_moments(a, b)
    assert logp[0] == pytest.approx(ref_logp, rel=1e-8)
    assert m1[0] == pytest.approx(ref_m1, rel=1e-8, abs=1e-10)
    assert m2[0] == pytest.approx(ref_m2, rel=1e-8, abs=1e-10)
    assert a <= m1[0] <= b


def test_em_never_lowers_the_likelihood_and_agrees_with_the_family_likelihood() -> None:
    truth = {"weights": [0.5, 0.3, 0.2], "mu": [0.5, 3.5, 7.0], "sigma": [0.5, 0.6, 0.8]}
    d = quantised("lognormal_mix3", truth, 5000, seed=7)
    censored = np.random.default_rng(0).random(d.size) < 0.1  # some running jobs
    data = DurationData.from_arrays(d, censored)
    obs = mx.Intervals.from_data(data)
    theta = mx.starting_points(obs, 3)["spread"]
    lls = []
    for _ in range(30):
        theta, ll = mx._em_step(theta, obs)
        lls.append(ll)
    assert np.all(np.diff(lls) >= -1e-6)
    k = 3
    params = {"weights": theta[:k], "mu": theta[k : 2 * k], "sigma": theta[2 * k :]}
    after = mx._em_step(theta, obs)[1]
    assert after == pytest.approx(data.loglik(families.build("lognormal_mix3", params)), abs=1e-6)


def test_every_start_respects_the_floors() -> None:
    d = np.concatenate(
        [np.ones(500, dtype=np.int64), quantised("lognormal", {"mu": 3.0, "sigma": 1.0}, 500, 1)]
    )
    obs = mx.Intervals.from_data(DurationData.from_arrays(d))
    starts = mx.starting_points(obs, 3)
    assert tuple(starts) == mx.STARTS
    for theta in starts.values():
        assert theta[:3].sum() == pytest.approx(1.0)
        assert np.all(theta[3:6] >= mx.MU_FLOOR)
        assert np.all(theta[6:] >= mx.SIGMA_FLOOR)


def test_a_spike_at_one_step_does_not_collapse_below_half_a_step() -> None:
    # 30% of the jobs last one step (a point mass in (0, 1]): the fit models it with a
    # component held at the floors (median half a step), not one that drifts to 0.001 steps
    rng = np.random.default_rng(3)
    body = quantised(
        "lognormal_mix2", {"weights": [0.5, 0.5], "mu": [2.0, 5.0], "sigma": [0.5, 1.0]}, 7000, 2
    )
    d = np.concatenate([np.ones(3000, dtype=np.int64), body])
    fit = fit_family("lognormal_mix3", DurationData.from_arrays(rng.permutation(d)), np.ones(2))
    assert fit is not None
    assert min(fit.params["mu"]) >= mx.MU_FLOOR
    assert min(fit.params["sigma"]) >= mx.SIGMA_FLOOR
    first = families.build(
        "lognormal", {"mu": fit.params["mu"][0], "sigma": fit.params["sigma"][0]}
    )
    assert fit.params["weights"][0] * first.cdf(1.0) == pytest.approx(0.3, abs=0.01)
    assert fit.converged
    assert fit.starts_at_optimum is not None
    assert fit.starts_at_optimum >= 1


@needs_real
def test_alibaba_2017_three_component_mixture_reaches_the_better_optimum() -> None:
    jobs = read_alibaba2017(REAL).jobs  # default options, as the loader tests
    data = DurationData.from_arrays(jobs.jobs.get_column("duration").to_numpy())
    issue = data.loglik(families.build("lognormal_mix3", ISSUE_OPTIMUM))
    assert issue == pytest.approx(-369_523.75, abs=0.01)
    fit = fit_family("lognormal_mix3", data, np.ones(2))
    assert fit is not None
    assert fit.loglik >= issue  # the issue's better value, -369,523.7 as printed
    assert fit.loglik >= -369_523.75
    assert fit.loglik - OLD_LOGLIK > 630
    assert fit.converged
    np.testing.assert_allclose(fit.params["weights"], ISSUE_OPTIMUM["weights"], atol=0.002)
    np.testing.assert_allclose(fit.params["mu"], ISSUE_OPTIMUM["mu"], atol=0.002)
    np.testing.assert_allclose(fit.params["sigma"], ISSUE_OPTIMUM["sigma"], atol=0.002)
    assert min(fit.params["mu"]) > 0  # every component's median is above one step
    # several starts agree on the optimum; others stop at a poorer one (a single start can)
    assert tuple(fit.starts) == mx.STARTS
    assert 2 <= fit.starts_at_optimum < len(mx.STARTS)  # type: ignore[operator]
    assert max(fit.starts.values()) == pytest.approx(fit.loglik, abs=0.01)
    assert min(fit.starts.values()) < fit.loglik - 100
