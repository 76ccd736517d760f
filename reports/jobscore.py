"""The learning report of a ``schedlab train jobscore`` run: per discipline, the validation
curve of the per-job scoring network against the heuristics on the same windows, and the
training episodes' metric (:func:`report_training`, drawn with
:func:`~schedlab.reports.learning.plot_learning_curve`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.axes import Axes

from schedlab.reports.content import Block, Table
from schedlab.reports.learning import (
    best_row,
    per_queue,
    plot_learning_curve,
    queue_baselines,
    training_time,
)
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import Plot, figure
from schedlab.reports.palette import policy_palette

TRAINED = "jobscore"
"""The network's name in the report."""


def plot_losses(curve: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """PPO's diagnostics per iteration: entropy, approximate KL (×100) and clip fraction."""
    ax = ax if ax is not None else plt.gca()
    for column, factor, label in (
        ("entropy", 1.0, "entropy"),
        ("approx_kl", 100.0, "KL × 100"),
        ("clipfrac", 1.0, "clip fraction"),
    ):
        if column in curve.columns:
            ax.plot(curve["iteration"], curve[column] * factor, lw=1, label=label)
    ax.set_xlabel("Training iteration")
    ax.legend(frameon=False)
    return ax


def _learning(
    curve: pl.DataFrame, baselines: dict[str, float], palette: Any, metric: str
) -> Callable[[Axes], Axes]:
    def draw(ax: Axes) -> Axes:
        return plot_learning_curve(
            curve, baselines, policy=TRAINED, palette=palette, sampled=False, metric=metric, ax=ax
        )

    return draw


def report_training(result: Any, config: Mapping[str, Any]) -> Path:
    """``report.md`` and ``report.html`` in the run directory of ``result`` (a
    :class:`~schedlab.policies.training.TrainResult`); ``config`` is the run's flat config."""
    out = Path(result.out_dir)
    metric = str(config.get("objective", "bounded_slowdown"))
    queues = str(config.get("queues", "greedy")).split("+")
    by_queue = queue_baselines(out)
    curve = result.curve
    images: dict[str, tuple[Plot, str]] = {}
    rows = []
    for queue in queues:
        base = {k: float(v) for k, v in by_queue.get(queue, {}).items()}
        palette = policy_palette([TRAINED, *(b for b in base if b != "initial")])
        part = per_queue(curve, metric, queue)
        images[f"learning_{queue}.png"] = (
            figure(_learning(part, base, palette, metric), (9, 4.5), paper=(3.3, 3.6)),
            f"Validation windows under {queue}: mean per-window {metric} of the highest-score "
            "policy per iteration (faint: sampled, training episodes of every discipline), the "
            "heuristics under the same discipline as horizontal lines",
        )
        best = best_row(part, f"val_{metric}")
        heuristics = {k: v for k, v in base.items() if k != "initial"}
        top = min(heuristics, key=heuristics.__getitem__) if heuristics else "-"
        nan = float("nan")
        rows.append(
            [
                queue,
                f"{best[f'val_{metric}']:.3f} (iteration {best['iteration']})" if best else "-",
                f"{base.get('initial', nan):.3f}",
                f"{top} {heuristics.get(top, nan):.3f}",
            ]
        )
    images["ppo.png"] = (
        figure(lambda ax: plot_losses(curve, ax=ax), (8, 4)),
        "PPO diagnostics per iteration",
    )
    blocks: list[Block] = [
        ("h1", f"jobscore training on {config.get('workload')}"),
        (
            "p",
            f"{training_time(curve)}; best.pt at iteration {result.best_iteration} "
            f"(mean over the disciplines {result.best_value:.3f}).",
        ),
        (
            "table",
            Table(["discipline", f"best validation {metric}", "untrained", "best heuristic"], rows),
        ),
    ]
    for name, (_, caption) in images.items():
        blocks.append(("figure", (name, caption)))
    blocks.append(("pre", json.dumps(dict(config), indent=1, default=str)))
    paths = write_bundle(
        out, stem="report", title="jobscore training", blocks=blocks, tables={}, images=images
    )
    return paths["html"]
