"""Figures of a report, in the style of seaborn's axes-level API (style.md §14).

Every ``plot_*`` function draws on ``ax`` (the current Axes when None) and returns it; none calls
``plt.show()`` or changes global style. Colours come from :func:`policy_palette` so a policy has
the same colour in every figure. The functions take the tidy tables of
:mod:`schedlab.evaluation` (polars DataFrames) and draw; they compute no statistics beyond
selecting rows.
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

from schedlab.evaluation.metrics import SHORT_METRIC, TIME_METRICS, metric_name
from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.reports.output import fit_text, is_narrow, place_legend
from schedlab.reports.palette import MARKERS, line_style

BOX_COLUMNS = ("policy", "bucket", "slowdown")


def short_metric(metric: str, unit: str) -> str:
    """:data:`SHORT_METRIC` of ``metric``, with the time ``unit`` (``"s"`` or ``"steps"``) for a
    time metric (:data:`~schedlab.evaluation.metrics.TIME_METRICS`): ``"waiting time (s)"``."""
    short = SHORT_METRIC.get(metric, metric)
    return f"{short} ({unit})" if metric in TIME_METRICS else short


def metric_label(metric: str, unit: str = "steps") -> str:
    """``"Average job waiting time (h)"``: a metric's name with its time unit, capitalised."""
    name = metric_name(metric, unit)
    return name[:1].upper() + name[1:]


def format_load(load: float | None) -> str:
    """Offered load as a percentage label, e.g. ``1.9 -> "190%"``; None -> ``"n/a"``."""
    return "n/a" if load is None else f"{round(100 * load, 1):g}%"


def fmt_load(load: float | None) -> str:
    """Offered load as a percentage; ``"all jobsets"`` for None."""
    return "all jobsets" if load is None else format_load(load)


def bucket_label(name: str, bounds: tuple[float, float]) -> str:
    """``"short (1–3 steps)"``; a one-value bucket reads ``"medium (3 steps)"``. Float bounds
    are a trace's run times in seconds (:func:`~schedlab.evaluation.metrics.length_buckets`):
    ``"short (0–600 s)"``."""
    lo, hi = bounds
    if isinstance(lo, float):
        return (
            f"{name} ({seconds_text(lo)})"
            if lo == hi
            else (f"{name} ({seconds_text(lo)}–{seconds_text(hi)})")
        )
    return f"{name} ({lo} step{'s' * (lo != 1)})" if lo == hi else f"{name} ({lo}–{hi} steps)"


def seconds_text(s: float) -> str:
    """A run time in the unit that reads: ``"95 s"``, ``"1.5 h"``, ``"2.5 d"``."""
    for unit, length, least in (("d", 86_400.0, 2.0), ("h", 3_600.0, 1.0), ("min", 60.0, 2.0)):
        if s >= least * length:
            return f"{s / length:.3g} {unit}"
    return f"{s:.3g} s"


def _default_load(df: pl.DataFrame, load: float | None) -> tuple[pl.DataFrame, str]:
    """Rows at ``load`` (default: the highest non-null load) and a phrase for the title."""
    if "load" not in df.columns or df.get_column("load").null_count() == df.height:
        return df, "with no offered load recorded"
    if load is None:
        load = float(df.get_column("load").max())  # type: ignore[arg-type]
    picked = df.filter(pl.col("load").is_close(load))
    if picked.height == 0:
        have = sorted(df.get_column("load").drop_nulls().unique().to_list())
        msg = f"no rows at load {load}; loads present: {have}"
        raise ValueError(msg)
    return picked, f"at offered load {format_load(load)}"


def _present(palette: Mapping[str, Any], df: pl.DataFrame) -> list[str]:
    """Policies of ``palette`` found in ``df``, in palette order."""
    have = set(df.get_column("policy").unique().to_list())
    return [p for p in palette if p in have]


class PlainLogLocator(ticker.LogLocator):
    """Ticks of a log axis at 1, 10, 100, ..., with 2 and 5 in between over short ranges.

    Over more than :attr:`DECADES` decades only the powers of ten are ticked; over less than one
    decade, 1.5, 2, 3, 5 and 7 are added, so a short axis still has a few ticks.
    """

    DECADES = 2.5

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
        decades = math.log10(hi / lo) if hi > lo else 0.0
        if decades > self.DECADES:
            self._subs = np.array([1.0])
        elif decades > 0.8:
            self._subs = np.array([1.0, 2.0, 5.0])
        else:
            self._subs = np.array([1.0, 1.5, 2.0, 3.0, 5.0, 7.0])
        return super().tick_values(vmin, vmax)


