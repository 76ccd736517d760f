"""The statistical comparison of a report, as tidy tables (design.md §7, style.md §14).

A **condition** is one workload at one offered load (the ``workload`` and ``load`` columns
present in the per-jobset table); within a condition the **blocks** are the jobsets, and every
policy ran on every jobset, so all comparisons are paired by jobset. Per condition:

* :func:`policy_summary`: per policy and metric, mean with a bootstrap CI, median and IQR over
  jobsets, the average Friedman rank, the **paired mean** over the jobsets every policy of the
  condition ran on, and versus the declared reference policy the geometric-mean ratio with a
  paired bootstrap CI, wins/ties/losses and the probability of improvement (definitions in
  :mod:`schedlab.evaluation.compare`);
* :func:`omnibus`: Friedman with the Iman–Davenport correction and Kendall's W over all policies,
  on the primary metric, with the p-value method (exact or permutation below 10 jobsets:
  :mod:`schedlab.evaluation.permutation`), the Nemenyi critical difference and the fewest jobsets
  any pair needs to reach significance;
* :func:`pairwise`: all-pairs Wilcoxon signed-rank tests on the primary metric, Holm-adjusted
  within the condition, with rank-biserial effect sizes (confirmatory);
* :func:`exploratory`: every non-reference policy versus the reference on the secondary
  metrics and on the primary metric per job-length bucket, Benjamini–Hochberg-adjusted within
  the condition (exploratory: to generate hypotheses, not to confirm them).

Missing and non-finite values
    Jobsets where a policy has no value (a failed run: no row, or a null) are dropped from that
    condition's paired analyses; a policy with no value at all in a condition is left out of
    it. Its own mean (``mean``, ``n_jobsets``) is then over more jobsets than the paired
    statistics (``paired_mean``, ``n_paired``, ranks, ratios): reports compare paired means
    only. Every per-jobset metric of :mod:`schedlab.evaluation.metrics` is defined for every
    jobset that has jobs (every job finishes, durations are >= 1 step), so a NaN or ±inf is a
    defect upstream, not an undefined value: every function here raises
    :class:`~schedlab.errors.NonFiniteValueError` naming the metric, the value and the row
    (policy, workload, load, seed, jobset, bucket) instead of testing around it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from schedlab.evaluation import compare as cmp
from schedlab.evaluation.settings import STATS_FIELDS, StatsSettings
from schedlab.evaluation.stats import group_rng, require_finite_rows, summarize


@dataclass(frozen=True, kw_only=True, slots=True)
class AnalysisConfig(StatsSettings):
    """Settings of the comparison: the statistics settings and the reference policy."""

    reference: str
    """Name of the reference policy (ratios, W/T/L and exploratory tests are against it)."""

    @classmethod
    def of(cls, settings: StatsSettings, reference: str) -> AnalysisConfig:
        """``settings`` compared against ``reference``."""
        return cls(reference=reference, **{k: getattr(settings, k) for k in STATS_FIELDS})


def conditions(df: pl.DataFrame) -> list[str]:
    """The condition columns of a per-jobset table: ``workload`` (if present) and ``load``."""
    return [c for c in ("workload", "load") if c in df.columns]


def _groups(df: pl.DataFrame) -> list[tuple[tuple[Any, ...], pl.DataFrame]]:
    cond = conditions(df)
    if not cond:
        return [((), df)]
    parts = df.partition_by(cond, as_dict=True, maintain_order=True)
    return sorted(parts.items(), key=lambda kv: tuple((v is None, v) for v in kv[0]))


def wide(df: pl.DataFrame, metric: str, order: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Matrix ``(n_jobsets, k)`` of ``metric`` for one condition, paired by jobset.

    Columns are the policies of ``order`` that have a value; rows the jobsets where all of them
    have one. Raises :class:`~schedlab.errors.NonFiniteValueError` naming the row of a NaN or
    ±inf value of ``metric``.
    """
    require_finite_rows(df, [metric])
    piv = df.select("jobset", "policy", metric).pivot(on="policy", index="jobset", values=metric)
    cols = [p for p in order if p in piv.columns and piv.get_column(p).null_count() < piv.height]
    m = piv.sort("jobset").select(cols).drop_nulls()
    return m.to_numpy().astype(np.float64).reshape(m.height, len(cols)), cols


