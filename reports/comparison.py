"""The statistical-comparison part of a report: tables, figures and text blocks.

Computed by :mod:`schedlab.evaluation.analysis`
(:func:`~schedlab.reports.comparison_data.compare_policies`), drawn here. The
detailed tables are shown at one **focus** condition (a workload at one offered load); the
omnibus test and the ratio to the reference are also tabulated over every condition.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from schedlab.evaluation import analysis as an
from schedlab.evaluation.compare import EXACT_MAX, ZERO_METHOD
from schedlab.evaluation.permutation import PERMUTATIONS, SMALL_BLOCKS
from schedlab.reports import ratio_figures as rf
from schedlab.reports import stats_figures as sf
from schedlab.reports.comparison_data import Comparison
from schedlab.reports.content import Block
from schedlab.reports.figures import fmt_load
from schedlab.reports.output import Plot, figure
from schedlab.reports.tables import (
    ci,
    exploratory_table,
    num,
    omnibus_table,
    pairwise_table,
    secondary_table,
    summary_table,
    unpaired,
)


def cd_inputs(comp: Comparison) -> tuple[dict[str, float], list[list[str]]]:
    """Mean ranks (primary metric) and the groups of not significantly different policies at
    the focus: what a critical-difference diagram draws."""
    mean_ranks = dict(
        comp.at_focus(comp.summary)
        .filter(pl.col("metric") == comp.cfg.primary)
        .select("policy", "mean_rank")
        .rows()
    )
    pairs = comp.at_focus(comp.pairwise)
    return mean_ranks, (an.cliques(mean_ranks, pairs) if pairs.height else [])


def figures(
    comp: Comparison, pj: pl.DataFrame, palette: dict[str, Any]
) -> dict[str, tuple[Plot, str]]:
    """Figure and caption of the jobset plot, CD diagram, heatmap and ratio plot at the focus."""
    cfg, where, ranked = comp.cfg, comp.where(), comp.ranked()
    out: dict[str, tuple[Plot, str]] = {}
    if not ranked:
        return out
    rows = comp.at_focus(pj)
    label = comp.name(cfg.primary)
    out["jobset_values.png"] = (
        figure(
            lambda ax: sf.plot_jobset_values(
                rows,
                metric=cfg.primary,
                order=ranked,
                palette=palette,
                unit=comp.time_unit,
                ax=ax,
                title=f"{comp.name(cfg.primary).capitalize()} {where} "
                f"({rows.select(pl.struct('seed', 'jobset').n_unique()).item()} jobsets)",
            ),
            (9, 4.5),
        ),
        f"Per-jobset {label} {where}: one dot per jobset, boxes give the quartiles.",
    )
    omni, pairs = comp.at_focus(comp.omnibus), comp.at_focus(comp.pairwise)
    if omni.height and pairs.height > 1:  # one pair: its row of the table says it all
        mean_ranks, groups = cd_inputs(comp)
        o = omni.row(0, named=True)
        size = sf.cd_figsize(mean_ranks, len(groups))
        out["cd_diagram.png"] = (
            figure(
                lambda ax: sf.plot_cd_diagram(
                    mean_ranks, groups, palette=palette, cd=o["nemenyi_cd"], ax=ax
                ),
                size,
            ),
            f"Critical-difference diagram {where}: average rank of each policy over "
            f"{o['n_jobsets']} jobsets (1 = best, {label}). Bars join rank-adjacent policies with "
            f"no significant pair among them by two-sided Wilcoxon signed-rank tests (zero_method="
            f"{ZERO_METHOD}) with Holm correction at α = {cfg.alpha:g}; the scale bar is the "
            f"Nemenyi critical difference (CD = {o['nemenyi_cd']:.2f}) for comparison."
            f"{sf.unjoined_sentence(an.unjoined(groups, pairs))} Omnibus "
            f"Friedman test: {sf.p_equals(o['p'])} ({o['p_reason']}).",
        )
        k = len(ranked)
        out["pairwise_heatmap.png"] = (
            figure(
                lambda ax: sf.plot_pairwise_heatmap(pairs, ranked, alpha=cfg.alpha, ax=ax),
                (min(4 + 1.2 * k, 12), min(2.5 + 0.8 * k, 9)),
                span="page" if k > 4 else "column",
            ),
            f"Pairwise comparisons {where} on {label}: cell = matched-pairs rank-biserial "
            f"correlation of the row policy versus the column policy (> 0: row better) and the "
            f"Holm-adjusted Wilcoxon signed-rank p-value; * marks p ≤ {cfg.alpha:g}.",
        )
    ratios = rf.ratio_figure(
        comp.at_focus(comp.summary),
        reference=cfg.reference,
        metrics=cfg.metrics,
        palette=palette,
        caption=f"Objectives {where}: geometric-mean ratio of each policy's per-jobset value to "
        f"{cfg.reference}'s on the same jobset, with paired bootstrap "
        f"{100 * cfg.confidence:g}% CIs (< 1: better than {cfg.reference}).",
    )
    if ratios is not None:
        out["ratio_to_reference.png"] = ratios
    return out


def power_warnings(comp: Comparison) -> list[str]:
    """One warning per condition whose jobsets are too few for any pair to be significant."""
    out = []
    for r in comp.omnibus.iter_rows(named=True):
        if r["n_jobsets"] < r["min_jobsets"]:
            m = r["k"] * (r["k"] - 1) // 2
            out.append(
                f"At {fmt_load(r.get('load'))}, {r['n_jobsets']} jobsets are too few for any "
                f"pair of the {r['k']} policies to reach significance at α = {comp.cfg.alpha:g}: "
                f"the smallest exact two-sided Wilcoxon p-value with n jobsets is 2/2^n, and Holm "
                f"multiplies it by the {m} comparisons. At least {r['min_jobsets']} jobsets are "
                f"needed; a non-significant result here says nothing."
            )
    return out


def headline(comp: Comparison) -> str:
    """One sentence: best policy at the focus and its comparison with the reference."""
    cfg, ranked = comp.cfg, comp.ranked()
    if not ranked:
        return "No policy has results."
    summ = comp.at_focus(comp.summary).filter(pl.col("metric") == cfg.primary)
    pairs = comp.at_focus(comp.pairwise)
    if pairs.height and (pairs.get_column("n_zero") == pairs.get_column("n")).all():
        return (
            f"{comp.where().capitalize()}, every policy has the same {comp.name(cfg.primary)} on "
            f"every jobset: there is no difference to report."
        )
    best = summ.filter(pl.col("policy") == ranked[0]).row(0, named=True)
    text = (
        f"{comp.where().capitalize()}, {ranked[0]} has the best mean rank "
        f"({num(best['mean_rank'])}) on {comp.name(cfg.primary)}: mean "
        f"{ci(best['mean'], best['ci_low'], best['ci_high'])} over {best['n_jobsets']} "
        f"jobsets."
    )
    other = ranked[0] if ranked[0] != cfg.reference else (ranked[1] if len(ranked) > 1 else None)
    if other is None:
        return text
    r = summ.filter(pl.col("policy") == other).row(0, named=True)
    pair = comp.at_focus(comp.pairwise).filter(
        pl.col("a").is_in([other, cfg.reference]) & pl.col("b").is_in([other, cfg.reference])
    )
    p = pair.get_column("p_holm").item() if pair.height else None
    verdict = "significant" if p is not None and p <= cfg.alpha else "not significant"
    return text + (
        f" {other} versus {cfg.reference}: geometric-mean ratio "
        f"{ci(r['ratio'], r['ratio_low'], r['ratio_high'])}, wins/ties/losses "
        f"{r['wins']}/{r['ties']}/{r['losses']}, Holm-adjusted Wilcoxon {sf.p_equals(p)} "
        f"({verdict} at α = {cfg.alpha:g})."
    )


def blocks(
    comp: Comparison,
    images: dict[str, Any],
    bucket_labels: dict[str, str],
    ratios: pl.DataFrame | None = None,
) -> list[Block]:
    """The comparison sections of the report (focus condition, then omnibus over loads).

    ``ratios`` (:func:`~schedlab.evaluation.overview.ratio_overview`) marks the summary table's
    ratios with the significance of the test against the reference.
    """
    cfg, where = comp.cfg, comp.where()
    conf = f"{100 * cfg.confidence:g}%"
    out: list[Block] = [("h2", f"Which policy is better {where}?"), ("p", headline(comp))]
    out += [("warning", w) for w in power_warnings(comp)]
    out += [
        ("table", summary_table(comp, ratios)),
        (
            "p",
            f"Per-jobset {comp.name(cfg.primary)}, over jobsets. Mean rank: average rank within "
            f"jobsets (1 = best). Ratio: geometric mean over jobsets of policy / "
            f"{cfg.reference} on the same jobset, paired percentile-bootstrap {conf} CI. "
            f"W/T/L: jobsets where the policy is lower / equal / higher than {cfg.reference}. "
            f"P(better) = (W + T/2) / jobsets."
            + (
                " Policies ran on different jobsets: the raw mean is over each policy's own "
                "jobsets (their number in brackets) and is not compared; the paired mean, "
                "ranks and ratios are over the jobsets every policy ran on."
                if unpaired(comp.at_focus(comp.summary).filter(pl.col("metric") == cfg.primary))
                else ""
            ),
        ),
    ]
    for name in ("jobset_values.png", "cd_diagram.png", "pairwise_heatmap.png"):
        if name in images:
            out.append(("figure", (name, images[name][1])))
    if comp.pairwise.height:
        out += [
            ("h3", f"All pairs {where} (confirmatory)"),
            ("table", pairwise_table(comp.at_focus(comp.pairwise), cfg.alpha)),
            (
                "p",
                f"Two-sided Wilcoxon signed-rank tests on per-jobset {comp.name(cfg.primary)}"
                f" (zero_method={ZERO_METHOD}; exact p-values, ties included, up to "
                f"{EXACT_MAX} non-zero differences), Holm-adjusted "
                f"over the pairs at this load. Rank-biserial r = (R+ − R−) / (n(n+1)/2), "
                f"ranks over all jobsets including ties; > 0: A better.",
            ),
        ]
    if comp.omnibus.height:
        out += [
            ("h3", "Omnibus test at every load"),
            ("table", omnibus_table(comp)),
            (
                "p",
                "Friedman test over all policies (ranks within jobsets, tie-corrected) "
                "with the Iman–Davenport F correction (Demšar 2006). p method: from "
                f"{SMALL_BLOCKS} jobsets on, the F approximation; with fewer jobsets, or "
                "when every jobset ranks the policies identically (F infinite, not shown), "
                "the exact permutation distribution of the statistic (each jobset's ranks "
                "permuted independently, ties kept), or a seeded test of "
                f"{PERMUTATIONS:,} random permutations where enumerating is too large. "
                "Kendall's W = "
                "χ² / (n (k − 1)) measures how consistently jobsets rank the policies "
                "(0: not at all, 1: identically). Nemenyi CD: the critical difference of "
                f"mean ranks at α = {cfg.alpha:g}.",
            ),
        ]
    out += [
        ("h2", f"Objectives {where}"),
        ("table", secondary_table(comp)),
        (
            "p",
            f"Mean over jobsets of each per-jobset metric [{conf} CI]; bounded slowdown "
            f"uses {comp.tau}.",
        ),
    ]
    if "ratio_to_reference.png" in images:
        out.append(("figure", ("ratio_to_reference.png", images["ratio_to_reference.png"][1])))
    if comp.exploratory.height and comp.at_focus(comp.exploratory).height:
        out += [
            ("h3", f"Secondary metrics and job lengths {where} (exploratory)"),
            ("table", exploratory_table(comp, bucket_labels)),
            (
                "p",
                f"Exploratory: each policy versus {cfg.reference} on the secondary metrics "
                "and on the primary metric within each job-length bucket; Wilcoxon "
                "signed-rank p-values adjusted by Benjamini–Hochberg (q, false discovery "
                "rate) over this table. These generate hypotheses; they do not confirm "
                "them.",
            ),
        ]
    return out
