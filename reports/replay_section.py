"""The comparison section of a workload replayed as one jobset (a whole trace): statistics over
time blocks (:mod:`schedlab.evaluation.replay`), not over jobsets.

It replaces the paired-by-jobset sections of :mod:`schedlab.reports.comparison` at such a
condition, and says which design it used and why: one jobset gives nothing to pair, so the
report compares the per-job distributions, gives block-bootstrap intervals of the whole log's
means and, with enough blocks, tests each policy against the reference paired by block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from schedlab.evaluation.replay import MEAN_METRICS, Replay
from schedlab.reports import ratio_figures as rf
from schedlab.reports import stats_figures as sf
from schedlab.reports.comparison_data import Comparison
from schedlab.reports.content import Block, Table
from schedlab.reports.figures import plain_log_ticks
from schedlab.reports.output import Plot, panels, place_legend
from schedlab.reports.palette import line_style
from schedlab.reports.tables import ci, num
from schedlab.reports.units import TimeScale

DAY = 86_400.0
CDF_POINTS = 2_000
"""Points of a per-job CDF drawn (more jobs are thinned to evenly spaced ranks)."""
STATS = ("mean", "p50", "p90", "p99", "max")
STATS_LABELS = ("mean", "median", "90th pct.", "99th pct.", "max")


def scaled(r: Replay, scale: TimeScale) -> Replay:
    """``r`` with its times (wait, turnaround and their tails) in ``scale``'s unit."""
    from dataclasses import replace

    from schedlab.evaluation.metrics import TIME_METRICS

    if scale.factor == 1.0:
        return r
    times = pl.col("metric").is_in(list(TIME_METRICS))
    cols = ["value", "ci_low", "ci_high"]
    summary = r.summary.with_columns(
        pl.when(times).then(pl.col(c) / scale.factor).otherwise(pl.col(c)).alias(c) for c in cols
    )
    q = ["mean", "p50", "p90", "p99", "max"]
    quantiles = r.quantiles.with_columns(
        pl.when(times).then(pl.col(c) / scale.factor).otherwise(pl.col(c)).alias(c) for c in q
    )
    return replace(
        r,
        summary=summary,
        quantiles=quantiles,
        blocks=scale.frame(r.blocks, ("wait", "completion")),
    )


def block_words(comp: Comparison, d: dict[str, Any]) -> str:
    """``"week"``, ``"day"`` or ``"block of 3.2 h"``: one block, in words."""
    length = float(d["block_length"])
    if comp.base_unit == "s" and length in (7 * DAY, DAY):
        return "week" if length == 7 * DAY else "day"
    unit = comp.base_unit
    return f"block of {length:,.4g} {unit}"


def design_text(comp: Comparison) -> str:
    """Which design the section uses and why, with the block length and its check."""
    assert comp.replay is not None
    d = comp.at_focus(comp.replay.design).row(0, named=True)
    cfg, block = comp.cfg, block_words(comp, d)
    text = (
        f"Design: every policy replayed the whole log once, so there is one jobset per policy "
        f"and nothing to pair or resample across jobsets (a test over one pair says nothing). "
        f"Statistics are over time instead: the log's {d['n_jobs']:,} jobs are cut by arrival "
        f"into {d['n_blocks']} blocks of one {block} ({d['why']}). Intervals: "
        f"{100 * cfg.confidence:g}% block bootstrap (the blocks resampled with replacement, "
        f"{cfg.n_resamples:,} resamples, seed {cfg.seed}; each resample's mean is over its "
        f"jobs, so blocks weigh by their jobs; a ratio to {cfg.reference} resamples both "
        f"policies' blocks together). Blocks are not independent: "
        f"{100 * d['crossing']:.1f}% of {cfg.reference}'s jobs started in a later {block} "
        "than they arrived in."
    )
    if d["paired"]:
        return text + (
            f" Paired comparison: each policy's mean per {block} against {cfg.reference}'s, "
            f"a two-sided Wilcoxon signed-rank test over the {d['n_blocks']} blocks, "
            f"Holm-adjusted over the policies (at least {d['min_blocks']} blocks are needed "
            "for any to reach significance)."
        )
    return text + (
        f" No test: {d['n_blocks']} blocks are too few for any comparison to reach "
        f"α = {cfg.alpha:g} after Holm's correction (at least {d['min_blocks']} are needed)."
    )


def _focus(comp: Comparison) -> tuple[Replay, pl.DataFrame]:
    assert comp.replay is not None
    return comp.replay, comp.at_focus(comp.replay.summary)


