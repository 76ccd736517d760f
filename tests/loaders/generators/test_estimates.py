"""Estimate models of the synthetic generators: exact, factor, modal."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.loaders.generators.estimates import MODAL_SECONDS, draw_estimates, modal_steps
from schedlab.registry import generators

DURATIONS = np.array([1, 2, 5, 14, 15, 16, 90, 3000, 5000], dtype=np.int64)


def test_exact_is_the_duration_and_writes_no_column() -> None:
    rng = np.random.default_rng(0)
    assert draw_estimates("exact", DURATIONS, rng).tolist() == DURATIONS.tolist()
    js = generators.make("deeprm").generate(0.8, n_jobsets=2, seed=1)
    assert "estimate" not in js.jobs.columns  # DeepRM's jobsets unchanged


def test_factor_over_estimates_within_the_factor() -> None:
    est = draw_estimates("factor", DURATIONS, np.random.default_rng(0), factor=3.0)
    assert (est >= DURATIONS).all()
    assert (est <= np.ceil(3.0 * DURATIONS)).all()
    with pytest.raises(ValueError, match="estimate_factor must be >= 1"):
        draw_estimates("factor", DURATIONS, np.random.default_rng(0), factor=0.5)


def test_modal_takes_the_smallest_modal_value_at_least_the_duration() -> None:
    values = modal_steps(60.0)  # minutes: 5, 10, 15, 30, 60, ..., 2880
    assert values.tolist() == (MODAL_SECONDS / 60).astype(int).tolist()
    est = draw_estimates("modal", DURATIONS, np.random.default_rng(0), step_seconds=60.0)
    assert est.tolist() == [5, 5, 5, 15, 15, 30, 120, 5760, 5760]  # beyond 48 h: 2 x 48 h
    assert np.isin(est[values[-1] >= DURATIONS], values).all()
    assert (est >= DURATIONS).all()
    assert modal_steps(1e6).tolist() == [1]  # coarse steps: every value is one step


@pytest.mark.parametrize("name", ["deeprm", "poisson", "liu-uniform"])
@pytest.mark.parametrize("model", ["factor", "modal"])
def test_generators_write_estimates_reproducibly(name: str, model: str) -> None:
    gen = generators.make(name, estimate=model, estimate_factor=2.0, step_seconds=30.0)
    a = gen.generate(0.8, n_jobsets=3, seed=7).jobs
    b = gen.generate(0.8, n_jobsets=3, seed=7).jobs
    assert a.equals(b)
    est, dur = a.get_column("estimate").to_numpy(), a.get_column("duration").to_numpy()
    assert (est >= dur).all()
    if model == "modal":
        assert np.isin(est[dur <= modal_steps(30.0)[-1]], modal_steps(30.0)).all()
    plain = generators.make(name).generate(0.8, n_jobsets=3, seed=7).jobs
    assert plain.get_column("duration").equals(a.get_column("duration"))  # same jobs
