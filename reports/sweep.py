"""The report of a training sweep (``schedlab train ... --seeds``): per grid point, the final
(best) and last validation values as mean and confidence interval over the seeds, and every seed's
learning curve overlaid with the mean curve of its point.

The tables come from :mod:`schedlab.evaluation.sweep_tables` (``runs.csv``, ``summary.csv``);
this module only formats and draws, in the colours of
:func:`~schedlab.reports.palette.policy_palette` (heuristics keep their colours of every other
report).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl
from matplotlib import ticker
from matplotlib.axes import Axes

from schedlab.policies.training import Selection
from schedlab.reports.content import Block, Table
from schedlab.reports.learning import plot_baselines
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import FigureOptions, figure, place_legend
from schedlab.reports.palette import policy_palette
from schedlab.reports.tables import ci, num

METRIC_LABELS = {
    "val_slowdown": "Average job slowdown",
    "val_completion": "Average completion time",
    "val_s_log": "Mean S_log (higher is better)",
}
"""Axis label of each validation metric runs are selected on."""


def plot_sweep_curves(
    curves: pl.DataFrame,
    baselines: Mapping[str, float],
    *,
    palette: Mapping[str, Any],
    ylabel: str = METRIC_LABELS["val_slowdown"],
    xlabel: str = "Training iteration",
    ax: Axes | None = None,
) -> Axes:
    """Every seed's validation curve (thin) and each grid point's mean curve (thick).

    Parameters
    ----------
    curves
        ``variant`` (the grid point), ``run``, ``iteration``, ``value``: one curve per run
        (:func:`~schedlab.evaluation.sweep_tables.sweep_curves`).
    baselines
        Heuristic -> its value on the same validation jobsets (horizontal lines); {} for none.
    palette
        Point and heuristic -> colour.
    ylabel, xlabel
        The metric's and the training step's axis labels.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    for (point,), df in curves.group_by("variant", maintain_order=True):
        color = palette.get(point, "black")
        runs = df.partition_by("run", maintain_order=True)
        for run in runs:
            ax.plot(run["iteration"], run["value"], color=color, lw=0.8, alpha=0.35)
        mean = df.group_by("iteration").agg(pl.col("value").mean()).sort("iteration")
        ax.plot(
            mean["iteration"],
            mean["value"],
            color=color,
            lw=2.2,
            label=f"{point + ': ' if point else ''}mean of {len(runs)} seeds",
        )
    plot_baselines(baselines, palette, lw=1.2, ax=ax)
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    place_legend(ax, title=None)
    return ax


SUMMARY_COLUMNS = {
    "final": "final (mean [95% CI])",
    "last": "last (mean [95% CI])",
    "it_95": "it 95%",
    "s_95": "s 95%",
    "it_target": "it to sjf",
    "s_target": "s to sjf",
}
"""Columns of the summary table over seeds (``summary.csv`` column -> header)."""


def summary_rows(summary: pl.DataFrame, baselines: pl.DataFrame) -> Table:
    """Point, seeds, ``mean [low, high]`` of the final and last validation values, of the
    iterations and seconds to 95% of the improvement and to the SJF level (with how many seeds
    got there), and the heuristics' means."""
    heuristics = list(dict.fromkeys(baselines["policy"].to_list()))
    rows = []
    for r in summary.iter_rows(named=True):
        mine = baselines.filter(pl.col("point") == r["point"])
        values = dict(zip(mine["policy"], mine["value"], strict=True))
        rows.append(
            [
                r["point"] or "–",
                str(r["seeds"]),
                *(_over_seeds(r, c) for c in SUMMARY_COLUMNS),
                *(num(values.get(h)) for h in heuristics),
            ]
        )
    header = ["grid point", "seeds", *SUMMARY_COLUMNS.values()]
    notes = [
        "final: the best validation value of a run (the policy saved as best.pt); last: the "
        "value at its last validation; it/s 95%: the first iteration, and the training "
        "seconds until then (cloning included), reaching 95% of its improvement; it/s to sjf: "
        "the same to a validation value as good as SJF's (iteration 0: the policy before any "
        "update). Runs that never get there are left out of the mean and counted as (k/n "
        "seeds). Means over the seeds with Student t 95% intervals.",
    ]
    return Table(header + heuristics, rows, notes=notes)