def headline(comp: Comparison) -> str:
    """The best policy on the primary metric over the whole log, and its comparison with the
    reference."""
    r, summ = _focus(comp)
    cfg, name = comp.cfg, comp.name(comp.cfg.primary)
    rows = summ.filter(pl.col("metric") == cfg.primary).sort("value", nulls_last=True)
    if rows.height == 0:
        return "No policy has results."
    best = rows.row(0, named=True)
    text = (
        f"Over the whole log, {best['policy']} has the lowest {name}: "
        f"{ci(best['value'], best['ci_low'], best['ci_high'])}."
    )
    other = (
        best
        if best["policy"] != cfg.reference
        else (rows.row(1, named=True) if rows.height > 1 else None)
    )
    if other is None or other.get("ratio") is None:
        return text
    d = comp.at_focus(r.design).row(0, named=True)
    block = block_words(comp, d)
    text += (
        f" {other['policy']} versus {cfg.reference}: ratio of means "
        f"{ci(other['ratio'], other['ratio_low'], other['ratio_high'])}, lower in "
        f"{other['wins']} of {d['n_blocks']} {block}s"
    )
    if other.get("p_holm") is not None:
        verdict = "significant" if other["significant"] else "not significant"
        text += (
            f", Holm-adjusted Wilcoxon over {block}s {sf.p_equals(other['p_holm'])} ({verdict} "
            f"at α = {cfg.alpha:g})"
        )
    return text + "."


def main_table(comp: Comparison) -> Table:
    """Per policy (best first): the primary metric [CI], ratio to the reference [CI], blocks
    won/tied/lost and the Holm-adjusted block test."""
    r, summ = _focus(comp)
    cfg = comp.cfg
    conf = f"{100 * cfg.confidence:g}%"
    d = comp.at_focus(r.design).row(0, named=True)
    block = block_words(comp, d)
    rows = summ.filter(pl.col("metric") == cfg.primary).sort("value", nulls_last=True)
    body, bold = [], set()
    for i, x in enumerate(rows.iter_rows(named=True)):
        ref = x["policy"] == cfg.reference
        body.append(
            [
                x["policy"] + (" (reference)" if ref else ""),
                ci(x["value"], x["ci_low"], x["ci_high"]),
                "1 (reference)"
                if ref
                else ci(x["ratio"], x["ratio_low"], x["ratio_high"])
                + ("*" if x["significant"] else ""),
                "–" if x["wins"] is None else f"{x['wins']}/{x['ties']}/{x['losses']}",
                "–" if x["p_holm"] is None else sf.format_p(x["p_holm"]),
            ]
        )
        if i == 0:
            bold.add((i, 1))
    header = [
        "policy",
        f"{comp.name(cfg.primary)} [{conf} CI]",
        f"ratio to {cfg.reference} [{conf} CI]",
        f"{block}s W/T/L",
        "p (Holm)",
    ]
    notes = [
        f"Whole-log means with {conf} block-bootstrap intervals; ratio = this policy's mean over "
        f"{cfg.reference}'s (the same jobs); W/T/L: {block}s where the policy's mean is lower "
        f"/ equal / higher; p: Wilcoxon signed-rank over {block}s, Holm-adjusted over the "
        "policies; * significant at "
        f"α = {cfg.alpha:g}."
    ]
    return Table(header, body, bold, notes=notes)


def objectives_table(comp: Comparison) -> Table:
    """Every metric (columns) per policy: the whole log's value, with the block-bootstrap
    interval for means."""
    _, summ = _focus(comp)
    cells = {
        (p, m): ci(v, lo, hi)
        for p, m, v, lo, hi in summ.select("policy", "metric", "value", "ci_low", "ci_high").rows()
    }
    order = (
        summ.filter(pl.col("metric") == comp.cfg.primary)
        .sort("value", nulls_last=True)
        .get_column("policy")
        .to_list()
    )
    rows = [[p, *(cells.get((p, m), "–") for m in comp.cfg.metrics)] for p in order]
    from schedlab.reports.figures import short_metric

    return Table(["policy", *(short_metric(m, comp.time_unit) for m in comp.cfg.metrics)], rows)


def distribution_table(comp: Comparison, metric: str) -> Table:
    """Per policy: mean, median, 90th and 99th percentile and maximum of the per-job ``metric``
    (``"wait"`` or ``"bounded_slowdown"``) over the whole log."""
    r, _ = _focus(comp)
    q = comp.at_focus(r.quantiles).filter(pl.col("metric") == metric).sort("mean")
    body = [[x["policy"], *(num(x[s]) for s in STATS)] for x in q.iter_rows(named=True)]
    what = f"job waiting time ({comp.time_unit})" if metric == "wait" else "job bounded slowdown"
    return Table([what, *STATS_LABELS], body)


