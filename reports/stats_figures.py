"""Figures of the statistical comparison, seaborn axes-level style (style.md §14).

Like :mod:`schedlab.reports.figures`, every ``plot_*`` function draws on ``ax`` (the current
Axes when None) and returns it, takes tidy tables computed by :mod:`schedlab.evaluation`, and
colours policies with the palette of :func:`~schedlab.reports.figures.policy_palette`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib import MatplotlibDeprecationWarning, ticker
from matplotlib.axes import Axes

from schedlab.reports.figures import METRIC_LABELS, _plain_log_ticks, _to_pandas

SHORT_METRIC = {
    "slowdown": "slowdown",
    "completion": "completion time",
    "wait": "waiting time",
    "bounded_slowdown": "bounded slowdown",
    "p95_slowdown": "p95 slowdown",
    "max_slowdown": "max slowdown",
}


def format_p(p: float | None) -> str:
    """``"<0.001"``, ``"0.042"``, ``"0.17"`` or ``"–"`` for a missing value."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def _sides(ranks: Sequence[float]) -> tuple[int, float, float]:
    """Policies labelled on the left (those ranked in the better half) and the axis range."""
    lo, hi = 1.0, float(max(len(ranks), 2))
    return sum(r <= (lo + hi) / 2 for r in ranks), lo, hi


def cd_figsize(mean_ranks: Mapping[str, float], n_cliques: int) -> tuple[float, float]:
    """Figure size (inches) that fits a CD diagram of ``mean_ranks`` and ``n_cliques`` bars."""
    n_left, _, _ = _sides(list(mean_ranks.values()))
    rows = max(n_left, len(mean_ranks) - n_left)
    return 9.0, 1.6 + 0.3 * n_cliques + 0.32 * rows


