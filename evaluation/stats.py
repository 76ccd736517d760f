"""Summary statistics over jobsets: means with bootstrap confidence intervals (design.md §7).

Every statistic here treats one jobset as one observation (the input is a per-jobset table from
:mod:`schedlab.evaluation.metrics`); pooled per-job values are never tested or bootstrapped.

Confidence intervals are **percentile bootstrap** intervals of the mean
(:func:`scipy.stats.bootstrap` with ``method="percentile"``): the jobsets of a group are resampled
with replacement ``n_resamples`` times, and the interval is the ``(1 − c)/2`` and ``(1 + c)/2``
quantiles of the resampled means. Randomness comes only from ``numpy.random.default_rng`` seeded
explicitly; each (group, metric) gets its own stream derived from the seed and the group's key,
so a group's interval does not depend on the order or presence of other groups; a group's
values are sorted before resampling, so neither does the order of its rows.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats as sps

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation.settings import DEFAULT_STATS, StatsSettings

CI_METHOD = "percentile bootstrap over jobsets (scipy.stats.bootstrap, method='percentile')"
"""Human-readable description of the interval method, for reports."""

SUMMARY_STATS = ("mean", "ci_low", "ci_high", "median", "q25", "q75", "n_jobsets")
"""Statistic columns of :func:`summarize`, after the group and ``metric`` columns."""

ROW_KEYS = ("policy", "workload", "load", "seed", "jobset", "bucket")
"""Columns that identify a row of a per-jobset table, named by :func:`require_finite_rows`."""


def require_finite(values: np.ndarray, what: str) -> None:
    """Raise :class:`~schedlab.errors.NonFiniteValueError` if ``values`` holds NaN or ±inf.

    Parameters
    ----------
    values
        Array of any shape.
    what
        What the values are, for the message (e.g. ``"values"``, ``"matrix (jobsets ×
        policies)"``); the message adds the first non-finite value, its index and the count.
    """
    x = np.asarray(values, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(x))
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        at = idx[0] if len(idx) == 1 else list(idx)
        msg = (
            f"{what} must be finite, got {x[idx]} at index {at} "
            f"({bad.shape[0]} non-finite of {x.size})"
        )
        raise NonFiniteValueError(msg)


def require_finite_rows(df: pl.DataFrame, metrics: Sequence[str]) -> None:
    """Raise :class:`~schedlab.errors.NonFiniteValueError` naming a row with NaN or ±inf.

    Null values (a run that did not happen) are allowed; a non-finite value is an error whose
    message names the metric, the value and the row's :data:`ROW_KEYS` (policy, workload, load,
    seed, jobset, bucket: those present), and how many values of that metric are non-finite.

    Parameters
    ----------
    df
        A per-jobset (or per-length) table.
    metrics
        Numeric columns to check; columns not in ``df`` are skipped.
    """
    keys = [c for c in ROW_KEYS if c in df.columns]
    for metric in (m for m in metrics if m in df.columns):
        bad = df.filter(~pl.col(metric).cast(pl.Float64).is_finite())
        if bad.height:
            row = bad.row(0, named=True)
            where = ", ".join(f"{c} {row[c]!r}" for c in keys)
            msg = (
                f"per-jobset {metric} must be finite, got {row[metric]} for {where} "
                f"({bad.height} non-finite value(s) of {metric}); a run that did not happen "
                "must be a missing row or a null, not NaN or inf"
            )
            raise NonFiniteValueError(msg)


def bootstrap_mean_ci(
    values: np.ndarray, *, rng: np.random.Generator, settings: StatsSettings = DEFAULT_STATS
) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile-bootstrap confidence interval.

    Parameters
    ----------
    values
        Observations, shape ``(n,)``, one per jobset; must be finite and non-empty.
    rng
        Source of the resampling randomness.
    settings
        Its ``confidence`` (level of the two-sided interval, in (0, 1)) and ``n_resamples``.

    Returns
    -------
    tuple of float
        ``(mean, low, high)``. With a single value, or when all values are equal, the interval
        collapses to ``(mean, mean, mean)`` (the bootstrap distribution is a point), without
        warnings and without consuming randomness.

    Raises
    ------
    ValueError
        If ``values`` is empty or not one-dimensional;
        :class:`~schedlab.errors.NonFiniteValueError` if it holds NaN or ±inf.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        msg = f"values must be a non-empty 1-d array, got shape {x.shape}"
        raise ValueError(msg)
    require_finite(x, "values")
    confidence = settings.confidence
    if not 0 < confidence < 1:
        msg = f"confidence must be in (0, 1), got {confidence}"
        raise ValueError(msg)
    mean = float(x.mean())
    if x.size == 1 or np.ptp(x) == 0:
        return mean, mean, mean
    res = sps.bootstrap(
        (x,),
        np.mean,
        n_resamples=settings.n_resamples,
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        rng=rng,
    )
    ci = res.confidence_interval
    return mean, float(ci.low), float(ci.high)


def group_rng(seed: int, key: Sequence[object]) -> np.random.Generator:
    """A Generator for one group: ``default_rng([seed, crc32(repr(key))])``.

    The key's CRC-32 is stable across processes and Python versions (unlike ``hash``).
    """
    tag = zlib.crc32(repr(tuple(key)).encode("utf-8"))
    return np.random.default_rng([seed, tag])


def _order_key(schema: pl.Schema, col: str) -> pl.Expr:
    """Sort key of ``col``: first row of each value for strings, else the value itself."""
    if schema[col] in (pl.String, pl.Categorical):
        return pl.col("_row").min().over(col)
    return pl.col(col)


def summarize(
    per_jobset_df: pl.DataFrame,
    *,
    metrics: Sequence[str] = ("slowdown", "completion"),
    by: Sequence[str] = ("policy", "load"),
    settings: StatsSettings = DEFAULT_STATS,
) -> pl.DataFrame:
    """Summarise per-jobset values over jobsets, one row per group × metric (tidy).

    Parameters
    ----------
    per_jobset_df
        One row per jobset (and policy), e.g. from :func:`~schedlab.evaluation.metrics.per_jobset`
        or :func:`~schedlab.evaluation.metrics.per_length`; must hold the ``by`` and ``metrics``
        columns. Null metric values are left out of their group; NaN or ±inf raise
        :class:`~schedlab.errors.NonFiniteValueError` naming the row
        (:func:`require_finite_rows`).
    metrics
        Numeric columns to summarise.
    by
        Grouping columns; null keys (e.g. a trace without offered load) form their own group.
    settings
        Its ``seed`` (the same seed and input give the same output), ``confidence`` (level of
        the intervals) and ``n_resamples`` (bootstrap resamples per group and metric) are used.

    Returns
    -------
    polars.DataFrame
        Columns: the ``by`` columns, ``metric`` (str), ``mean``, ``ci_low``, ``ci_high``,
        ``median``, ``q25``, ``q75`` (float64, in the metric's units) and ``n_jobsets`` (uint32).
        Groups are sorted by the ``by`` columns: string columns (e.g. ``policy``) in order of first
        appearance in the input, other columns by value (nulls last); metrics in the given order.
    """
    by, metrics = list(by), list(metrics)
    missing = [c for c in [*by, *metrics] if c not in per_jobset_df.columns]
    if missing:
        msg = f"columns {missing} not in the per-jobset table (have {per_jobset_df.columns})"
        raise ValueError(msg)
    require_finite_rows(per_jobset_df, metrics)
    sort_keys = [f"_k{i}" for i in range(len(by))]
    long = (
        per_jobset_df.select(*by, *[pl.col(m).cast(pl.Float64) for m in metrics])
        .with_row_index("_row")
        .with_columns(
            _order_key(per_jobset_df.schema, c).alias(k) for c, k in zip(by, sort_keys, strict=True)
        )
        .unpivot(index=[*by, *sort_keys], on=metrics, variable_name="metric")
        .drop_nulls("value")
    )
    v = pl.col("value")
    agg = (
        long.group_by(*by, "metric")
        .agg(
            pl.col(sort_keys).first(),
            v.mean().alias("mean"),
            v.median().alias("median"),
            v.quantile(0.25, interpolation="linear").alias("q25"),
            v.quantile(0.75, interpolation="linear").alias("q75"),
            pl.len().alias("n_jobsets"),
            v.alias("_values"),
        )
        .with_columns(
            pl.col("metric").replace_strict(metrics, list(range(len(metrics)))).alias("_m")
        )
        .sort(*sort_keys, "_m", nulls_last=True)
    )
    keys = agg.select(*by, "metric").rows()
    cis = [
        bootstrap_mean_ci(
            np.sort(vals.to_numpy()),
            rng=group_rng(settings.seed, key),
            settings=settings,
        )[1:]
        for key, vals in zip(keys, agg.get_column("_values"), strict=True)
    ]
    low, high = (np.array([c[i] for c in cis], dtype=np.float64) for i in (0, 1))
    return agg.with_columns(ci_low=pl.Series(low), ci_high=pl.Series(high)).select(
        *by, "metric", *SUMMARY_STATS
    )
