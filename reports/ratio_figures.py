"""Figures of ratios to the reference policy: per metric, along the load sweep, and a policy ×
load grid (seaborn axes-level style, :mod:`schedlab.reports.stats_figures`).

A ratio is the geometric mean over jobsets of a policy's per-jobset value over the
reference's on the same jobset (:mod:`schedlab.evaluation.compare`); < 1 is better. Ratio axes
are logarithmic, so 0.5 and 2 are equally far from 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib import ticker
from matplotlib.axes import Axes

from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.reports.figures import SHORT_METRIC, band_lines, format_load, load_ticks
from schedlab.reports.output import Plot, figure, fit_text, is_narrow, place_legend

RATIO_TICK_LEVELS = (
    (1.0,),
    (0.5, 2.0, 0.2, 5.0, 0.1, 10.0, 20.0, 50.0, 100.0),
    (0.8, 1.25, 0.67, 1.5, 3.0, 4.0, 0.33, 0.25, 2.5, 7.0),
    (0.9, 1.1, 0.95, 1.05),
)
"""Candidate ticks of a ratio axis, coarse to fine, nearest to 1 first within a level."""


def ratio_ticks(ax: Axes, max_ticks: int = 8) -> None:
    """Label a log-scale ratio axis with plain numbers around 1 (at most ``max_ticks``)."""
    lo, hi = ax.get_ylim()
    gap = 0.06 * math.log(hi / lo)  # ticks closer than this (in log units) would overlap
    ticks: list[float] = []
    for level in RATIO_TICK_LEVELS:
        for t in level:
            near = any(abs(math.log(t / u)) < gap for u in ticks)
            if lo <= t <= hi and len(ticks) < max_ticks and not near:
                ticks.append(t)
    ax.yaxis.set_major_locator(ticker.FixedLocator(sorted(ticks)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_ylim(lo, hi)


def plot_ratio_to_reference(
    summary: pl.DataFrame,
    *,
    reference: str,
    metrics: Sequence[str],
    palette: Mapping[str, Any],
    what: str = "Geometric-mean ratio",
    per: str = "per-jobset average",
    ax: Axes | None = None,
) -> Axes:
    """Geometric-mean ratio to the reference per metric (x) and policy (colour), with CIs.

    Parameters
    ----------
    summary
        One condition of :func:`~schedlab.evaluation.analysis.policy_summary`: ``policy``,
        ``metric``, ``ratio``, ``ratio_low``, ``ratio_high``.
    reference
        The reference policy (drawn as the line at 1).
    metrics
        Metrics on the x axis, in order.
    palette
        Policy -> colour; also the order of the policies within a metric.
    what, per
        What the ratio is and of what, for the axis labels (a whole replay's is a ratio of
        the whole log's means).
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    rows = summary.filter(pl.col("ratio").is_not_null() & pl.col("metric").is_in(list(metrics)))
    present = set(rows.get_column("policy").unique())
    pols = [p for p in palette if p in present]
    width = 0.8 / max(len(pols), 1)
    for j, p in enumerate(pols):
        r = {
            m: (v, lo, hi)
            for m, v, lo, hi in rows.filter(pl.col("policy") == p)
            .select("metric", "ratio", "ratio_low", "ratio_high")
            .rows()
        }
        xs = [i + (j - (len(pols) - 1) / 2) * width for i, m in enumerate(metrics) if m in r]
        v = np.array([r[m] for m in metrics if m in r])
        if v.size == 0:
            continue
        ax.errorbar(
            xs,
            v[:, 0],
            yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]],
            fmt="o",
            color=palette[p],
            markersize=5,
            capsize=3,
            label=p,
        )
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label=f"{reference} (reference)")
    ax.set_yscale("log")
    ratio_ticks(ax)
    ax.set_xticks(range(len(metrics)), [SHORT_METRIC.get(m, m) for m in metrics])
    ax.set_xlim(-0.5, len(metrics) - 0.5)
    fit_text(
        ax,
        xlabel=f"Metric ({per}; lower is better)",
        ylabel=f"{what} to {reference}\n(log scale; < 1: better)",
        short={"xlabel": "Metric", "ylabel": f"Ratio to {reference}"},
        slant=True,
    )
    place_legend(ax)
    return ax


