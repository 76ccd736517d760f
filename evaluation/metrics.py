"""Per-jobset and per-length aggregates of per-job results (design.md §7).

The statistical unit is the **jobset**: every function here reduces the jobs of one
(policy, jobset) to one row, and :mod:`schedlab.evaluation.stats` then summarises those rows
over jobsets. Nothing here pools jobs across jobsets.

Units: durations, completion and wait times are in time steps; slowdown is dimensionless
(``completion / duration``, >= 1).
"""

from __future__ import annotations

import polars as pl

from schedlab.results import Results
from schedlab.simulator.multicluster.score import AJER, TMDL

KEYS = ("policy", "load", "seed", "jobset")
"""Columns identifying one jobset run by one policy (``seed`` and ``load`` may be null).

Results of an experiment also carry a ``workload`` column (str); when present it is a key too,
placed after ``policy`` (:func:`keys`)."""

BSLD_THRESHOLD = 10.0
"""Default threshold τ of the bounded slowdown, in time steps (:func:`per_jobset`)."""

TERCILE_NAMES = ("short", "medium", "long")

METRICS = {
    "slowdown": "average job slowdown",
    "completion": "average job completion time (steps)",
    "wait": "average job waiting time (steps)",
    "bounded_slowdown": "average bounded job slowdown",
    "p95_slowdown": "95th-percentile job slowdown",
    "max_slowdown": "largest job slowdown",
    "tmdl": "total missed deadlines (TMDL, multi-cluster)",
    "ajer": "average job execution-time ratio (AJER, %, multi-cluster)",
}
"""Per-jobset metrics of :func:`per_jobset` (all: lower is better), named for reports.

Slowdown = completion / duration; bounded slowdown = max(1, completion / max(duration, τ));
the 95th percentile is over the jobs of one jobset; times are in steps. ``tmdl`` and ``ajer``
exist for multi-cluster results only (:mod:`schedlab.evaluation.multicluster`)."""


def length_buckets(results: Results) -> dict[str, tuple[int, int]]:
    """Named inclusive duration ranges (time steps) for the per-length breakdown.

    Taken from ``results.meta["length_buckets"]`` (e.g. DeepRM's ``short = (1, 3)`` and
    ``long = (10, 15)``), ordered by their lower bound (JSON metadata may not keep the order).
    When the metadata has none (traces), the buckets are the **duration terciles** of the jobs in
    the results, named ``short``, ``medium`` and ``long``: ``short = [min, q1]``,
    ``medium = (q1, q2]``, ``long = (q2, max]`` with ``q1``, ``q2`` the lower 1/3 and 2/3
    quantiles of ``duration``. A bucket left empty by ties is omitted.

    Parameters
    ----------
    results
        Per-job results.

    Returns
    -------
    dict
        Bucket name -> ``(lowest, highest)`` duration, inclusive, in time steps, in display order.
    """
    meta = results.meta.get("length_buckets") or {}
    if meta:
        ranges = sorted((int(v[0]), int(v[1]), str(k)) for k, v in meta.items())
        return {k: (lo, hi) for lo, hi, k in ranges}
    dur = results.table.get_column("duration")
    if dur.len() == 0:
        return {}
    lo, hi = int(dur.min()), int(dur.max())  # type: ignore[arg-type]
    q1 = int(dur.quantile(1 / 3, interpolation="lower"))  # type: ignore[arg-type]
    q2 = int(dur.quantile(2 / 3, interpolation="lower"))  # type: ignore[arg-type]
    terciles = ((lo, q1), (q1 + 1, q2), (q2 + 1, hi))
    return {n: r for n, r in zip(TERCILE_NAMES, terciles, strict=True) if r[0] <= r[1]}


def policy_order(results: Results) -> list[str]:
    """Policy names in simulation order, then any others found in the table (sorted)."""
    order = list(results.meta.get("policies", {}))
    extra = set(results.table.get_column("policy").unique().to_list()) - set(order)
    return order + sorted(extra)


def keys(table: pl.DataFrame) -> tuple[str, ...]:
    """:data:`KEYS`, with ``workload`` after ``policy`` when ``table`` has that column."""
    return ("policy", "workload", *KEYS[1:]) if "workload" in table.columns else KEYS


def _sorted(df: pl.DataFrame, order: list[str], extra: tuple[str, ...] = ()) -> pl.DataFrame:
    rank = pl.col("policy").replace_strict(order, list(range(len(order))), return_dtype=pl.Int64)
    return df.sort(rank, *keys(df)[1:], *extra, nulls_last=True)


