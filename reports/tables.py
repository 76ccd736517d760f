"""Tables of a report: number formatting and the comparison tables, as markup :class:`Table`.

Every builder takes tidy tables computed by :mod:`schedlab.evaluation` (through a
:class:`~schedlab.reports.comparison_data.Comparison`) and only formats them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import polars as pl

from schedlab.evaluation.metrics import SHORT_METRIC
from schedlab.evaluation.permutation import METHOD_LABELS
from schedlab.reports import stats_figures as sf
from schedlab.reports.comparison_data import Comparison
from schedlab.reports.content import Table
from schedlab.reports.figures import fmt_load, short_metric


def num(v: float | None) -> str:
    """A value for a table: 2 decimals (3 significant digits below 0.1); ``–`` if missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3g}" if abs(v) < 0.1 and v != 0 else f"{v:,.2f}"


def ci(v: float | None, lo: float | None, hi: float | None) -> str:
    """``"4.41 [4.10, 4.73]"``; the value alone when there is no interval (``lo`` or ``hi``
    missing) or the interval is the point itself (one jobset: nothing to resample)."""
    if v is None:
        return "–"
    if lo is None or hi is None or lo == hi == v:
        return num(v)
    return f"{num(v)} [{num(lo)}, {num(hi)}]"


def _fmt_ci(mean: float, low: float, high: float) -> str:
    return ci(mean, low, high)


def ci_table(summary: pl.DataFrame, column: str, labels: Callable[[Any], str]) -> Table:
    """Rows = policy, columns = values of ``column``, cell = ``"mean [low, high]"``.

    In each column the lowest mean, as displayed (2 decimals), is marked bold, ties included,
    unless every policy ties or the policies' means are over different numbers of jobsets
    (``n_jobsets``: not comparable). ``summary`` must hold one metric only.
    """
    policies = list(dict.fromkeys(summary.get_column("policy").to_list()))
    values = summary.get_column(column).unique().sort(nulls_last=True).to_list()
    cells = {
        (r["policy"], r[column]): (_fmt_ci(r["mean"], r["ci_low"], r["ci_high"]), r["mean"])
        for r in summary.iter_rows(named=True)
    }
    sizes = {
        v: summary.filter(pl.col(column).eq_missing(v)).get_column("n_jobsets").n_unique()
        for v in values
    }
    rows = [[p] + [cells.get((p, v), ("–", 0.0))[0] for v in values] for p in policies]
    bold = set()
    for j, v in enumerate(values, start=1):
        shown = {i: round(cells[(p, v)][1], 2) for i, p in enumerate(policies) if (p, v) in cells}
        best = min(shown.values(), default=None)
        if len(set(shown.values())) > 1 and sizes[v] == 1:
            bold |= {(i, j) for i, m in shown.items() if m == best}
    return Table(["policy"] + [labels(v) for v in values], rows, bold)


def unpaired(rows: pl.DataFrame) -> bool:
    """Whether some policy's own mean is over other jobsets than the paired statistics.

    ``rows``: one condition and metric of the comparison summary; ``n_paired`` is null when
    the policies have no jobset in common.
    """
    differ = rows.get_column("n_jobsets") != rows.get_column("n_paired")
    return bool(differ.fill_null(True).any())


