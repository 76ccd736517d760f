"""Bootstrap confidence intervals and per-group summaries over jobsets."""

from __future__ import annotations

import time

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation.settings import StatsSettings
from schedlab.evaluation.stats import SUMMARY_STATS, bootstrap_mean_ci, summarize


def test_bootstrap_ci_contains_true_mean_and_has_normal_width() -> None:
    x = np.random.default_rng(1).normal(10.0, 1.0, size=200)
    mean, low, high = bootstrap_mean_ci(x, rng=np.random.default_rng(2))
    assert mean == pytest.approx(x.mean())
    assert low < 10.0 < high
    assert low < mean < high
    half_width = 1.96 / np.sqrt(200)  # normal-theory half width, sigma = 1
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.25)


def test_bootstrap_ci_is_percentile_so_skewed_data_give_a_longer_upper_arm() -> None:
    # the percentile interval follows the right skew of the resampled means; a "basic" or
    # normal interval would have a longer lower arm or equal arms
    x = np.random.default_rng(3).lognormal(0.0, 1.5, size=30)
    mean, low, high = bootstrap_mean_ci(x, rng=np.random.default_rng(9))
    assert high - mean > 1.2 * (mean - low)


def test_bootstrap_ci_coverage_is_near_nominal() -> None:
    rng = np.random.default_rng(3)
    hits = 0
    n_trials = 200
    for _ in range(n_trials):
        x = rng.exponential(2.0, size=40)
        _, low, high = bootstrap_mean_ci(x, rng=rng, settings=StatsSettings(n_resamples=500))
        hits += low <= 2.0 <= high
    assert 0.85 <= hits / n_trials <= 0.99


def test_bootstrap_ci_is_reproducible_with_the_same_seed() -> None:
    x = np.arange(20.0) ** 1.5
    a = bootstrap_mean_ci(x, rng=np.random.default_rng(5))
    b = bootstrap_mean_ci(x, rng=np.random.default_rng(5))
    c = bootstrap_mean_ci(x, rng=np.random.default_rng(6))
    assert a == b
    assert a != c


@pytest.mark.parametrize("values", [[3.5], [2.0, 2.0, 2.0, 2.0]])
def test_bootstrap_ci_degenerate_data_collapses_without_warning(values: list[float]) -> None:
    assert bootstrap_mean_ci(np.array(values), rng=np.random.default_rng(0)) == (
        values[0], values[0], values[0]
    )  # fmt: skip


def test_bootstrap_ci_two_values_spans_them() -> None:
    mean, low, high = bootstrap_mean_ci(np.array([1.0, 3.0]), rng=np.random.default_rng(0))
    assert (mean, low, high) == (2.0, 1.0, 3.0)


@pytest.mark.parametrize(
    ("values", "match"),
    [(np.array([]), "non-empty"), (np.array([1.0, np.nan]), "finite"), (np.ones((2, 2)), "1-d")],
)
def test_bootstrap_ci_rejects_bad_input(values: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bootstrap_mean_ci(values, rng=np.random.default_rng(0))


def per_jobset_table(n_policies: int, n_loads: int, n_jobsets: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_policies * n_loads * n_jobsets
    return pl.DataFrame(
        {
            "policy": np.repeat([f"p{i}" for i in range(n_policies)], n_loads * n_jobsets),
            "load": np.tile(np.repeat(np.linspace(0.1, 1.9, n_loads), n_jobsets), n_policies),
            "jobset": np.tile(np.arange(n_jobsets), n_policies * n_loads).astype(np.int32),
            "slowdown": 1 + rng.exponential(3.0, n),
            "completion": rng.uniform(1, 50, n),
        }
    )


def test_summarize_shape_columns_and_values() -> None:
    df = per_jobset_table(3, 2, 25)
    out = summarize(df, settings=StatsSettings(seed=0))
    assert out.columns == ["policy", "load", "metric", *SUMMARY_STATS]
    assert out.height == 3 * 2 * 2
    assert out.get_column("n_jobsets").to_list() == [25] * 12
    assert out.select("policy", "metric").rows()[:4] == [
        ("p0", "slowdown"), ("p0", "completion"), ("p0", "slowdown"), ("p0", "completion")
    ]  # fmt: skip
    row = out.row(0, named=True)
    x = df.filter(policy="p0", load=row["load"]).get_column("slowdown").to_numpy()
    assert row["mean"] == pytest.approx(x.mean())
    assert row["median"] == pytest.approx(np.median(x))
    assert row["q25"] == pytest.approx(np.quantile(x, 0.25))
    assert row["q75"] == pytest.approx(np.quantile(x, 0.75))
    assert row["ci_low"] < row["mean"] < row["ci_high"]


def test_summarize_is_deterministic_and_independent_of_group_order() -> None:
    df = per_jobset_table(3, 2, 25)
    a = summarize(df, settings=StatsSettings(seed=4))
    assert a.equals(summarize(df, settings=StatsSettings(seed=4)))
    # shuffled rows and a missing group leave each group's numbers unchanged
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1).filter(pl.col("policy") != "p1")
    b = summarize(shuffled, settings=StatsSettings(seed=4))
    expected = a.filter(pl.col("policy") != "p1").sort("policy", "load", "metric")
    assert_frame_equal(b.sort("policy", "load", "metric"), expected, check_exact=False)
    c = summarize(df, settings=StatsSettings(seed=5))
    assert c.get_column("mean").equals(a.get_column("mean"))
    assert not c.get_column("ci_low").equals(a.get_column("ci_low"))


def test_summarize_keeps_null_keys_and_skips_null_values() -> None:
    df = pl.DataFrame(
        {"policy": ["a", "a", "a", "b"], "load": [None, None, None, 0.5],
         "slowdown": [1.0, 3.0, None, 2.0]}
    )  # fmt: skip
    out = summarize(df, metrics=["slowdown"], settings=StatsSettings(seed=0))
    assert out.select("policy", "load", "mean", "n_jobsets").rows() == [
        ("a", None, 2.0, 2), ("b", 0.5, 2.0, 1)
    ]  # fmt: skip
    assert out.row(1, named=True)["ci_low"] == out.row(1, named=True)["ci_high"] == 2.0


def test_summarize_names_the_row_of_a_non_finite_value() -> None:
    df = per_jobset_table(2, 2, 5).with_columns(
        completion=pl.when((pl.col("policy") == "p1") & (pl.col("jobset") == 3))
        .then(np.inf)
        .otherwise(pl.col("completion"))
    )
    with pytest.raises(
        NonFiniteValueError,
        match=r"completion must be finite, got inf for policy 'p1', load 0.1, jobset 3 "
        r"\(2 non-finite",
    ):
        summarize(df)
    with pytest.raises(NonFiniteValueError, match=r"got nan at index 1 \(1 non-finite of 3\)"):
        bootstrap_mean_ci(np.array([1.0, np.nan, 2.0]), rng=np.random.default_rng(0))


def test_summarize_rejects_missing_columns() -> None:
    with pytest.raises(ValueError, match="wait"):
        summarize(per_jobset_table(1, 1, 3), metrics=["wait"])


def test_summarize_is_fast_on_a_full_sweep() -> None:
    df = per_jobset_table(6, 10, 100)
    t0 = time.perf_counter()
    out = summarize(df, settings=StatsSettings(seed=0))
    assert time.perf_counter() - t0 < 5.0
    assert out.height == 6 * 10 * 2