def _over_seeds(row: Mapping[str, Any], column: str) -> str:
    """``mean [low, high]`` of a summary column, ``(k/n seeds)`` when only k of the n seeds
    reached it, ``never (0/n)`` when none did."""
    seeds, reached = row["seeds"], row.get(f"{column}_n")
    if reached == 0 and seeds:
        return f"never (0/{seeds})"
    text = ci(row.get(column), row.get(f"{column}_low"), row.get(f"{column}_high"))
    return text if reached is None or reached == seeds else f"{text} ({reached}/{seeds})"


def run_rows(table: pl.DataFrame) -> Table:
    """One row per run: run, seed, status, final, last, best iteration, it 95%, it to sjf
    ("never" for a complete run that did not get there), seconds."""

    def whole(value: float | None) -> str:
        return "–" if value is None else f"{value:.0f}"

    rows = [
        [
            r["run"],
            str(r["seed"]),
            r["status"],
            num(r.get("final")),
            num(r.get("last")),
            whole(r["best_iteration"]),
            whole(r.get("it_95")),
            whole(r.get("it_target"))
            if r.get("final") is None or r.get("it_target") is not None
            else "never",
            whole(r["seconds"]),
        ]
        for r in table.iter_rows(named=True)
    ]
    header = [
        "run",
        "seed",
        "status",
        "final",
        "last",
        "best iteration",
        "it 95%",
        "it to sjf",
        "seconds",
    ]
    return Table(header, rows, left=3)


def write_sweep_report(
    out_dir: str | Path,
    *,
    trainer: str,
    config: Mapping[str, Any],
    table: pl.DataFrame,
    summary: pl.DataFrame,
    curves: pl.DataFrame,
    baselines: pl.DataFrame,
    selection: Selection | None = None,
    options: FigureOptions | None = None,
) -> dict[str, Path]:
    """``report.md`` and ``report.html`` of a sweep, with ``learning_curves.png`` beside them.

    ``table``, ``summary``, ``curves`` and ``baselines`` are the tables of
    :mod:`schedlab.evaluation.sweep_tables` (``run_table``, ``summary_table``, ``sweep_curves``,
    ``baseline_table``); ``config`` is the sweep's ``config.json``; ``selection`` the metric the
    runs selected their policy on (default: lower validation slowdown). Heuristic lines are drawn
    when every point has the same heuristic values (a grid over training settings, not over the
    workload); the table always lists them per point.
    """
    points = summary["point"].to_list()
    heuristics = list(dict.fromkeys(baselines["policy"].to_list()))
    palette = policy_palette([*points, *heuristics])
    per_point = [
        dict(zip(d["policy"], d["value"], strict=True))
        for d in baselines.partition_by("point", maintain_order=True)
    ]
    lines = per_point[0] if per_point and all(p == per_point[0] for p in per_point) else {}
    selection = selection or Selection(metric="val_slowdown")
    ylabel = METRIC_LABELS.get(selection.metric, selection.metric)
    xlabel = f"Training {selection.step}"
    images = {
        "learning_curves.png": (
            figure(
                lambda ax: plot_sweep_curves(
                    curves, lines, palette=palette, ylabel=ylabel, xlabel=xlabel, ax=ax
                ),
                (9, 4.5),
                paper=(3.3, 3.6),
            ),
            "Validation curve of every seed (thin) and the mean over seeds (thick) per grid "
            "point; each seed validates on its own held-out jobsets; heuristics (their mean "
            "over the seeds) as lines.",
        )
    }
    sweep = config.get("sweep", {})
    counts = table["status"].value_counts(sort=True)
    status = ", ".join(f"{n} {s}" for s, n in counts.iter_rows())
    grid = "; ".join(f"{k} in {v}" for k, v in sweep.get("grid", {}).items()) or "none"
    blocks: list[Block] = [
        ("h1", f"Training sweep: {trainer}"),
        (
            "p",
            f"{table.height} runs ({status}): seeds {sweep.get('seeds')}, grid: {grid}. "
            f"Values are the validation {selection.metric.removeprefix('val_')} each run selects "
            f"its policy on ({'higher' if selection.higher_is_better else 'lower'} is better).",
        ),
        ("table", summary_rows(summary, baselines)),
        ("figure", ("learning_curves.png", images["learning_curves.png"][1])),
        ("h2", "Runs"),
        ("p", "Each run directory holds its own learning report (report.html)."),
        ("table", run_rows(table)),
        (
            "pre",
            json.dumps(
                dict(config.get("train_config", {})), indent=1, default=str, ensure_ascii=False
            ),
        ),
    ]
    return write_bundle(
        Path(out_dir),
        stem="report",
        title=f"Training sweep: {trainer}",
        blocks=blocks,
        tables={},
        images=images,
        options=options,
    )
