"""Figures of the statistical comparison, seaborn axes-level style (style.md §14).

Like :mod:`schedlab.reports.figures`, every ``plot_*`` function draws on ``ax`` (the current
Axes when None) and returns it, takes tidy tables computed by :mod:`schedlab.evaluation`, and
colours policies with the palette of :func:`~schedlab.reports.palette.policy_palette`.
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
from matplotlib import MatplotlibDeprecationWarning
from matplotlib.axes import Axes

from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.reports.figures import (
    SHORT_METRIC,
    metric_label,
    plain_log_ticks,
)
from schedlab.reports.output import fit_text, is_narrow


def format_p(p: float | None) -> str:
    """``"<0.001"``, ``"0.042"``, ``"0.17"`` or ``"–"`` for a missing value."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def p_equals(p: float | None) -> str:
    """``"p < 0.001"``, ``"p = 0.042"`` or ``"p = –"``, for sentences."""
    text = format_p(p)
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def unjoined_sentence(unjoined: Sequence[tuple[str, str, float]], most: int = 6) -> str:
    """The caption's sentence naming the not significantly different pairs that no bar of a CD
    diagram joins (:func:`~schedlab.evaluation.analysis.unjoined`); ``""`` when there are none."""
    if not unjoined:
        return ""
    named = "; ".join(f"{a} and {b} (Holm {p_equals(p)})" for a, b, p in unjoined[:most])
    more = (
        f"; and {len(unjoined) - most} more pairs (see the pairwise table)"
        if len(unjoined) > most
        else ""
    )
    return (
        f" Not significantly different, but not adjacent in rank so no bar joins them: "
        f"{named}{more}."
    )


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
        ax.text(t, -0.2, str(t), ha="center", va="bottom", fontsize="medium")
    for x in np.arange(lo + 0.5, hi, 1.0):
        ax.vlines(x, 0, -0.07, color="black", linewidth=0.7)
    ax.text(
        (lo + hi) / 2, -0.62, "average rank (1 = best)", ha="center", va="bottom", fontsize="medium"
    )
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
            fontsize="medium",
            color="black",
        )
    if cd is not None and 0 < cd <= span:
        ax.hlines(-0.95, lo, lo + cd, color="black", linewidth=1.5)
        ax.vlines([lo, lo + cd], -1.0, -0.9, color="black", linewidth=1.5)
        ax.text(lo + cd / 2, -1.05, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize="medium")
    ax.set_ylim(base + 0.32 * max(n_left - 1, k - n_left - 1, 0) + 0.3, -1.45)
    return ax


def plot_pairwise_heatmap(
    pairs: pl.DataFrame,
    order: Sequence[str],
    *,
    alpha: float = DEFAULT_STATS.alpha,
    ax: Axes | None = None,
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
            text[i, j] = f"{sign * rb:+.2f}\np{format_p(p)}{'*' if sig else ''}"
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
            annot_kws={"fontsize": "small"},
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
    fit_text(ax, title=f"Pairwise Wilcoxon signed-rank, Holm-adjusted p (* p ≤ {alpha:g})")
    return ax


def plot_jobset_values(
    df: pl.DataFrame,
    *,
    metric: str,
    order: Sequence[str],
    palette: Mapping[str, Any],
    title: str = "",
    unit: str = "steps",
    per: str = "jobset",
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
    unit
        Unit of the times (``"steps"``, ``"s"``, ``"h"``...), for the label.
    per
        What a dot is (``"jobset"``, ``"user"``), for the labels.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    order = [p for p in order if p in set(df.get_column("policy").unique())]
    data = df.select("policy", metric).to_pandas()
    log = bool((df.get_column(metric) > 0).all())
    colors = {p: palette[p] for p in order}
    common: dict[str, Any] = {
        "data": data,
        "x": "policy",
        "y": metric,
        "hue": "policy",
        "order": order,
        "hue_order": order,
        "palette": colors,
    }
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
    rng = np.random.default_rng(0)  # seaborn's stripplot jitter has no seed: drawn here
    for x, policy in enumerate(order):
        y = data.loc[data["policy"] == policy, metric].to_numpy()
        jitter = rng.uniform(-0.25, 0.25, y.size)
        ax.scatter(x + jitter, y, s=2.5**2, alpha=0.7, color=colors[policy], linewidths=0)
    if log:
        plain_log_ticks(ax.yaxis)
    label = metric_label(metric, unit)
    fit_text(
        ax,
        title=title,
        xlabel="Policy (ordered by mean rank)" if per == "jobset" else "Policy",
        ylabel=f"Per-{per} {label[0].lower()}{label[1:]}" + ("\n(log scale)" if log else ""),
        short={"xlabel": "Policy", "ylabel": f"Per-{per} {SHORT_METRIC.get(metric, metric)}"},
        slant=True,
    )
    if len(order) > 6 and not is_narrow(ax):  # long names side by side would overlap
        ax.tick_params(axis="x", labelrotation=30)
        for text in ax.get_xticklabels():
            text.set_horizontalalignment("right")
            text.set_rotation_mode("anchor")
    return ax
