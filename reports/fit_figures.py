"""Figures of the workload-fit report (axes-level, like :mod:`schedlab.reports.figures`).

Each ``plot_*`` draws on ``ax`` and returns it; the inputs are the tables of
:class:`schedlab.evaluation.fitting.workload.FitResult` and
:class:`schedlab.evaluation.fitting.check.CheckResult`.
Durations are in time steps (the axis labels say how long a step is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes

from schedlab.evaluation.fitting.gof import kaplan_meier, model_quantile
from schedlab.evaluation.fitting.observations import DurationData
from schedlab.loaders.workload.families import build
from schedlab.loaders.workload.model import WorkloadModel
from schedlab.reports.figures import plain_log_ticks

LINESTYLES = ("-", "--", "-.", ":")


def step_label(step_seconds: float | None) -> str:
    """``"steps of 1 s"`` or ``"steps"``."""
    return f"steps of {step_seconds:g} s" if step_seconds else "steps"


@dataclass(frozen=True, slots=True)
class DurationFits:
    """What both duration figures draw: the trace's durations and the families fitted to them."""

    data: DurationData
    """The observed durations (steps), right-censored ones flagged."""
    candidates: Sequence[tuple[str, Mapping[str, Any]]]
    """``(family, params)`` pairs, best first."""
    step_seconds: float | None = None
    """Length of a step, for the axis labels (None: plain steps)."""


def plot_duration_qq(fits: DurationFits, *, ax: Axes) -> Axes:
    """Model vs empirical (Kaplan–Meier) duration quantiles on log–log axes.

    Quantiles at 200 levels from 0.5% to 99.95%, model quantiles as generated (quantised,
    truncated at the longest duration).
    """
    data, candidates = fits.data, fits.candidates
    times, surv = kaplan_meier(data)
    p = np.unique(np.concatenate([np.linspace(0.005, 0.99, 150), 1 - np.geomspace(0.01, 5e-4, 50)]))
    cdf = 1 - surv
    idx = np.minimum(np.searchsorted(cdf, p - 1e-12), times.size - 1)
    emp = times[idx]
    top = int(data.value.max())
    for k, (family, params) in enumerate(candidates):
        model = model_quantile(build(family, params), top, p)
        ax.plot(emp, model, LINESTYLES[k % 4], marker=".", markersize=3, label=family)
    lim = (0.8, top * 1.3)
    ax.plot(lim, lim, color="grey", linewidth=0.8, label="y = x")
    ax.set(xscale="log", yscale="log", xlim=lim, ylim=lim)
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    unit = step_label(fits.step_seconds)
    ax.set_xlabel(f"Empirical duration quantile ({unit}, log scale)")
    ax.set_ylabel(f"Model duration quantile ({unit}, log scale)")
    ax.set_title("Duration QQ plot (levels 0.5%–99.95%)")
    ax.legend(fontsize="small")
    return ax


def plot_duration_ccdf(fits: DurationFits, *, ax: Axes) -> Axes:
    """Empirical survival function ``P(D > d)`` (Kaplan–Meier) with the candidates' overlaid."""
    data, candidates = fits.data, fits.candidates
    times, surv = kaplan_meier(data)
    keep = surv > 0
    ax.step(times[keep], surv[keep], where="post", color="black", linewidth=2, label="trace")
    grid = np.geomspace(1, data.value.max(), 300)
    for k, (family, params) in enumerate(candidates):
        ax.plot(grid, build(family, params).sf(grid), LINESTYLES[k % 4], label=family)
    floor = 0.5 / max(data.n, 1)
    ax.set(xscale="log", yscale="log", ylim=(floor, 1.5))
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel(f"Duration d ({step_label(fits.step_seconds)}, log scale)")
    ax.set_ylabel("P(duration > d) (log scale)")
    ax.set_title("Duration CCDF: trace vs fitted families")
    ax.legend(fontsize="small")
    return ax