def ratio_figure(
    summary: pl.DataFrame,
    *,
    reference: str,
    metrics: Sequence[str],
    palette: Mapping[str, Any],
    caption: str,
    **labels: str,
) -> tuple[Plot, str] | None:
    """A report's figure of :func:`plot_ratio_to_reference` (``labels``: its ``what`` and
    ``per``) with its caption; ``None`` where ``summary`` has no ratio."""
    if not summary.get_column("ratio").drop_nulls().len():
        return None
    draw = figure(
        lambda ax: plot_ratio_to_reference(
            summary, reference=reference, metrics=metrics, palette=palette, ax=ax, **labels
        ),
        (9, 4.5),
        paper=(3.3, 3.4),
    )
    return draw, caption


def plot_ratio_sweep(
    summary: pl.DataFrame,
    *,
    reference: str,
    palette: Mapping[str, Any],
    metric: str = "slowdown",
    confidence: float = DEFAULT_STATS.confidence,
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Geometric-mean ratio to the reference against offered load, with paired CI bands.

    Parameters
    ----------
    summary
        :func:`~schedlab.evaluation.analysis.policy_summary` (one workload): ``policy``,
        ``load``, ``metric``, ``ratio``, ``ratio_low``, ``ratio_high``.
    reference
        The reference policy (the line at 1).
    palette
        Policy -> colour; also the legend order.
    metric
        Which metric's ratio to draw.
    confidence
        Confidence level of the intervals, for the axis label only.
    legend
        Draw the legend.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    rows = summary.filter(
        (pl.col("metric") == metric) & pl.col("load").is_not_null() & pl.col("ratio").is_not_null()
    )
    band_lines(ax, rows, palette, x="load", y=("ratio", "ratio_low", "ratio_high"))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label=f"{reference} (reference)")
    load_ticks(ax, summary.filter(pl.col("load").is_not_null()).get_column("load").to_numpy())
    ax.set_yscale("log")
    ratio_ticks(ax)
    fit_text(
        ax,
        ylabel=f"Ratio to {reference}\n(geometric mean, {100 * confidence:g}% CI, "
        "log; < 1: better)",
        short={"ylabel": f"Ratio to {reference} (log)"},
    )
    if legend:
        place_legend(ax)
    return ax


def plot_ratio_grid(
    ratios: pl.DataFrame,
    *,
    reference: str,
    order: Sequence[str],
    alpha: float = DEFAULT_STATS.alpha,
    ax: Axes | None = None,
) -> Axes:
    """Policy × load grid of ratios to the reference: colour = ratio, text = ratio and markers.

    Blue cells are better than the reference, red worse (log colour scale, saturating at 1/4
    and 4); ``*`` marks a Holm-significant difference, ``†`` a cell where the unadjusted CI and
    the adjusted test disagree; non-significant ratios are printed in grey.

    Parameters
    ----------
    ratios
        :func:`~schedlab.evaluation.overview.ratio_overview` of one workload: ``load``,
        ``policy``, ``ratio``, ``significant``, ``disagree``.
    reference
        The reference policy (for the colour-bar label).
    order
        Policies, top to bottom.
    alpha
        Significance level, for the title.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    loads = ratios.get_column("load").unique().sort(nulls_last=True).to_list()
    pols = [p for p in order if p in set(ratios.get_column("policy").to_list())]
    grid = np.full((len(pols), len(loads)), np.nan)
    for r in ratios.iter_rows(named=True):
        if r["ratio"] is None or r["policy"] not in pols:
            continue
        i, j = pols.index(r["policy"]), loads.index(r["load"])
        grid[i, j] = r["ratio"]
        mark = ("*" if r["significant"] else "") + ("†" if r["disagree"] else "")
        ax.text(
            j,
            i,
            f"{r['ratio']:.2f}{mark}",
            ha="center",
            va="center",
            fontsize="small",
            color="black" if r["significant"] else "0.45",
        )
    mesh = ax.imshow(np.log2(grid), cmap="RdBu_r", vmin=-2, vmax=2, aspect="auto")
    bar = ax.figure.colorbar(mesh, ax=ax, shrink=0.9, pad=0.02)
    bar.set_ticks([-2, -1, 0, 1, 2], labels=["≤ 0.25", "0.5", "1", "2", "≥ 4"])
    bar.set_label(f"ratio to {reference} (< 1: better)")
    ax.set_xticks(range(len(loads)), [format_load(x) if x is not None else "all" for x in loads])
    ax.set_yticks(range(len(pols)), pols)
    ax.set_xticks(np.arange(len(loads) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(pols) + 1) - 0.5, minor=True)
    ax.grid(False)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fit_text(
        ax,
        title=f"Ratio to {reference} (* Holm-adjusted p ≤ {alpha:g}; † CI and test disagree)",
        xlabel="Offered load",
        slant=is_narrow(ax) and len(loads) > 6,
    )
    return ax
