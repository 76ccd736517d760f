"""Empirical demand tables: joint frequencies, duration classes, truncation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.evaluation.fitting.demands import MIN_CLASS_JOBS, class_edges, fit_demands


def _jobs(n: int, seed: int) -> pl.DataFrame:
    """Short jobs ask (1, 2) or (2, 1); long jobs (4, 4) or (8, 1): demand depends on length."""
    rng = np.random.default_rng(seed)
    duration = rng.integers(1, 101, n)
    short = duration <= 30
    pick = rng.random(n)
    cpu = np.where(short, np.where(pick < 0.7, 1.0, 2.0), np.where(pick < 0.4, 4.0, 8.0))
    mem = np.where(short, np.where(pick < 0.7, 2.0, 1.0), np.where(pick < 0.4, 4.0, 1.0))
    return pl.DataFrame({"duration": duration, "cpu": cpu, "mem": mem})


def test_generated_demands_reproduce_the_joint_frequencies() -> None:
    jobs = _jobs(20_000, seed=1)
    model, table = fit_demands(jobs, ["cpu", "mem"], n_classes=1)
    assert model.class_edges == ()
    want = jobs.group_by("cpu", "mem").len().with_columns(pl.col("len") / jobs.height)
    got = table.select("cpu", "mem", "prob").join(want, on=["cpu", "mem"])
    assert got.height == 4
    np.testing.assert_allclose(got["prob"], got["len"])
    rng = np.random.default_rng(2)
    drawn = model.sample(rng, jobs["duration"].to_numpy())
    freq = pl.DataFrame(drawn, schema=["cpu", "mem"], orient="row").group_by("cpu", "mem").len()
    both = freq.join(want, on=["cpu", "mem"], suffix="_trace")
    np.testing.assert_allclose(both["len"] / jobs.height, both["len_trace"], atol=0.01)


def test_duration_classes_keep_the_dependence_between_length_and_demand() -> None:
    jobs = _jobs(20_000, seed=3)
    model, _ = fit_demands(jobs, ["cpu", "mem"], n_classes=4)
    assert len(model.class_edges) == 3
    durations = np.array([5] * 1000 + [90] * 1000)
    drawn = model.sample(np.random.default_rng(4), durations)
    assert set(map(tuple, drawn[:1000])) <= {(1.0, 2.0), (2.0, 1.0)}
    assert set(map(tuple, drawn[1000:])) <= {(4.0, 4.0), (8.0, 1.0)}
    assert np.mean(drawn[1000:, 0] == 8.0) == pytest.approx(0.6, abs=0.05)
    unconditioned, _ = fit_demands(jobs, ["cpu", "mem"], n_classes=1)
    mixed = unconditioned.sample(np.random.default_rng(4), durations)
    assert np.mean(mixed[:1000, 0] >= 4) > 0.5  # without classes, lengths and sizes mix


def test_max_values_keeps_the_most_frequent_and_records_coverage() -> None:
    jobs = _jobs(20_000, seed=5)
    model, table = fit_demands(jobs, ["cpu", "mem"], n_classes=1, max_values=2)
    assert table.height == 2
    assert model.probs[0].sum() == pytest.approx(1.0)
    kept = table["count"].sum() / jobs.height
    assert model.coverage[0] == pytest.approx(kept)
    assert model.coverage[0] < 1


def test_small_classes_are_merged() -> None:
    d = pl.Series("duration", [1] * 5000 + [2] * 5000 + [3] * (MIN_CLASS_JOBS - 1))
    assert class_edges(d, 3) == (1,)  # the class of the 3s is too small: merged with the 2s
    d = pl.Series("duration", [1] * 5000 + [2] * 5000 + [3] * MIN_CLASS_JOBS)
    assert class_edges(d, 3) == (1, 2)
    assert class_edges(d, 1) == ()
    assert class_edges(pl.Series("duration", [7] * 1000), 4) == ()