def plain_number(value: float, _pos: object = None) -> str:
    """A tick label: ``0.5``, ``10``, ``1000``; powers of ten from 10⁶ as ``10^6`` (mathtext)."""
    if value <= 0:
        return f"{value:g}"
    if 1e-4 <= value < 1e6:
        return f"{value:.10g}"
    return f"$10^{{{round(math.log10(value))}}}$"


def plain_log_ticks(axis: Any) -> None:
    """Label a log axis with plain numbers (1, 2, 5, 10, ..., 100, 1000) instead of 10^k."""
    axis.set_major_locator(PlainLogLocator(base=10))
    axis.set_major_formatter(ticker.FuncFormatter(plain_number))
    axis.set_minor_formatter(ticker.NullFormatter())


def band_lines(
    ax: Axes,
    rows: pl.DataFrame,
    palette: Mapping[str, Any],
    *,
    x: str,
    y: tuple[str, str, str],
) -> None:
    """One line with markers and a shaded interval per policy of ``palette`` found in ``rows``.

    ``x`` is the column on the x axis (a fraction shown in percent when it is ``"load"``);
    ``y`` names the columns of the value and of the interval's low and high ends.
    """
    index = {p: k for k, p in enumerate(palette)}  # a policy keeps its marker in every plot
    for policy in _present(palette, rows):
        k = index[policy]
        r = rows.filter(pl.col("policy") == policy).sort(x)
        xs = r.get_column(x).to_numpy() * (100 if x == "load" else 1)
        value, low, high = (r.get_column(c).to_numpy() for c in y)
        color = palette[policy]
        ax.fill_between(xs, low, high, color=color, alpha=0.2, linewidth=0)
        ax.plot(xs, value, marker=MARKERS[k % len(MARKERS)], color=color, label=policy)


def load_ticks(ax: Axes, loads: np.ndarray) -> None:
    """Offered loads (fractions) as percent ticks of the x axis, when at most 12."""
    pct = np.unique(100 * loads)
    if pct.size <= 12:
        every = 2 if is_narrow(ax) and pct.size > 6 else 1  # a paper column fits ~6 labels
        ax.set_xticks(
            pct, [format_load(v / 100) if i % every == 0 else "" for i, v in enumerate(pct)]
        )
    ax.set_xlabel("Offered load (%)")


def plot_load_sweep(
    summary: pl.DataFrame,
    *,
    palette: Mapping[str, Any],
    metric: str = "slowdown",
    confidence: float = DEFAULT_STATS.confidence,
    log: bool = True,
    legend: bool = True,
    unit: str = "steps",
    ax: Axes | None = None,
) -> Axes:
    """Mean of a per-jobset metric against offered load, one line per policy, with CI bands.

    The shape of DeepRM's Figure 4 (Mao et al. 2016): x is the offered load in percent, y the mean
    over jobsets of the per-jobset average, the band the bootstrap confidence interval. On a log y
    axis (the default, when every value is > 0) the low loads, where every policy is close to 1,
    stay readable next to the high ones.

    Parameters
    ----------
    summary
        Output of :func:`~schedlab.evaluation.stats.summarize` grouped by ``policy`` and
        ``load``: columns ``policy``, ``load`` (fraction), ``metric``, ``mean``, ``ci_low``,
        ``ci_high``. Rows with a null load are ignored.
    palette
        Policy -> colour; also fixes the legend order. Policies missing from it are not drawn.
    metric
        Which metric to draw (``"slowdown"``, ``"completion"``, ``"wait"``).
    confidence
        Confidence level of the intervals, for the axis label only.
    log
        Logarithmic y axis (ignored when a value is <= 0).
    legend
        Draw the legend (beside the plot, or below it on a narrow figure).
    unit
        Unit of the times (``"steps"``, ``"s"``, ``"h"``...), for the label.
    ax
        Axes to draw on; the current Axes if None.

    Raises
    ------
    ValueError
        If ``summary`` has no row of ``metric`` with an offered load.
    """
    ax = ax if ax is not None else plt.gca()
    rows = summary.filter((pl.col("metric") == metric) & pl.col("load").is_not_null())
    if rows.height == 0:
        msg = f"no {metric!r} rows with an offered load to draw a load sweep"
        raise ValueError(msg)
    band_lines(ax, rows, palette, x="load", y=("mean", "ci_low", "ci_high"))
    load_ticks(ax, rows.get_column("load").to_numpy())
    label = metric_label(metric, unit)
    scale = ""
    if log and bool((rows.get_column("ci_low") > 0).all()):
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        scale = ", log scale"
    short = SHORT_METRIC.get(metric, metric).capitalize()
    fit_text(
        ax,
        title=f"{label.split(' (')[0]} vs offered load",
        ylabel=f"{label}\n(mean over jobsets, {100 * confidence:g}% CI{scale})",
        short={"ylabel": short + (" (log)" if scale else "")},
    )
    if legend:
        place_legend(ax)
    return ax


