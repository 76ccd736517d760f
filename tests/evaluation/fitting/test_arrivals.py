"""Arrival fits: daily profile (NHPP), batches and overdispersion, Panjer, rate modulation."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from schedlab.evaluation.fitting import arrivals as fa
from schedlab.loaders.workload.components import ArrivalModel
from tests.fit_helpers import PROFILE

STEP = 60.0
DAY = int(86_400 / STEP)


def _timeline(model: ArrivalModel, days: int, seed: int) -> fa.Timeline:
    """One jobset of ``days`` days drawn from ``model`` at phase 0 (the clock's midnight)."""
    rng = np.random.default_rng(seed)
    _, times = model.sample(rng, model.rate_per_step, 1, days * DAY, phase=0.0)
    return fa.Timeline(times, np.array([[0, days * DAY]]), STEP, 0.0)


def _fit(name: str, tl: fa.Timeline) -> fa.Candidate:
    c = fa.fit_candidate(name, tl)
    assert isinstance(c, fa.Candidate), c
    return c


NHPP = ArrivalModel(kind="nhpp", rate_per_step=0.5, period_steps=DAY, profile=PROFILE)
BATCH = ArrivalModel(
    kind="poisson", rate_per_step=0.05, batch_sizes=(1, 2, 5), batch_probs=(0.6, 0.3, 0.1)
)


def test_nhpp_recovers_a_known_daily_profile() -> None:
    tl = _timeline(NHPP, days=20, seed=1)
    fit = _fit("nhpp", tl).model
    assert fit.rate_per_step == pytest.approx(0.5, rel=0.03)
    np.testing.assert_allclose(fit.profile, PROFILE, atol=0.12)
    assert np.mean(fit.profile) == pytest.approx(1.0)
    flat = _fit("nhpp", _timeline(ArrivalModel(kind="poisson", rate_per_step=0.5), 20, seed=2))
    assert np.ptp(flat.model.profile) < 0.3  # no profile is invented for a homogeneous process


def test_nhpp_predicts_held_out_days_better_than_a_constant_rate() -> None:
    tl = _timeline(NHPP, days=10, seed=3)
    cut = tl.split_step(0.7)
    train, test = tl.clip(0, cut), tl.clip(cut, 10 * DAY)
    ll = {m: fa.count_loglik(_fit(m, train), test) for m in ("poisson", "nhpp")}
    assert ll["nhpp"] - ll["poisson"] > 0.05 * test.times.size


def test_nhpp_needs_a_whole_day_and_a_clock() -> None:
    short = _timeline(NHPP, days=1, seed=4).clip(0, DAY // 2)
    assert "every hour" in fa.fit_candidate("nhpp", short)  # type: ignore[operator]
    no_clock = fa.Timeline(np.arange(5), np.array([[0, 10]]), None, None)
    assert "no clock" in fa.fit_candidate("nhpp", no_clock)  # type: ignore[operator]


def test_batched_arrivals_are_overdispersed_and_the_batch_model_wins() -> None:
    tl = _timeline(BATCH, days=200, seed=5)
    d = fa.dispersion(tl, None)
    step_row = d.filter(d["scale_steps"] == 1).row(0, named=True)
    assert step_row["dispersion"] == pytest.approx(4.3 / 1.7, rel=0.06)  # E[B²] / E[B]
    batch = _fit("poisson+batch", tl)
    probs = dict(zip(batch.model.batch_sizes, batch.model.batch_probs, strict=True))
    # two batches in one step look like one bigger batch (about 1.5% of the steps here)
    np.testing.assert_allclose([probs[1], probs[2], probs[5]], (0.6, 0.3, 0.1), atol=0.03)
    assert sum(p for k, p in probs.items() if k not in (1, 2, 5)) < 0.03
    cut = tl.split_step(0.7)
    train, test = tl.clip(0, cut), tl.clip(cut, 200 * DAY)
    gain = fa.count_loglik(_fit("poisson+batch", train), test) - fa.count_loglik(
        _fit("poisson", train), test
    )
    assert gain > 0.2 * test.times.size


def test_poisson_arrivals_are_not_overdispersed() -> None:
    tl = _timeline(ArrivalModel(kind="poisson", rate_per_step=0.3), days=100, seed=6)
    d = fa.dispersion(tl, _fit("poisson", tl).model).filter(pl.col("bins") >= 400)
    assert d.height >= 3
    np.testing.assert_allclose(d["dispersion"], 1.0, atol=0.1)
    np.testing.assert_allclose(d["dispersion_vs_rate"], 1.0, atol=0.1)


def test_daily_profile_explains_hourly_dispersion() -> None:
    tl = _timeline(NHPP, days=20, seed=7)
    d = fa.dispersion(tl, _fit("nhpp", tl).model)
    hour = d.filter(d["scale_steps"] == 60).row(0, named=True)
    assert hour["dispersion"] > 3  # the raw counts vary with the time of day
    assert hour["dispersion_vs_rate"] == pytest.approx(1.0, abs=0.15)  # the profile explains it


def test_panjer_matches_the_compound_poisson_by_convolution() -> None:
    f = np.array([0.0, 0.5, 0.3, 0.0, 0.2])
    mu = np.array([0.4, 2.0])
    got = np.exp(fa.compound_logpmf(mu, np.pad(f, (0, 11))))
    for row, m in zip(got, mu, strict=True):
        want = np.zeros(16)
        power = np.zeros(16)
        power[0] = 1.0
        for k in range(40):  # P(N = k) * f^{*k}
            want += sps.poisson.pmf(k, m) * power
            power = np.convolve(power, f)[:16]
        np.testing.assert_allclose(row, want, rtol=1e-9, atol=1e-15)
    single = np.exp(fa.compound_logpmf(np.array([1.3]), np.array([0.0, 1.0, 0.0, 0.0])))
    np.testing.assert_allclose(single[0], sps.poisson.pmf(np.arange(4), 1.3))


def test_window_modulation_is_flat_for_poisson_and_spread_for_varying_rates() -> None:
    model = ArrivalModel(kind="poisson", rate_per_step=0.5)
    flat = fa.window_modulation(model, _timeline(model, days=10, seed=1), 600)
    assert flat == ()  # no evidence against one rate for every window
    rng = np.random.default_rng(9)
    rates = np.where(np.arange(48) % 2 == 0, 0.2, 0.8)  # windows alternate between two rates
    times = np.concatenate(
        [k * 600 + np.sort(rng.integers(0, 600, rng.poisson(r * 600))) for k, r in enumerate(rates)]
    )
    tl = fa.Timeline(times, np.array([[0, 48 * 600]]), STEP, 0.0)
    spread = np.array(fa.window_modulation(_fit("poisson", tl).model, tl, 600))
    assert spread.mean() == pytest.approx(1.0)
    assert np.quantile(spread, 0.25) == pytest.approx(0.4, abs=0.06)
    assert np.quantile(spread, 0.75) == pytest.approx(1.6, abs=0.06)
    assert math.isclose(len(spread), 48)