def summary_table(comp: Comparison, ratios: pl.DataFrame | None = None) -> Table:
    """Focus condition, primary metric: rank, median [IQR], mean [CI], ratio [CI], W/T/L.

    When the policies ran on different jobsets (:func:`unpaired`), a column of paired means
    over the common jobsets follows the raw means, and only it is compared (bold). With
    ``ratios`` (:func:`~schedlab.evaluation.overview.ratio_overview`), ratio cells carry the
    markers of :func:`ratio_cell` and the table their footnotes.
    """
    cfg = comp.cfg
    marked = {
        r["policy"]: ratio_cell(r)
        for r in (comp.at_focus(ratios).iter_rows(named=True) if ratios is not None else [])
        if r["ratio"] is not None
    }
    conf = f"{100 * cfg.confidence:g}%"
    rows = comp.at_focus(comp.summary).filter(pl.col("metric") == cfg.primary).sort("mean_rank")
    paired = unpaired(rows)
    compared = rows.get_column("paired_mean" if paired else "mean")
    best = compared.min() if compared.n_unique() > 1 else None  # no bold when all tie
    body, bold = [], set()
    for i, r in enumerate(rows.iter_rows(named=True)):
        ref = r["policy"] == cfg.reference
        wtl = "–" if r["wins"] is None else f"{r['wins']}/{r['ties']}/{r['losses']}"
        mean = ci(r["mean"], r["ci_low"], r["ci_high"])
        body.append(
            [
                num(r["mean_rank"]),
                r["policy"] + (" (reference)" if ref else ""),
                f"{num(r['median'])} [{num(r['q25'])}, {num(r['q75'])}]",
                *([f"{mean} ({r['n_jobsets']})", num(r["paired_mean"])] if paired else [mean]),
                "1 (reference)"
                if ref
                else marked.get(r["policy"], ci(r["ratio"], r["ratio_low"], r["ratio_high"])),
                wtl,
                "–" if r["p_improve"] is None else num(r["p_improve"]),
            ]
        )
        if best is not None and r["paired_mean" if paired else "mean"] == best:
            bold.add((i, 4 if paired else 3))
    n_common = cast("int | None", rows.get_column("n_paired").max()) or 0
    means = (
        [f"mean [{conf} CI] (jobsets)", f"paired mean ({n_common} common jobsets)"]
        if paired
        else [f"mean [{conf} CI]"]
    )
    header = [
        "mean rank",
        "policy",
        "median [IQR]",
        *means,
        f"ratio to {cfg.reference} [{conf} CI]",
        "W/T/L",
        "P(better)",
    ]
    marks = "".join(marked.values())
    return Table(header, body, bold, left=2, notes=ratio_notes(comp, marks))


def secondary_table(comp: Comparison) -> Table:
    """Focus condition: mean [CI] of every metric (columns) per policy (rows, by rank)."""
    summ = comp.at_focus(comp.summary)
    cells = {
        (p, m): ci(v, lo, hi)
        for p, m, v, lo, hi in summ.select("policy", "metric", "mean", "ci_low", "ci_high").rows()
    }
    rows = [[p] + [cells.get((p, m), "–") for m in comp.cfg.metrics] for p in comp.ranked()]
    unit = comp.time_unit
    return Table(["policy", *(short_metric(m, unit) for m in comp.cfg.metrics)], rows)


def omnibus_table(comp: Comparison) -> Table:
    """Every condition: jobsets, policies, chi2, Iman–Davenport F (df), p and how, W, CD."""
    body = [
        [
            fmt_load(r["load"]) if "load" in r else "all",
            str(r["n_jobsets"]),
            str(r["k"]),
            num(r["chi2"]),
            f"{num(r['f'])} ({r['df1']}, {r['df2']})",
            sf.format_p(r["p"]),
            METHOD_LABELS[r["p_method"]],
            num(r["kendall_w"]),
            num(r["nemenyi_cd"]),
        ]
        for r in comp.omnibus.iter_rows(named=True)
    ]
    header = [
        "offered load",
        "jobsets",
        "policies",
        "Friedman χ²",
        "Iman–Davenport F (df)",
        "p",
        "p method",
        "Kendall's W",
        "Nemenyi CD",
    ]
    return Table(header, body)


def pairwise_table(pairs: pl.DataFrame, alpha: float, unit: str = "jobsets") -> Table:
    """Every pair of ``pairs`` (one condition of :func:`~schedlab.evaluation.analysis.pairwise`):
    Wilcoxon statistic, raw and Holm p, rank-biserial r; ``unit`` names the blocks."""
    body = [
        [
            r["a"],
            r["b"],
            f"{r['n']} ({r['n_zero']})",
            f"{r['r_plus']:g}",
            f"{r['r_minus']:g}",
            sf.format_p(r["p"]),
            sf.format_p(r["p_holm"]),
            f"{r['rank_biserial']:+.2f}",
            "yes" if r["significant"] else "no",
        ]
        for r in pairs.iter_rows(named=True)
    ]
    header = [
        "A",
        "B",
        f"{unit} (ties)",
        "R+ (A better)",
        "R− (B better)",
        "p",
        "p (Holm)",
        "rank-biserial r",
        f"significant at {alpha:g}",
    ]
    return Table(header, body, left=2)


