"""Tables of a report: number formatting and the comparison tables, as markup :class:`Table`.

Every builder takes tidy tables computed by :mod:`schedlab.evaluation` (through a
:class:`~schedlab.reports.comparison.Comparison`) and only formats them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab.evaluation.permutation import METHOD_LABELS
from schedlab.reports import stats_figures as sf
from schedlab.reports.figures import format_load
from schedlab.reports.markup import Table

if TYPE_CHECKING:
    from schedlab.reports.comparison import Comparison


def fmt_load(load: float | None) -> str:
    """Offered load as a percentage; ``"all jobsets"`` for None."""
    return "all jobsets" if load is None else format_load(load)


def num(v: float | None) -> str:
    """A value for a table: 2 decimals (3 significant digits below 0.1); ``–`` if missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3g}" if abs(v) < 0.1 and v != 0 else f"{v:,.2f}"


def ci(v: float | None, lo: float | None, hi: float | None) -> str:
    """``"4.41 [4.10, 4.73]"``."""
    return "–" if v is None else f"{num(v)} [{num(lo)}, {num(hi)}]"


def _fmt_ci(mean: float, low: float, high: float) -> str:
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


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


def summary_table(comp: Comparison) -> Table:
    """Focus condition, primary metric: rank, median [IQR], mean [CI], ratio [CI], W/T/L.

    When the policies ran on different jobsets (:func:`unpaired`), a column of paired means
    over the common jobsets follows the raw means, and only it is compared (bold).
    """
    cfg = comp.cfg
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
                "1 (reference)" if ref else ci(r["ratio"], r["ratio_low"], r["ratio_high"]),
                wtl,
                "–" if r["p_improve"] is None else num(r["p_improve"]),
            ]
        )
        if best is not None and r["paired_mean" if paired else "mean"] == best:
            bold.add((i, 4 if paired else 3))
    n_common = rows.get_column("n_paired").max() or 0
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
    return Table(header, body, bold, left=2)


def secondary_table(comp: Comparison) -> Table:
    """Focus condition: mean [CI] of every metric (columns) per policy (rows, by rank)."""
    summ = comp.at_focus(comp.summary)
    cells = {
        (p, m): ci(v, lo, hi)
        for p, m, v, lo, hi in summ.select("policy", "metric", "mean", "ci_low", "ci_high").rows()
    }
    rows = [[p] + [cells.get((p, m), "–") for m in comp.cfg.metrics] for p in comp.ranked()]
    return Table(["policy", *(sf.SHORT_METRIC.get(m, m) for m in comp.cfg.metrics)], rows)


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


def pairwise_table(comp: Comparison) -> Table:
    """Focus condition: every pair's Wilcoxon statistic, raw and Holm p, rank-biserial r."""
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
        for r in comp.at_focus(comp.pairwise).iter_rows(named=True)
    ]
    header = [
        "A",
        "B",
        "jobsets (ties)",
        "R+ (A better)",
        "R− (B better)",
        "p",
        "p (Holm)",
        "rank-biserial r",
        f"significant at {comp.cfg.alpha:g}",
    ]
    return Table(header, body, left=2)


def exploratory_table(comp: Comparison, bucket_labels: dict[str, str]) -> Table:
    """Focus condition: secondary metrics and length buckets vs the reference, BH q-values."""
    conf = f"{100 * comp.cfg.confidence:g}%"
    body = []
    for r in comp.at_focus(comp.exploratory).iter_rows(named=True):
        what = (
            sf.SHORT_METRIC.get(r["metric"], r["metric"])
            if r["family"] == "metric"
            else f"{sf.SHORT_METRIC.get(r['metric'], r['metric'])}, "
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


def sweep_ratio_table(comp: Comparison) -> Table:
    """Every load: ratio [CI] of each policy to the reference, * where Holm-significant."""
    cfg = comp.cfg
    rows = comp.summary.filter((pl.col("metric") == cfg.primary) & pl.col("ratio").is_not_null())
    sig = (
        {
            (r["load"], frozenset((r["a"], r["b"])))
            for r in comp.pairwise.iter_rows(named=True)
            if r["significant"]
        }
        if comp.pairwise.height
        else set()
    )
    loads = rows.get_column("load").unique().sort(nulls_last=True).to_list()
    cells = {}
    for r in rows.iter_rows(named=True):
        star = " *" if (r["load"], frozenset((r["policy"], cfg.reference))) in sig else ""
        cells[(r["policy"], r["load"])] = ci(r["ratio"], r["ratio_low"], r["ratio_high"]) + star
    pols = [p for p in comp.order if p != cfg.reference and any((p, x) in cells for x in loads)]
    body = [[p] + [cells.get((p, x), "–") for x in loads] for p in pols]
    return Table(["policy", *(fmt_load(x) for x in loads)], body)
