"""Overviews of a comparison: every load at once, and every workload × load condition at once.

Built on the tables of :mod:`schedlab.evaluation.analysis` (its statistics are not repeated
here):

* :func:`ratio_overview`: per condition, each policy's geometric-mean ratio to the reference
  with its CI, next to the Holm-adjusted Wilcoxon test against the reference, flagging where
  the two disagree. They can: the CI is unadjusted (it covers one comparison at the stated
  confidence) and concerns the geometric mean of the ratios, while the test is adjusted over
  every pair of the condition and concerns the signed ranks of the differences.
* :func:`across_conditions`: when an experiment has several conditions (workloads × loads),
  the conditions become the blocks, as datasets are in Demšar (2006): each policy's value in a
  condition is its mean over jobsets, ranks are within conditions, the Friedman test (with the
  Iman–Davenport correction) runs over conditions and pairs are compared by Wilcoxon
  signed-rank tests on the log of the condition means (so each condition weighs by its ratio,
  not by its scale), Holm-adjusted. Conditions of one workload share its generator, so they
  are not independent samples: the result describes these conditions, not a population. The
  tests run only where they have the power to find something: with fewer conditions than any
  Holm-adjusted pair needs to reach ``alpha`` (e.g. 11 for 9 policies), only the ranks and
  means are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from schedlab.evaluation import analysis as an
from schedlab.evaluation import compare as cmp


def ratio_overview(
    summary: pl.DataFrame, pairwise: pl.DataFrame, cfg: an.AnalysisConfig
) -> pl.DataFrame:
    """Per condition and non-reference policy: ratio to the reference on the primary metric, and
    the Holm-adjusted test against it.

    Parameters
    ----------
    summary
        :func:`~schedlab.evaluation.analysis.policy_summary`.
    pairwise
        :func:`~schedlab.evaluation.analysis.pairwise` of the same per-jobset table.
    cfg
        The analysis settings (reference, primary metric, alpha).

    Returns
    -------
    polars.DataFrame
        The condition columns, ``policy``, ``mean_rank`` (1 = best, within the condition),
        ``ratio``, ``ratio_low``, ``ratio_high``, ``wins``, ``ties``, ``losses``, ``p_holm``
        (Wilcoxon against the reference, Holm over the condition's pairs; null without a
        test), ``significant`` (``p_holm <= alpha``), ``ci_excludes_one`` and ``disagree``
        (the CI excludes 1 but the test is not significant, or the reverse). Conditions
        in the order of ``summary``.
    """
    cond = an.conditions(summary)
    rows = summary.filter(
        (pl.col("metric") == cfg.primary) & (pl.col("policy") != cfg.reference)
    ).select(
        *cond, "policy", "mean_rank", "ratio", "ratio_low", "ratio_high", "wins", "ties", "losses"
    )
    if pairwise.height:
        vs = pairwise.filter((pl.col("a") == cfg.reference) | (pl.col("b") == cfg.reference))
        tests = vs.select(
            *cond,
            pl.when(pl.col("a") == cfg.reference).then("b").otherwise("a").alias("policy"),
            "p_holm",
        ).with_columns(pl.col(c).cast(rows.schema[c]) for c in cond)  # an all-null load: Null
        rows = rows.join(tests, on=[*cond, "policy"], how="left", nulls_equal=True)
    else:
        rows = rows.with_columns(p_holm=pl.lit(None, pl.Float64))
    excludes = (pl.col("ratio_high") < 1) | (pl.col("ratio_low") > 1)
    significant = pl.col("p_holm") <= cfg.alpha
    return rows.with_columns(
        significant=significant, ci_excludes_one=excludes, disagree=excludes != significant
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class AcrossConditions:
    """Policies compared over conditions (workload × load) as blocks (module docstring)."""

    ranks: pl.DataFrame
    """``policy``, ``workload`` (a workload, or ``"all"`` for every condition), ``mean_rank``
    (average over the workload's conditions of the rank within the condition, 1 = best) and
    ``n_conditions``; policies in order of their overall mean rank."""
    omnibus: pl.DataFrame
    """One row (empty with fewer than 2 conditions or policies): ``n_conditions``, ``k``,
    ``chi2``, ``p_chi2``, ``f``, ``df1``, ``df2``, ``p``, ``kendall_w``, ``nemenyi_cd`` and
    ``min_conditions`` (fewest conditions for any Holm-adjusted pair to reach alpha)."""
    pairwise: pl.DataFrame
    """Every pair: ``a``, ``b``, ``n``, ``n_zero``, ``r_plus``, ``r_minus``, ``p``,
    ``rank_biserial``, ``p_holm``, ``significant``."""
    policies: list[str]
    """Policies with a value in every condition (the only ones compared)."""
    left_out: list[str]
    """Policies missing from some condition."""
    means: pl.DataFrame
    """Every policy's value in every condition it ran in, in display order: ``policy``, the
    condition columns (``workload``, ``load``), ``mean``, ``ci_low``, ``ci_high`` and
    ``n_jobsets`` of the primary metric (policies left out of the ranking included)."""
    n_conditions: int = 0
    """Conditions compared."""
    min_conditions: int = 0
    """Fewest conditions for any Holm-adjusted pair of the policies to reach ``alpha``; with
    fewer, :attr:`omnibus` and :attr:`pairwise` are empty (no power)."""


def across_conditions(
    summary: pl.DataFrame, cfg: an.AnalysisConfig, order: Sequence[str]
) -> AcrossConditions:
    """Compare policies over every condition of ``summary`` (conditions as blocks).

    Parameters
    ----------
    summary
        :func:`~schedlab.evaluation.analysis.policy_summary` tables of every workload stacked
        (with a ``workload`` column; its ``mean`` of the primary metric is the condition's
        value).
    cfg
        Analysis settings (primary metric, alpha).
    order
        Policies in display order.
    """
    cond = an.conditions(summary)
    rows = summary.filter(pl.col("metric") == cfg.primary).with_columns(
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("–") for c in cond], separator="|"
        ).alias("_cond")
    )
    conds = rows.get_column("_cond").unique(maintain_order=True).to_list()
    have = rows.group_by("policy").agg(pl.col("_cond").n_unique().alias("n"))
    full = set(have.filter(pl.col("n") == len(conds)).get_column("policy").to_list())
    policies = [p for p in order if p in full]
    left_out = [p for p in order if p in set(have.get_column("policy")) and p not in full]
    wide = rows.filter(pl.col("policy").is_in(policies)).pivot(
        on="policy", index=[*cond, "_cond"], values="mean"
    )
    values = wide.select(policies).to_numpy().astype(np.float64).reshape(wide.height, -1)
    if values.size and np.all(values > 0):
        values = np.log(values)
    blocks = pl.DataFrame(
        {
            "policy": np.repeat(np.array(policies, dtype=object), wide.height).tolist(),
            "jobset": np.tile(np.arange(wide.height), len(policies)),
            cfg.primary: values.T.ravel(),
        }
    )
    k = len(policies)
    needed = cmp.min_blocks_for_significance(max(k * (k - 1) // 2, 1), cfg.alpha)
    if wide.height >= needed:
        omni = an.omnibus(blocks, cfg, policies).rename(
            {"n_jobsets": "n_conditions", "min_jobsets": "min_conditions"}, strict=False
        )
        pairs = an.pairwise(blocks, cfg, policies)
    else:  # no pair could reach alpha: the tests would say nothing
        omni, pairs = pl.DataFrame(), pl.DataFrame()
    return AcrossConditions(
        ranks=_ranks(wide, cond, policies, values),
        omnibus=omni,
        pairwise=pairs,
        policies=policies,
        left_out=left_out,
        means=rows.filter(pl.col("policy").is_in(order))
        .sort(pl.col("policy").replace_strict(order, list(range(len(order)))), maintain_order=True)
        .select("policy", *cond, "mean", "ci_low", "ci_high", "n_jobsets"),
        n_conditions=wide.height,
        min_conditions=needed,
    )


def _ranks(
    wide: pl.DataFrame, cond: list[str], policies: list[str], values: np.ndarray
) -> pl.DataFrame:
    """Mean within-condition rank per policy, per workload and over all conditions."""
    ranks = cmp.within_block_ranks(values) if values.size else np.zeros((0, len(policies)))
    workload = (
        wide.get_column("workload").to_list() if "workload" in cond else ["all"] * wide.height
    )
    long = pl.DataFrame(
        {
            "policy": np.tile(np.array(policies, dtype=object), wide.height).tolist(),
            "workload": np.repeat(np.array(workload, dtype=object), len(policies)).tolist(),
            "rank": ranks.ravel(),
        },
        schema={"policy": pl.String, "workload": pl.String, "rank": pl.Float64},
    )
    per = long.group_by("policy", "workload", maintain_order=True).agg(
        pl.col("rank").mean().alias("mean_rank"), pl.len().alias("n_conditions")
    )
    overall = long.group_by("policy", maintain_order=True).agg(
        pl.lit("all").alias("workload"),
        pl.col("rank").mean().alias("mean_rank"),
        pl.len().alias("n_conditions"),
    )
    out = pl.concat([per, overall]) if "workload" in cond else overall
    best = overall.sort("mean_rank", maintain_order=True).get_column("policy").to_list()
    key = pl.col("policy").replace_strict(best, list(range(len(best))), return_dtype=pl.Int64)
    return out.sort(key, maintain_order=True)