def plot_job_cdfs(
    r: Replay, table: pl.DataFrame, palette: Mapping[str, Any], unit: str, axes: Any
) -> None:
    """Empirical CDFs of the per-job wait (left) and bounded slowdown (right), one line per
    policy, log x (waits of 0 drawn at the axis' left edge)."""
    for ax, metric, label in (
        (axes[0], "wait", f"Job waiting time ({unit}, log scale)"),
        (axes[1], "bounded_slowdown", "Job bounded slowdown (log scale)"),
    ):
        _cdf(ax, table, metric, palette)
        ax.set_xlabel(label)
    axes[0].set_ylabel("Fraction of jobs with value ≤ x")
    place_legend(axes[1])


def _cdf(ax: Axes, table: pl.DataFrame, metric: str, palette: Mapping[str, Any]) -> None:
    positive = table.filter(pl.col(metric) > 0).get_column(metric)
    floor = float(positive.min()) if positive.len() else 1.0  # type: ignore[arg-type]
    for p in (p for p in palette if p in set(table.get_column("policy").to_list())):
        x = np.sort(table.filter(pl.col("policy") == p).get_column(metric).to_numpy())
        y = np.arange(1, x.size + 1) / x.size
        if x.size > CDF_POINTS:  # what a page can show: every 1/CDF_POINTS of the jobs, the ends
            keep = np.unique(np.r_[np.linspace(0, x.size - 1, CDF_POINTS).astype(int), x.size - 1])
            x, y = x[keep], y[keep]
        ax.step(
            np.maximum(x, floor),
            y,
            where="post",
            color=palette[p],
            label=p,
            linestyle=line_style(palette, p),
            linewidth=1.0,
        )
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.01)


def figures(
    comp: Comparison, jobs: pl.DataFrame, palette: dict[str, Any]
) -> dict[str, tuple[Plot, str]]:
    """The ratio forest plot and the per-job CDFs; ``jobs`` holds per-job ``policy``, ``wait``
    (in the comparison's time unit) and ``bounded_slowdown`` of the focus condition."""
    r, summ = _focus(comp)
    cfg = comp.cfg
    out: dict[str, tuple[Plot, str]] = {}
    ratios = rf.ratio_figure(
        summ,
        reference=cfg.reference,
        metrics=[m for m in cfg.metrics if m in MEAN_METRICS],
        palette=palette,
        caption=f"Whole-log means of each policy over {cfg.reference}'s, with "
        f"{100 * cfg.confidence:g}% block-bootstrap intervals (< 1: better than "
        f"{cfg.reference}).",
        what="Ratio of means",
        per="whole-log mean",
    )
    if ratios is not None:
        out["replay_ratios.png"] = ratios
    out["replay_cdf.png"] = (
        panels(
            lambda axes: plot_job_cdfs(r, jobs, palette, comp.time_unit, axes[0]),
            (12, 4.6),
            ncols=2,
            sharey=True,
        ),
        "Per-job distributions over the whole log: the fraction of jobs whose waiting time "
        "(left) or bounded slowdown (right) is at most x (jobs that did not wait sit at the "
        "left edge).",
    )
    return out


def blocks(comp: Comparison, images: Mapping[str, tuple[Plot, str]]) -> list[Block]:
    """The section: design, headline, the tables and figures."""
    conf = f"{100 * comp.cfg.confidence:g}%"
    out: list[Block] = [
        ("h2", "Which policy is better over the whole log?"),
        ("p", headline(comp)),
        ("note", design_text(comp)),
        ("table", main_table(comp)),
    ]
    if "replay_ratios.png" in images:
        out.append(("figure", ("replay_ratios.png", images["replay_ratios.png"][1])))
    out += [
        ("h3", "Per-job distributions"),
        ("table", distribution_table(comp, "wait")),
        ("table", distribution_table(comp, "bounded_slowdown")),
        (
            "p",
            f"Over the log's jobs: mean, median, 90th and 99th percentile and maximum of each "
            f"job's waiting time and bounded slowdown ({comp.tau}). Descriptive: percentiles "
            "and maxima of one replay are set by few jobs and get no interval.",
        ),
        ("figure", ("replay_cdf.png", images["replay_cdf.png"][1])),
        ("h2", "Objectives over the whole log"),
        ("table", objectives_table(comp)),
        (
            "p",
            f"The whole log's value of each metric; means over jobs with {conf} block-bootstrap "
            f"intervals; tails and counts without (bounded slowdown uses {comp.tau}).",
        ),
    ]
    return out