def plot_length_boxplot(
    per_length: pl.DataFrame,
    *,
    palette: Mapping[str, Any],
    load: float | None = None,
    buckets: Mapping[str, tuple[float, float]] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Box plot of per-jobset average slowdown by job-length bucket (x) and policy (hue).

    Parameters
    ----------
    per_length
        Output of :func:`~schedlab.evaluation.metrics.per_length`: one row per policy × jobset ×
        bucket with ``slowdown`` (mean over the jobset's jobs in that bucket).
    palette
        Policy -> colour; also fixes the hue order.
    load
        Offered load (fraction) to show; default the highest present. Results without a load
        use every jobset. The title names the load.
    buckets
        Bucket name -> inclusive duration range (steps), for tick labels and order; default the
        bucket order of the ``bucket`` column.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    rows, where = _default_load(per_length, load)
    order = list(buckets) if buckets else rows.get_column("bucket").unique().sort().to_list()
    present = set(rows.get_column("bucket").cast(pl.String).unique().to_list())
    order = [b for b in order if b in present]
    hue_order = _present(palette, rows)
    data = rows.select(BOX_COLUMNS).with_columns(pl.col("bucket").cast(pl.String)).to_pandas()
    with warnings.catch_warnings():
        # seaborn 0.13.2 passes ``vert=`` to Axes.bxp, deprecated since matplotlib 3.11.
        warnings.filterwarnings("ignore", "vert: bool", MatplotlibDeprecationWarning)
        sns.boxplot(
            data=data,
            x="bucket",
            y="slowdown",
            hue="policy",
            order=order,
            hue_order=hue_order,
            palette={p: palette[p] for p in hue_order},
            log_scale=True,
            fliersize=2,
            linewidth=0.8,
            ax=ax,
        )
    if buckets:
        ax.set_xticks(range(len(order)), [bucket_label(b, buckets[b]) for b in order])
    plain_log_ticks(ax.yaxis)
    n = rows.select(pl.struct("seed", "jobset").n_unique()).item()
    fit_text(
        ax,
        title=f"Slowdown by job length {where} ({n} jobsets)",
        xlabel="Job length (duration bucket)",
        ylabel="Per-jobset average slowdown (log scale)",
        short={"ylabel": "Per-jobset slowdown", "xlabel": "Job length"},
        slant=len(order) > 2,
    )
    place_legend(ax)
    return ax


def plot_slowdown_cdf(
    results_table: pl.DataFrame,
    *,
    palette: Mapping[str, Any],
    load: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Empirical CDF of per-job slowdown, one curve per policy, at one offered load.

    Descriptive: it pools the jobs of every jobset at that load (the statistics of the report
    are over jobsets, not this curve).

    Parameters
    ----------
    results_table
        Per-job results (:attr:`schedlab.results.Results.table`): ``policy``, ``load``,
        ``slowdown`` (dimensionless, >= 1).
    palette
        Policy -> colour; also fixes the legend order.
    load
        Offered load (fraction) to show; default the highest present. Results without a load
        use every job. The title names the load.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    rows, where = _default_load(results_table, load)
    for policy in _present(palette, rows):
        x = rows.filter(pl.col("policy") == policy).get_column("slowdown").to_numpy()
        values, counts = np.unique(x, return_counts=True)  # one step per distinct value
        ax.step(
            np.r_[values[:1], values],
            np.r_[0.0, np.cumsum(counts) / x.size],
            where="post",
            label=policy,
            color=palette[policy],
            linestyle=line_style(palette, policy),
        )
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.01)
    fit_text(
        ax,
        xlabel="Job slowdown (completion time / duration, log scale)",
        ylabel="Fraction of jobs with slowdown ≤ x",
        short={"xlabel": "Job slowdown (log scale)", "ylabel": "Fraction of jobs"},
    )
    n_jobs = rows.filter(pl.col("policy") == rows.get_column("policy").first()).height
    fit_text(ax, title=f"Per-job slowdown CDF {where} ({n_jobs:,} jobs per policy)")
    place_legend(ax)
    return ax