def per_jobset(results: Results, *, bsld_threshold: float = BSLD_THRESHOLD) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset): averages over the jobs of that jobset.

    The **bounded slowdown** of a job is ``max(1, C / max(T, τ))`` (Feitelson et al. 1997) with
    ``C`` its completion time, ``T`` its duration and ``τ = bsld_threshold`` steps: jobs shorter
    than τ are judged as if they lasted τ, so a 1-step job waiting 2 steps does not dominate.

    Parameters
    ----------
    results
        Per-job results (with a ``workload`` column, that is a key too).
    bsld_threshold
        τ of the bounded slowdown, in time steps (> 0).

    Returns
    -------
    polars.DataFrame
        Columns ``policy`` (str), ``load`` (float64 offered load as a fraction, or null),
        ``seed`` (int64 or null), ``jobset`` (int32), ``n_jobs`` (uint32), ``slowdown``
        (float64, mean per-job slowdown), ``completion`` and ``wait`` (float64, mean per-job
        completion and waiting time, steps), ``max_slowdown`` (float64), ``bounded_slowdown``
        (float64, mean per-job bounded slowdown) and ``p95_slowdown`` (float64, 95th percentile
        of the jobset's per-job slowdowns, linear interpolation); for multi-cluster results also
        ``tmdl`` and ``ajer`` (:mod:`schedlab.evaluation.multicluster`). Sorted by policy (in
        simulation order), load, seed and jobset. Jobsets without jobs have no row.
    """
    if not bsld_threshold > 0:
        msg = f"bsld_threshold must be > 0 steps, got {bsld_threshold}"
        raise ValueError(msg)
    tau = pl.max_horizontal(pl.col("duration").cast(pl.Float64), pl.lit(float(bsld_threshold)))
    bsld = pl.max_horizontal(pl.lit(1.0), pl.col("completion") / tau)
    out = results.table.group_by(keys(results.table)).agg(
        pl.len().alias("n_jobs"),
        pl.col("slowdown").mean(),
        pl.col("completion").mean().cast(pl.Float64),
        pl.col("wait").mean().cast(pl.Float64),
        pl.col("slowdown").max().alias("max_slowdown"),
        bsld.mean().alias("bounded_slowdown"),
        pl.col("slowdown").quantile(0.95, interpolation="linear").alias("p95_slowdown"),
        *_liu_metrics(results.table),
    )
    return _sorted(out, policy_order(results))


def _liu_metrics(table: pl.DataFrame) -> list[pl.Expr]:
    """TMDL and AJER (float64) of multi-cluster results (columns ``missed``, ``exec_ratio``)."""
    if "missed" not in table.columns or "exec_ratio" not in table.columns:
        return []
    return [TMDL, AJER]


def bucket_expr(buckets: dict[str, tuple[int, int]]) -> pl.Expr:
    """Expression mapping ``duration`` to its bucket name (an Enum in bucket order), or null.

    Buckets are checked in order; a duration in no bucket maps to null.
    """
    dtype = pl.Enum(list(buckets))
    expr: pl.Expr = pl.lit(None, dtype=dtype)
    for name, (lo, hi) in reversed(buckets.items()):
        expr = (
            pl.when(pl.col("duration").is_between(lo, hi)).then(pl.lit(name, dtype)).otherwise(expr)
        )
    return expr.alias("bucket")


def per_length(results: Results) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset, length bucket): averages over those jobs.

    Buckets come from :func:`length_buckets`. Jobs whose duration lies in no bucket (e.g. a
    duration of 5 steps with DeepRM's buckets 1–3 and 10–15) are **dropped from this breakdown
    only**; they still count in :func:`per_jobset`. A jobset with no job in a bucket has no row
    for that bucket, so per-bucket statistics are over the jobsets that have such jobs.

    Parameters
    ----------
    results
        Per-job results.

    Returns
    -------
    polars.DataFrame
        Columns ``policy``, ``load``, ``seed``, ``jobset``, ``bucket`` (Enum, in bucket order),
        ``n_jobs`` (uint32), ``slowdown`` (float64, mean) and ``completion`` (float64, mean,
        steps). Sorted by policy (simulation order), load, seed, jobset and bucket.
    """
    buckets = length_buckets(results)
    if not buckets:
        cols = {**results.table.select(keys(results.table)).schema, "bucket": pl.Enum([])}
        extra = {"n_jobs": pl.UInt32, "slowdown": pl.Float64, "completion": pl.Float64}
        return pl.DataFrame(schema={**cols, **extra})
    out = (
        results.table.with_columns(bucket_expr(buckets))
        .drop_nulls("bucket")
        .group_by(*keys(results.table), "bucket")
        .agg(
            pl.len().alias("n_jobs"),
            pl.col("slowdown").mean(),
            pl.col("completion").mean().cast(pl.Float64),
        )
    )
    return _sorted(out, policy_order(results), ("bucket",))