def exploratory_table(comp: Comparison, bucket_labels: dict[str, str]) -> Table:
    """Focus condition: secondary metrics and length buckets vs the reference, BH q-values."""
    conf = f"{100 * comp.cfg.confidence:g}%"
    body = []
    for r in comp.at_focus(comp.exploratory).iter_rows(named=True):
        what = (
            SHORT_METRIC.get(r["metric"], r["metric"])
            if r["family"] == "metric"
            else f"{SHORT_METRIC.get(r['metric'], r['metric'])}, "
            f"{bucket_labels.get(r['bucket'], r['bucket'])} jobs"
        )
        body.append(
            [
                what,
                r["policy"],
                str(r["n"]),
                ci(r["ratio"], r["ratio_low"], r["ratio_high"]),
                f"{r['wins']}/{r['ties']}/{r['losses']}",
                f"{r['rank_biserial']:+.2f}",
                sf.format_p(r["p"]),
                sf.format_p(r["q"]),
            ]
        )
    header = [
        "metric",
        "policy",
        "jobsets",
        f"ratio to {comp.cfg.reference} [{conf} CI]",
        "W/T/L",
        "rank-biserial r",
        "p",
        "q (BH)",
    ]
    return Table(header, body, left=2)


MARKS = {
    "*": "* the Holm-adjusted Wilcoxon signed-rank test against {ref} is significant at "
    "α = {alpha:g}.",
    "†": "† the {conf} CI of the ratio (not adjusted for multiple comparisons) and the "
    "Holm-adjusted test disagree: the CI excludes 1 but the test is not significant, or the "
    "reverse. The CI covers one comparison and the geometric mean of the ratios; the test is "
    "adjusted over every pair at that load and concerns the signed ranks of the differences.",
}
"""Footnotes of the markers of a ratio cell."""


def ratio_cell(r: dict[str, Any]) -> str:
    """``"0.83 [0.79, 0.88]*"``: ratio [CI] to the reference, ``*`` significant, ``†`` the CI
    and the test disagree (a row of :func:`~schedlab.evaluation.overview.ratio_overview`)."""
    marks = ("*" if r["significant"] else "") + ("†" if r["disagree"] else "")
    return ci(r["ratio"], r["ratio_low"], r["ratio_high"]) + marks


def ratio_notes(comp: Comparison, marks: str) -> list[str]:
    """The footnotes of the markers in ``marks``."""
    conf = f"{100 * comp.cfg.confidence:g}%"
    return [
        MARKS[m].format(ref=comp.cfg.reference, alpha=comp.cfg.alpha, conf=conf)
        for m in MARKS
        if m in marks
    ]


def overview_table(comp: Comparison, ratios: pl.DataFrame) -> Table:
    """Every load (rows): the best policy by mean rank, and each policy's ratio to the reference.

    Cells are :func:`ratio_cell`; bold: significantly better than the reference. ``ratios`` is
    :func:`~schedlab.evaluation.overview.ratio_overview` of one workload.
    """
    cfg = comp.cfg
    prim = comp.summary.filter(pl.col("metric") == cfg.primary)
    loads = prim.get_column("load").unique().sort(nulls_last=True).to_list()
    have = set(ratios.get_column("policy").to_list())
    pols = [p for p in comp.order if p in have]
    cells = {(r["load"], r["policy"]): r for r in ratios.iter_rows(named=True)}
    omni = comp.omnibus.filter(pl.col("p") > cfg.alpha) if comp.omnibus.height else comp.omnibus
    not_significant = set(omni.get_column("load").to_list()) if omni.height else set()
    body, bold = [], set()
    for i, load in enumerate(loads):
        at = prim.filter(
            pl.col("load").is_close(load) if load is not None else pl.col("load").is_null()
        )
        best = at.sort("mean_rank", maintain_order=True).row(0, named=True)
        ns = " n.s." if load in not_significant else ""
        row = [fmt_load(load), f"{best['policy']} ({num(best['mean_rank'])}){ns}"]
        for j, p in enumerate(pols, start=2):
            r = cells.get((load, p))
            row.append("–" if r is None or r["ratio"] is None else ratio_cell(r))
            if r is not None and r["significant"] and (r["ratio"] or 1) < 1:
                bold.add((i, j))
        body.append(row)
    marks = "".join(c for row in body for c in row[2:])
    notes = [
        f"Cells: geometric-mean ratio of per-jobset {cfg.primary} to {cfg.reference} on the "
        f"same jobsets [{100 * cfg.confidence:g}% paired bootstrap CI]; < 1: better than "
        f"{cfg.reference}; bold: significantly better.",
        *ratio_notes(comp, marks),
    ]
    if not_significant:
        notes.append(
            f"n.s.: at this load the Friedman test over all policies is not significant at "
            f"α = {cfg.alpha:g}: no policy is shown to be best."
        )
    header = ["offered load", "best (mean rank)", *pols]
    return Table(header, body, bold, left=2, notes=notes)