def _key(cond: Sequence[str], values: tuple[Any, ...]) -> dict[str, object]:
    return dict(zip(cond, values, strict=True))


def _versus(
    x: np.ndarray, ref: np.ndarray, cfg: AnalysisConfig, tag: tuple[Any, ...]
) -> dict[str, float | int | None]:
    w, t, lo = cmp.wins_ties_losses(x, ref)
    ratio: tuple[float | None, float | None, float | None] = (None, None, None)
    if np.all(x > 0) and np.all(ref > 0):
        rng = group_rng(cfg.seed, ("ratio", *tag))
        ratio = cmp.gm_ratio(x, ref, rng=rng, settings=cfg)
    rng = group_rng(cfg.seed, ("poi", *tag))
    poi = cmp.prob_improvement(x, ref, rng=rng, settings=cfg)
    return {
        "ratio": ratio[0],
        "ratio_low": ratio[1],
        "ratio_high": ratio[2],
        "wins": w,
        "ties": t,
        "losses": lo,
        "p_improve": poi[0],
        "p_improve_low": poi[1],
        "p_improve_high": poi[2],
    }


VERSUS = {
    "ratio": pl.Float64,
    "ratio_low": pl.Float64,
    "ratio_high": pl.Float64,
    "wins": pl.Int64,
    "ties": pl.Int64,
    "losses": pl.Int64,
    "p_improve": pl.Float64,
    "p_improve_low": pl.Float64,
    "p_improve_high": pl.Float64,
}


def policy_summary(pj: pl.DataFrame, cfg: AnalysisConfig, order: Sequence[str]) -> pl.DataFrame:
    """Per condition × policy × metric: summary over jobsets, mean rank and versus reference.

    Returns
    -------
    polars.DataFrame
        The condition columns, ``policy``, ``metric``, the columns of
        :func:`~schedlab.evaluation.stats.summarize` (``mean``, ``ci_low``, ``ci_high``,
        ``median``, ``q25``, ``q75``, ``n_jobsets``: over the policy's own jobsets),
        ``paired_mean`` and ``n_paired`` (mean over the jobsets where every policy of the
        condition has a value, and their number), ``mean_rank`` (1 = best, over the paired
        jobsets), ``ratio``, ``ratio_low``, ``ratio_high`` (geometric-mean ratio to the
        reference), ``wins``, ``ties``, ``losses``, ``p_improve`` and its CI; versus-reference
        columns are null on the reference's own rows, when the reference did not run, and in
        a condition of one jobset (a whole trace replayed once: see
        :mod:`schedlab.evaluation.replay`).
    """
    cond = conditions(pj)
    summ = summarize(pj, metrics=cfg.metrics, by=("policy", *cond), settings=cfg)
    rows = []
    for values, df in _groups(pj):
        for metric in cfg.metrics:
            m, cols = wide(df, metric, order)
            if m.shape[0] == 0:
                continue
            ranks = cmp.within_block_ranks(m).mean(axis=0)
            has_ref = cfg.reference in cols
            for j, p in enumerate(cols):
                row = {
                    **_key(cond, values),
                    "policy": p,
                    "metric": metric,
                    "paired_mean": float(m[:, j].mean()),
                    "n_paired": m.shape[0],
                    "mean_rank": float(ranks[j]),
                }
                if has_ref and p != cfg.reference and m.shape[0] >= 2:
                    ref = m[:, cols.index(cfg.reference)]
                    row |= _versus(m[:, j], ref, cfg, (*values, p, metric))
                rows.append(row)
    paired = {"paired_mean": pl.Float64, "n_paired": pl.Int64, "mean_rank": pl.Float64}
    if not rows:  # no condition has a jobset that every policy ran on
        return summ.with_columns(pl.lit(None, t).alias(c) for c, t in {**paired, **VERSUS}.items())
    extra = pl.DataFrame(rows, schema_overrides={**VERSUS, **paired})
    for c, dtype in VERSUS.items():
        if c not in extra.columns:
            extra = extra.with_columns(pl.lit(None, dtype).alias(c))
    if "load" in cond:
        extra = extra.with_columns(pl.col("load").cast(summ.schema["load"]))
    return summ.join(extra, on=[*cond, "policy", "metric"], how="left", nulls_equal=True)