def plot_cd_diagram(
    mean_ranks: Mapping[str, float],
    cliques: Sequence[Sequence[str]],
    *,
    palette: Mapping[str, Any],
    cd: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Critical-difference diagram (Demšar 2006): average ranks, bars joining equivalent groups.

    Parameters
    ----------
    mean_ranks
        Policy -> average rank over jobsets (1 = best).
    cliques
        Groups of policies not significantly different (bars below the axis), e.g. from
        :func:`~schedlab.evaluation.analysis.cliques`.
    palette
        Policy -> colour.
    cd
        A critical difference (average-rank units) drawn as a scale bar above the axis, or None.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    items = sorted(mean_ranks.items(), key=lambda kv: kv[1])
    k = len(items)
    n_left, lo, hi = _sides([r for _, r in items])
    span = hi - lo
    ax.set_xlim(lo - 0.42 * span, hi + 0.42 * span)
    ax.axis("off")
    ax.hlines(0, lo, hi, color="black", linewidth=1)
    for t in range(1, int(hi) + 1):
        ax.vlines(t, 0, -0.12, color="black", linewidth=1)
        ax.text(t, -0.2, str(t), ha="center", va="bottom", fontsize=9)
    for x in np.arange(lo + 0.5, hi, 1.0):
        ax.vlines(x, 0, -0.07, color="black", linewidth=0.7)
    ax.text((lo + hi) / 2, -0.62, "average rank (1 = best)", ha="center", va="bottom", fontsize=9)
    for c, group in enumerate(cliques):
        r = [mean_ranks[p] for p in group]
        y = 0.25 + 0.3 * c
        ax.hlines(y, min(r) - 0.03, max(r) + 0.03, color="black", linewidth=3.5)
    base = 0.45 + 0.3 * len(cliques)
    for i, (name, rank) in enumerate(items):
        left = i < n_left
        row = i if left else k - 1 - i
        y = base + 0.32 * row
        x_text = lo - 0.05 * span if left else hi + 0.05 * span
        color = palette.get(name, "black")
        ax.vlines(rank, 0, y, color=color, linewidth=1.2)
        ax.hlines(y, min(rank, x_text), max(rank, x_text), color=color, linewidth=1.2)
        label = f"{name} ({rank:.2f})" if left else f"({rank:.2f}) {name}"
        ax.text(
            x_text + (-0.02 if left else 0.02) * span,
            y,
            label,
            ha="right" if left else "left",
            va="center",
            fontsize=9,
            color="black",
        )
    if cd is not None and 0 < cd <= span:
        ax.hlines(-0.95, lo, lo + cd, color="black", linewidth=1.5)
        ax.vlines([lo, lo + cd], -1.0, -0.9, color="black", linewidth=1.5)
        ax.text(lo + cd / 2, -1.05, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    ax.set_ylim(base + 0.32 * max(n_left - 1, k - n_left - 1, 0) + 0.3, -1.45)
    return ax


def plot_pairwise_heatmap(
    pairs: pl.DataFrame, order: Sequence[str], *, alpha: float = 0.05, ax: Axes | None = None
) -> Axes:
    """Heatmap of rank-biserial effect sizes (row vs column) with Holm-adjusted p-values.

    Parameters
    ----------
    pairs
        One condition of :func:`~schedlab.evaluation.analysis.pairwise`: ``a``, ``b``,
        ``rank_biserial`` (> 0: a better), ``p_holm``, ``significant``.
    order
        Policies, in the order of rows and columns (e.g. by mean rank).
    alpha
        Significance level, for the caption-like colour-bar label.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    k = len(order)
    idx = {p: i for i, p in enumerate(order)}
    r = np.full((k, k), np.nan)
    text = np.full((k, k), "", dtype=object)
    for a, b, rb, p, sig in pairs.select("a", "b", "rank_biserial", "p_holm", "significant").rows():
        if a not in idx or b not in idx:
            continue
        for (i, j), sign in (((idx[a], idx[b]), 1.0), ((idx[b], idx[a]), -1.0)):
            r[i, j] = sign * rb
            text[i, j] = f"{sign * rb:+.2f}\np {format_p(p)}{' *' if sig else ''}"
    with warnings.catch_warnings():
        # seaborn 0.13.2 calls Colormap.set_bad, pending deprecation since matplotlib 3.11.
        warnings.filterwarnings("ignore", "The set_bad function", PendingDeprecationWarning)
        sns.heatmap(
            r,
            mask=np.isnan(r),
            vmin=-1,
            vmax=1,
            center=0,
            cmap="RdBu",
            annot=text,
            fmt="",
            annot_kws={"fontsize": 8},
            xticklabels=list(order),
            yticklabels=list(order),
            linewidths=0.5,
            linecolor="white",
            square=False,
            ax=ax,
            cbar_kws={"label": "rank-biserial r (> 0: row better)"},
        )
    ax.grid(False)
    ax.set_xlabel("Column policy")
    ax.set_ylabel("Row policy")
    ax.tick_params(axis="x", rotation=0)
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(f"Pairwise Wilcoxon signed-rank, Holm-adjusted p (* p ≤ {alpha:g})")
    return ax


def plot_jobset_values(
    df: pl.DataFrame,
    *,
    metric: str,
    order: Sequence[str],
    palette: Mapping[str, Any],
    title: str = "",
    ax: Axes | None = None,
) -> Axes:
    """Box plot with every jobset as a dot: per-jobset ``metric`` of each policy.

    Parameters
    ----------
    df
        Per-jobset rows of one condition (``policy`` and ``metric`` columns).
    metric
        Column to draw; the y axis is logarithmic when every value is > 0.
    order
        Policies on the x axis, left to right.
    palette
        Policy -> colour.
    title
        Axes title, e.g. naming the load and the number of jobsets.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    order = [p for p in order if p in set(df.get_column("policy").unique())]
    data = _to_pandas(df, ("policy", metric))
    log = bool((df.get_column(metric) > 0).all())
    colors = {p: palette[p] for p in order}
    common: dict[str, Any] = {
        "data": data, "x": "policy", "y": metric, "hue": "policy", "order": order,
        "hue_order": order, "palette": colors,
    }  # fmt: skip
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "vert: bool", MatplotlibDeprecationWarning)
        sns.boxplot(
            **common,
            showfliers=False,
            linewidth=0.8,
            boxprops={"alpha": 0.45},
            log_scale=log,
            legend=False,
            ax=ax,
        )
    sns.stripplot(
        **common,
        size=2.5,
        alpha=0.7,
        jitter=0.25,
        legend=False,
        ax=ax,
    )
    if log:
        _plain_log_ticks(ax.yaxis)
    label = METRIC_LABELS.get(metric, metric.replace("_", " "))
    ax.set_xlabel("Policy (ordered by mean rank)")
    ax.set_ylabel(f"Per-jobset {label[0].lower()}{label[1:]}" + (" (log scale)" if log else ""))
    ax.set_title(title)
    return ax


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
    ax.set_xlabel("Metric (per-jobset average; lower is better)")
    ax.set_ylabel(f"Geometric-mean ratio to {reference}\n(log scale; < 1: better)")
    ax.legend(title="Policy", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def plot_learning_curve(
    curve: pl.DataFrame,
    baselines: Mapping[str, float],
    *,
    policy: str,
    palette: Mapping[str, Any],
    ax: Axes | None = None,
) -> Axes:
    """Training curve of a learned policy with the heuristics' values, in the report's colours.

    Parameters
    ----------
    curve
        ``curve.csv`` of a training run: ``iteration``, ``val_slowdown`` (greedy policy on the
        run's validation jobsets; nulls skipped) and optionally ``train_slowdown``.
    baselines
        Heuristic name -> its average slowdown on the same validation jobsets (``initial``, the
        untrained network, is skipped).
    policy
        The learned policy's name in the report (its colour).
    palette
        Policy -> colour; heuristics not in it are drawn in grey.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    color = palette.get(policy, "black")
    if "train_slowdown" in curve.columns:
        ax.plot(
            curve["iteration"],
            curve["train_slowdown"],
            color=color,
            alpha=0.3,
            lw=1,
            label=f"{policy} (sampled, training jobsets)",
        )
    val = curve.filter(pl.col("val_slowdown").is_not_null())
    ax.plot(
        val["iteration"],
        val["val_slowdown"],
        color=color,
        marker="o",
        markersize=3,
        label=f"{policy} (greedy, validation jobsets)",
    )
    for name, value in baselines.items():
        if name != "initial":
            ax.axhline(value, color=palette.get(name, "0.5"), ls="--", lw=1.2, label=name)
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_xlabel("Training iteration")
    ax.set_ylabel("Average job slowdown")
    ax.legend(title="Policy", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax
