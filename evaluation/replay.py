"""Statistics of a workload replayed once (a whole trace as one jobset): blocks over time.

With many jobsets per condition the unit of analysis is the jobset
(:mod:`schedlab.evaluation.analysis`). A whole log replayed once gives each policy **one**
jobset: a test across one pair, or a bootstrap over one value, says nothing. What varies is
time: the log is cut into **blocks** by arrival time (a week by default,
:func:`block_length`), and

* each mean metric of the whole log (average wait, turnaround, slowdown, bounded slowdown) gets
  a **block bootstrap** interval: the blocks are resampled with replacement (Carlstein's
  non-overlapping block bootstrap), and the metric is recomputed as the mean over the jobs of
  the resampled blocks (a ratio of sums, so blocks weigh by their jobs); the ratio of a policy's
  mean to the reference's is resampled with the same blocks (paired);
* when there are enough blocks for a test to reach ``alpha`` after Holm's correction over the
  policies (:func:`~schedlab.evaluation.compare.min_blocks_for_significance`), each policy is
  compared with the reference **paired by block**: wins/ties/losses over blocks and a Wilcoxon
  signed-rank test on the blocks' means, Holm-adjusted over the policies;
* tail metrics (maxima, percentiles) and others (utilisation, killed jobs) are the whole log's
  values, without an interval: a few jobs set them.

Blocks are not independent (a queue built up late in one week is served in the next): the block
length must be long against the schedule's memory. A week holds the daily and weekly cycles of
submissions; the report states the share of jobs that started in a later block than they arrived
in (under the reference), which measures how much the blocks leak into each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from schedlab.evaluation import analysis as an
from schedlab.evaluation import compare as cmp
from schedlab.evaluation.metrics import SECONDS, job_values, time_unit
from schedlab.evaluation.stats import group_rng
from schedlab.results import Results

MEAN_METRICS = ("wait", "completion", "slowdown", "bounded_slowdown")
"""Per-jobset metrics that are means over jobs: those with a block bootstrap interval."""
WEEK, DAY = 7 * 86_400.0, 86_400.0
MIN_BLOCKS = 8
"""Fewest blocks of a week (or a day) for that block length to be chosen."""


def replay_conditions(pj: pl.DataFrame) -> list[tuple[Any, ...]]:
    """The conditions (values of :func:`~schedlab.evaluation.analysis.conditions`) of a
    per-jobset table where every policy has a single jobset."""
    cond = an.conditions(pj)
    ids = [c for c in ("seed", "jobset") if c in pj.columns]
    if not cond:
        return [()] if pj.height and pj.select(pl.struct(ids).n_unique()).item() == 1 else []
    per = pj.group_by(cond, maintain_order=True).agg(pl.struct(ids).n_unique().alias("n"))
    return [tuple(r[c] for c in cond) for r in per.iter_rows(named=True) if r["n"] == 1]


def block_length(span: float, unit: str, setting: float | None = None) -> tuple[float, str]:
    """The block length (in ``unit``) for a log whose arrivals span ``span``, and why.

    ``setting`` (:attr:`~schedlab.evaluation.settings.StatsSettings.replay_block`) wins; else a
    week when the log spans :data:`MIN_BLOCKS` weeks or more (seconds), else a day for as many
    days, else a tenth of the span.
    """
    if setting is not None:
        return float(setting), "as the statistics settings ask (replay_block)"
    if unit == SECONDS and span >= MIN_BLOCKS * WEEK:
        return WEEK, "a week: it holds the daily and weekly cycles of submissions"
    if unit == SECONDS and span >= MIN_BLOCKS * DAY:
        return DAY, "a day: the log is too short for weekly blocks"
    return max(span / 10.0, 1.0), "a tenth of the log: too short for weekly or daily blocks"


@dataclass(frozen=True, kw_only=True, slots=True)
class Replay:
    """The statistics of the replayed conditions (one jobset per policy)."""

    summary: pl.DataFrame
    """Per condition × policy × metric: ``value`` (the whole log's), ``ci_low``, ``ci_high``
    (block bootstrap; null for metrics that are not means), ``n_jobs``, and versus the
    reference: ``ratio`` (of the means), ``ratio_low``, ``ratio_high``, ``wins``, ``ties``,
    ``losses`` (blocks where the policy's mean is lower / equal / higher), ``p`` (Wilcoxon over
    the blocks' means; null without enough blocks), ``p_holm`` (over the policies) and
    ``significant``."""
    blocks: pl.DataFrame
    """Per condition × policy × block: ``start`` (the block's start, time unit), ``n_jobs`` and
    each mean metric's mean over the block's jobs."""
    design: pl.DataFrame
    """Per condition: ``block_length`` (time unit), ``why``, ``n_blocks`` (with jobs),
    ``n_jobs``, ``crossing`` (share of the reference's jobs that started in a later block than
    they arrived in), ``min_blocks`` and ``paired`` (whether the block tests ran)."""
    quantiles: pl.DataFrame
    """Per condition × policy × metric (``wait``, ``bounded_slowdown``): ``mean``, ``p50``,
    ``p90``, ``p99`` and ``max`` over the log's jobs."""
    unit: str
    """The time unit (``"s"`` or ``"steps"``)."""


def replay(
    results: Results, pj: pl.DataFrame, cfg: an.AnalysisConfig, order: list[str]
) -> Replay | None:
    """The block statistics of every condition of ``pj`` that has one jobset per policy (None
    if none has)."""
    conds = replay_conditions(pj)
    if not conds:
        return None
    cols = an.conditions(pj)
    table = results.table
    unit = time_unit(table)
    values = table.select(
        "policy",
        *cols,
        _block_time(results, unit).alias("t"),
        *job_values(table, bsld_threshold=cfg.bounded_slowdown_threshold),
    )
    parts = [
        _condition(values, pj, dict(zip(cols, c, strict=True)), cfg, order, unit) for c in conds
    ]
    return Replay(
        summary=pl.concat([p[0] for p in parts], how="diagonal_relaxed"),
        blocks=pl.concat([p[1] for p in parts], how="diagonal_relaxed"),
        design=pl.concat([p[2] for p in parts], how="diagonal_relaxed"),
        quantiles=pl.concat([p[3] for p in parts], how="diagonal_relaxed"),
        unit=unit,
    )


def _block_time(results: Results, unit: str) -> pl.Expr:
    """When a job belongs to time, the same under every policy: its arrival, or for a DAG task
    its DAG job's arrival (a task's own ``arrival`` is when it became ready, which depends on
    the policy), in the report's unit."""
    if "job_arrival" not in results.table.columns:
        return pl.col("arrival_s") if unit == SECONDS else pl.col("arrival").cast(pl.Float64)
    step = float(results.meta.get("jobset", {}).get("time_step_seconds") or 1.0)
    return pl.col("job_arrival").cast(pl.Float64) * (step if unit == SECONDS else 1.0)


def _at(df: pl.DataFrame, key: dict[str, object]) -> pl.DataFrame:
    for c, v in key.items():
        df = df.filter(pl.col(c).is_null() if v is None else pl.col(c) == v)
    return df


def _condition(
    values: pl.DataFrame,
    pj: pl.DataFrame,
    key: dict[str, object],
    cfg: an.AnalysisConfig,
    order: list[str],
    unit: str,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    jobs = _at(values, key)
    pols = [p for p in order if p in set(jobs.get_column("policy").to_list())]
    t0 = float(jobs.get_column("t").min())  # type: ignore[arg-type]
    span = float(jobs.get_column("t").max()) - t0  # type: ignore[arg-type]
    length, why = block_length(span, unit, cfg.replay_block)
    jobs = jobs.with_columns(((pl.col("t") - t0) // length).cast(pl.Int64).alias("block"))
    blocks = (
        jobs.group_by("policy", "block")
        .agg(pl.len().alias("n_jobs"), *(pl.col(m).sum().alias(f"sum_{m}") for m in MEAN_METRICS))
        .sort("block")
    )
    ids = np.sort(blocks.get_column("block").unique().to_numpy())
    grid = pl.DataFrame({"block": ids})
    sums = {
        p: grid.join(blocks.filter(pl.col("policy") == p), on="block", how="left")
        .select("n_jobs", *(f"sum_{m}" for m in MEAN_METRICS))
        .fill_null(0)
        .to_numpy()
        .astype(np.float64)
        for p in pols
    }
    n_b = ids.size
    rng = group_rng(cfg.seed, ("replay", *key.values()))
    counts = rng.multinomial(n_b, np.full(n_b, 1.0 / n_b), size=cfg.n_resamples).astype(np.float64)
    lo_q, hi_q = 50 * (1 - cfg.confidence), 50 * (1 + cfg.confidence)
    min_blocks = cmp.min_blocks_for_significance(max(len(pols) - 1, 1), cfg.alpha)
    paired = n_b >= min_blocks and cfg.reference in pols
    whole = _at(pj, key)
    rows = []
    for p in pols:
        s = sums[p]
        for metric in cfg.metrics:
            value = whole.filter(pl.col("policy") == p).get_column(metric)
            row: dict[str, object] = {
                **key,
                "policy": p,
                "metric": metric,
                "value": float(value[0]) if value.len() and value[0] is not None else None,
                "n_jobs": int(s[:, 0].sum()),
            }
            if metric in MEAN_METRICS:
                j = 1 + MEAN_METRICS.index(metric)
                boot = (counts @ s[:, j]) / (counts @ s[:, 0])
                row |= {
                    "ci_low": float(np.percentile(boot, lo_q)),
                    "ci_high": float(np.percentile(boot, hi_q)),
                }
                if p != cfg.reference and cfg.reference in sums:
                    row |= _versus(s, sums[cfg.reference], j, counts, (lo_q, hi_q), paired)
            rows.append(row)
    summary = _holm(pl.DataFrame(rows, infer_schema_length=None), cfg.alpha)
    means = blocks.with_columns(
        (pl.lit(t0) + pl.col("block") * length).alias("start"),
        *((pl.col(f"sum_{m}") / pl.col("n_jobs")).alias(m) for m in MEAN_METRICS),
    ).select(
        *[pl.lit(v).alias(c) for c, v in key.items()],
        "policy",
        "block",
        "start",
        "n_jobs",
        *MEAN_METRICS,
    )
    ref = jobs.filter(pl.col("policy") == (cfg.reference if cfg.reference in pols else pols[0]))
    crossing = ref.select(((pl.col("t") + pl.col("wait") - t0) // length > pl.col("block")).mean())
    design = pl.DataFrame(
        [
            {
                **key,
                "block_length": length,
                "why": why,
                "n_blocks": n_b,
                "n_jobs": int(sums[pols[0]][:, 0].sum()),
                "crossing": float(crossing.item() or 0.0),
                "min_blocks": min_blocks,
                "paired": paired,
            }
        ]
    )
    quantiles = jobs.group_by("policy", maintain_order=True).agg(
        pl.struct(
            metric=pl.lit(m),
            mean=pl.col(m).mean(),
            p50=pl.col(m).quantile(0.5),
            p90=pl.col(m).quantile(0.9),
            p99=pl.col(m).quantile(0.99),
            max=pl.col(m).max(),
        ).alias(m)
        for m in ("wait", "bounded_slowdown")
    )
    quantiles = (
        quantiles.unpivot(index="policy", value_name="q")
        .unnest("q")
        .drop("variable")
        .select(*[pl.lit(v).alias(c) for c, v in key.items()], pl.all())
    )
    return summary, means, design, quantiles


def _versus(
    s: np.ndarray,
    ref: np.ndarray,
    j: int,
    counts: np.ndarray,
    q: tuple[float, float],
    paired: bool,
) -> dict[str, object]:
    """Ratio of the means to the reference's with its block-bootstrap interval, and the test
    over blocks (when ``paired``)."""
    total = float(ref[:, j].sum())
    out: dict[str, object] = {}
    if total > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = (counts @ s[:, j]) / (counts @ ref[:, j])
        boot = boot[np.isfinite(boot)]
        out |= {
            "ratio": float(s[:, j].sum()) / total,
            "ratio_low": float(np.percentile(boot, q[0])) if boot.size else None,
            "ratio_high": float(np.percentile(boot, q[1])) if boot.size else None,
        }
    x, r = s[:, j] / s[:, 0], ref[:, j] / ref[:, 0]
    w, t, lo = cmp.wins_ties_losses(x, r)
    out |= {"wins": w, "ties": t, "losses": lo}
    if paired:
        out["p"] = cmp.wilcoxon_pair(x, r).p
    return out


def _holm(summary: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """``p_holm`` (over the policies, within each condition and metric) and ``significant``."""
    for c in ("ratio", "ratio_low", "ratio_high", "p", "ci_low", "ci_high"):
        if c not in summary.columns:
            summary = summary.with_columns(pl.lit(None, pl.Float64).alias(c))
    for c in ("wins", "ties", "losses"):
        if c not in summary.columns:
            summary = summary.with_columns(pl.lit(None, pl.Int64).alias(c))
    p = summary.get_column("p").cast(pl.Float64).fill_null(math.nan).to_numpy()
    adjusted = np.full(p.size, np.nan)
    metric = summary.get_column("metric").to_numpy()
    for m in np.unique(metric):
        sel = metric == m
        adjusted[sel] = cmp.holm(p[sel])
    holm = pl.Series("p_holm", adjusted).fill_nan(None)
    return summary.with_columns(holm, significant=holm <= alpha)