def plot_arrival_profile(hourly: pl.DataFrame, model: WorkloadModel, *, ax: Axes) -> Axes:
    """Observed jobs per step in every hour of every day (dots) and the fitted rate (line)."""
    a = model.arrivals
    seen = hourly.filter(pl.col("rate") > 0)  # log scale: hours without arrivals not shown
    if seen.height:
        jitter = np.random.default_rng(0).uniform(-0.25, 0.25, seen.height)
        ax.scatter(
            seen["hour"].to_numpy() + 0.5 + jitter,
            seen["rate"].to_numpy(),
            s=8,
            color="grey",
            alpha=0.5,
            label="observed hour of one day",
        )
        mean_by_hour = (
            hourly.group_by("hour")
            .agg((pl.col("jobs").sum() / pl.col("exposure_steps").sum()).alias("r"))
            .sort("hour")
        )
        ax.plot(
            mean_by_hour["hour"] + 0.5,
            mean_by_hour["r"],
            "o",
            color="black",
            label="observed, all days",
        )
    hours = np.arange(25)
    rate = (
        np.append(a.profile, a.profile[0]) * a.rate_per_step
        if a.kind == "nhpp"
        else np.full(25, a.rate_per_step)
    )
    what = "batches × mean batch size" if a.batch_sizes else "jobs"
    ax.step(hours, rate, where="post", color="C1", linewidth=2, label=f"fitted {a.kind} ({what})")
    ax.set_xlim(0, 24)
    ax.set_xticks(range(0, 25, 3))
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("Hour of the day (trace clock)")
    ax.set_ylabel(f"Jobs per step ({step_label(model.time_step_seconds)})")
    ax.set_title("Arrival rate by hour of the day")
    ax.legend(fontsize="small")
    return ax


def plot_dispersion(dispersion: pl.DataFrame, *, ax: Axes) -> Axes:
    """Index of dispersion of job counts vs bin width; 1 is a Poisson process."""
    x = dispersion["scale_steps"].to_numpy()
    ax.plot(x, dispersion["dispersion"], "o-", label="variance / mean")
    if dispersion["dispersion_vs_rate"].is_not_nan().any():
        ax.plot(x, dispersion["dispersion_vs_rate"], "s--", label="vs fitted rate (Pearson)")
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set(xscale="log", yscale="log")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("Bin width (steps, log scale)")
    ax.set_ylabel("Index of dispersion (log scale)")
    ax.set_title("Overdispersion of arrival counts")
    ax.legend(fontsize="small")
    return ax


def plot_demands(table: pl.DataFrame, resources: Sequence[str], *, top: int = 12, ax: Axes) -> Axes:
    """Probability of the ``top`` most frequent demand vectors within each duration class."""
    res = list(resources)
    label = pl.concat_str([pl.format(f"{r}={{}}", pl.col(r).round(4)) for r in res], separator=", ")
    rows = table.with_columns(
        label.alias("demand"),
        pl.format("{}–{} steps", "lo", "hi").alias("duration class"),
    )
    order = rows.group_by("demand").agg(pl.col("count").sum()).sort("count", descending=True)
    keep = order["demand"].head(top).to_list()
    shown = (
        rows.filter(pl.col("demand").is_in(keep))
        .select("prob", "demand", "duration class")
        .to_pandas()
    )
    sns.barplot(
        shown,
        x="prob",
        y="demand",
        hue="duration class",
        order=keep,
        orient="h",
        palette="colorblind",
        ax=ax,
    )
    ax.set_xlabel("Probability within the duration class")
    ax.set_ylabel("")
    ax.set_title(f"The {len(keep)} most frequent demand vectors, by duration class")
    ax.legend(fontsize="small", title="duration class")
    return ax


def plot_check_ecdf(
    slowdowns: pl.DataFrame, *, palette: Mapping[str, Any], source: str, ax: Axes
) -> Axes:
    """ECDF of per-job slowdowns of one ``source`` (trace or synthetic), one line per policy."""
    rows = slowdowns.filter(pl.col("source") == source)
    for policy, color in palette.items():
        x = rows.filter(pl.col("policy") == policy)["slowdown"].to_numpy()
        if x.size:
            ax.ecdf(x, label=policy, color=color, linewidth=1.5)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("Job slowdown (log scale)")
    ax.set_ylabel("Fraction of jobs with slowdown ≤ x")
    ax.set_title(f"{source} jobsets")
    ax.legend(fontsize="small")
    return ax


def plot_check_means(summary: pl.DataFrame, *, ax: Axes) -> Axes:
    """Mean per-jobset slowdown with its 95% CI per policy, trace vs synthetic."""
    policies = summary.filter(pl.col("source") == "trace").sort("mean")["policy"].to_list()
    for k, source in enumerate(("trace", "synthetic")):
        part = summary.filter(pl.col("source") == source)
        part = part.join(pl.DataFrame({"policy": policies, "x": range(len(policies))}), on="policy")
        x = part["x"].to_numpy() + (k - 0.5) * 0.2
        mean = part["mean"].to_numpy()
        err = np.vstack([mean - part["ci_low"].to_numpy(), part["ci_high"].to_numpy() - mean])
        ax.errorbar(x, mean, yerr=err, fmt="os"[k], capsize=3, label=source, color=f"C{k}")
    ax.set_xticks(range(len(policies)), policies)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_ylabel("Mean per-jobset slowdown (log scale)")
    ax.set_title("Heuristics on trace windows vs fitted synthetic jobsets (95% CI)")
    ax.legend(fontsize="small")
    return ax