def omnibus(pj: pl.DataFrame, cfg: AnalysisConfig, order: Sequence[str]) -> pl.DataFrame:
    """Per condition: Friedman / Iman–Davenport / Kendall's W on the primary metric.

    Columns: the condition columns, ``n_jobsets``, ``k``, ``chi2``, ``p_chi2``, ``f`` (null when
    ``W = 1``), ``df1``, ``df2``, ``p`` (the omnibus p-value), ``kendall_w``, ``nemenyi_cd``
    (average ranks), ``min_jobsets`` (fewest jobsets for any Holm-adjusted pair to reach
    ``alpha``), ``p_f`` (Iman–Davenport p, null when ``f`` is), ``p_method`` (``exact``,
    ``permutation`` or ``iman-davenport``) and ``p_reason`` (why, in words); see
    :class:`~schedlab.evaluation.compare.FriedmanResult`. The permutation test draws from
    :func:`~schedlab.evaluation.stats.group_rng` of ``cfg.seed`` and the condition.
    """
    cond, rows = conditions(pj), []
    for values, df in _groups(pj):
        m, _ = wide(df, cfg.primary, order)
        n, k = m.shape
        if n < 2 or k < 2:
            continue
        fr = cmp.friedman(m, rng=group_rng(cfg.seed, ("friedman", *values)))
        rows.append(
            {
                **_key(cond, values),
                "n_jobsets": n,
                "k": k,
                "chi2": fr.chi2,
                "p_chi2": fr.p_chi2,
                "f": fr.f,
                "df1": fr.df1,
                "df2": fr.df2,
                "p": fr.p,
                "kendall_w": fr.kendall_w,
                "nemenyi_cd": cmp.nemenyi_cd(k, n, cfg.alpha),
                "min_jobsets": cmp.min_blocks_for_significance(k * (k - 1) // 2, cfg.alpha),
                "p_f": fr.p_f,
                "p_method": fr.method,
                "p_reason": fr.reason,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"f": pl.Float64, "p_f": pl.Float64})


def pairwise(pj: pl.DataFrame, cfg: AnalysisConfig, order: Sequence[str]) -> pl.DataFrame:
    """Per condition and pair (a, b), a before b in ``order``: Wilcoxon, Holm, rank-biserial.

    Columns: the condition columns, ``a``, ``b``, ``n``, ``n_zero``, ``r_plus`` (rank sum where
    a is better), ``r_minus``, ``p``, ``p_holm`` (Holm over the condition's pairs),
    ``rank_biserial`` (> 0: a is better) and ``significant`` (``p_holm <= alpha``). Conditions
    with fewer than 2 jobsets are not tested.
    """
    cond, frames = conditions(pj), []
    for values, df in _groups(pj):
        m, cols = wide(df, cfg.primary, order)
        if m.shape[0] < 2 or len(cols) < 2:  # one jobset: nothing to test across
            continue
        rows = []
        for i, j in itertools.combinations(range(len(cols)), 2):
            w = cmp.wilcoxon_pair(m[:, i], m[:, j])
            rows.append(
                {
                    **_key(cond, values),
                    "a": cols[i],
                    "b": cols[j],
                    "n": w.n,
                    "n_zero": w.n_zero,
                    "r_plus": w.r_plus,
                    "r_minus": w.r_minus,
                    "p": w.p,
                    "rank_biserial": w.rank_biserial,
                }
            )
        part = pl.DataFrame(rows)
        adj = cmp.holm(part.get_column("p").to_numpy())
        frames.append(
            part.with_columns(p_holm=pl.Series(adj), significant=pl.Series(adj <= cfg.alpha))
        )
    return pl.concat(frames) if frames else pl.DataFrame()


def exploratory(
    pj: pl.DataFrame, pln: pl.DataFrame, cfg: AnalysisConfig, order: Sequence[str]
) -> pl.DataFrame:
    """Per condition: each policy vs the reference on secondary metrics and length buckets.

    Columns: the condition columns, ``family`` (``"metric"`` or ``"length"``), ``metric``,
    ``bucket`` (null for metrics), ``policy``, ``n``, ``ratio`` with ``ratio_low``/``ratio_high``,
    ``wins``/``ties``/``losses``, ``p_improve``, ``p`` (Wilcoxon, Pratt), ``rank_biserial``
    (> 0: the policy is better) and ``q`` (Benjamini–Hochberg within the condition).
    """
    cond, frames = conditions(pj), []
    by_len = dict(_groups(pln)) if pln.height else {}
    len_metric = cfg.primary if cfg.primary in pln.columns else "slowdown"
    for values, df in _groups(pj):
        tasks = [("metric", metric, None, df) for metric in cfg.secondary]
        if values in by_len:
            ldf = by_len[values]
            for b in ldf.get_column("bucket").unique(maintain_order=True).sort().to_list():
                tasks.append(("length", len_metric, b, ldf.filter(pl.col("bucket") == b)))
        rows = []
        for family, metric, bucket, sub in tasks:
            m, cols = wide(sub, metric, order)
            if cfg.reference not in cols or m.shape[0] < 2:
                continue
            ref = m[:, cols.index(cfg.reference)]
            for j, p in enumerate(cols):
                if p == cfg.reference:
                    continue
                w = cmp.wilcoxon_pair(m[:, j], ref)
                tag = (*values, p, metric) if bucket is None else (*values, p, metric, bucket)
                vs = _versus(m[:, j], ref, cfg, tag)
                rows.append(
                    {
                        **_key(cond, values),
                        "family": family,
                        "metric": metric,
                        "bucket": bucket,
                        "policy": p,
                        "n": w.n,
                        **vs,
                        "p": w.p,
                        "rank_biserial": w.rank_biserial,
                    }
                )
        if rows:
            part = pl.DataFrame(rows, schema_overrides={**VERSUS, "bucket": pl.String})
            q = cmp.benjamini_hochberg(part.get_column("p").to_numpy())
            frames.append(part.with_columns(q=pl.Series(q)))
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def cliques(mean_ranks: dict[str, float], pairs: pl.DataFrame) -> list[list[str]]:
    """Maximal groups of rank-adjacent policies with no significant pair among them.

    Policies are sorted by mean rank; a group ``[i..j]`` qualifies when no pair inside it has
    ``significant`` true in ``pairs`` (one condition of :func:`pairwise`); groups contained in
    another one and single policies are dropped. These are the bars of a critical-difference
    diagram drawn from pairwise tests (Benavoli et al. 2016, JMLR 17).
    """
    names = sorted(mean_ranks, key=lambda p: mean_ranks[p])
    sig = {frozenset((a, b)) for a, b, s in pairs.select("a", "b", "significant").iter_rows() if s}
    spans: list[tuple[int, int]] = []
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and not any(
            frozenset((names[t], names[j + 1])) in sig for t in range(i, j + 1)
        ):
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in spans):
            spans.append((i, j))
    return [names[a : b + 1] for a, b in spans]


def unjoined(groups: list[list[str]], pairs: pl.DataFrame) -> list[tuple[str, str, float]]:
    """The pairs ``pairs`` finds not significantly different that no bar of ``groups``
    (:func:`cliques`) joins: ``(a, b, p_holm)``, smallest ``p_holm`` first. Pairwise tests need
    not agree with rank order, so a bar over rank-adjacent policies cannot show them; a CD
    diagram's caption must name them, or the figure reads as if they differed."""
    together = {frozenset(g) for g in groups}
    out = [
        (a, b, p)
        for a, b, p, s in pairs.select("a", "b", "p_holm", "significant").iter_rows()
        if not s and not any({a, b} <= g for g in together)
    ]
    return sorted(out, key=lambda row: (row[2], row[0], row[1]))
