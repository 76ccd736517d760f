"""The figures of a report of one workload (:func:`~schedlab.reports.render.build_report`), by
PNG file name with their captions: the comparison's (or a whole replay's), the load sweep, job
lengths, per-job slowdowns, learning curves, and the schedule section's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from schedlab.evaluation.metrics import job_values
from schedlab.reports import (
    comparison,
    figures,
    learning,
    replay_section,
    users_section,
    views_figures,
    withholding,
)
from schedlab.reports import ratio_figures as rf
from schedlab.reports.output import Plot, figure, panels, place_panel_legend
from schedlab.reports.sections import Computed


def replay_jobs(c: Computed) -> pl.DataFrame:
    """Per-job ``policy``, ``wait`` (in the report's time unit) and ``bounded_slowdown`` at the
    focus condition, for the per-job distributions of a whole replay."""
    table = c.comp.at_focus(c.results.table)
    values = table.select(
        "policy", *job_values(table, bsld_threshold=c.comp.cfg.bounded_slowdown_threshold)
    )
    return values.with_columns(pl.col("wait") / c.comp.time_factor).select(
        "policy", "wait", "bounded_slowdown"
    )


def _sweep_figures(c: Computed, palette: dict[str, Any]) -> dict[str, tuple[Plot, str]]:
    """The load sweep (absolute, log scale, over the ratio to the reference) and the ratio grid."""
    cfg, out = c.comp.cfg, {}
    if c.n_loads >= 2:
        has_ratio = c.ratios.get_column("ratio").drop_nulls().len() > 0

        def draw(axes: Any) -> None:
            top = figures.plot_load_sweep(
                c.summary,
                palette=palette,
                metric=cfg.primary,
                confidence=c.confidence,
                legend=False,
                unit=c.comp.time_unit,
                ax=axes[0, 0],
            )
            handles = top.get_legend_handles_labels()[0]
            if has_ratio:
                low = rf.plot_ratio_sweep(
                    c.comp.summary,
                    reference=cfg.reference,
                    palette=palette,
                    metric=cfg.primary,
                    confidence=c.confidence,
                    legend=False,
                    ax=axes[1, 0],
                )
                top.set_xlabel("")
                handles += low.get_legend_handles_labels()[0][-1:]  # the reference line
            place_panel_legend(list(axes[:, 0]), handles=handles)

        rows = 2 if has_ratio else 1
        out["load_sweep.png"] = (
            panels(
                draw,
                (9, 4 + 3 * (rows - 1)),
                nrows=rows,
                sharex=True,
                span="column",
                gridspec_kw={"height_ratios": [1.3, 1][:rows]},
            ),
            f"{c.comp.name(cfg.primary).capitalize()} vs offered load: mean over jobsets of the "
            f"per-jobset average (log scale; bands: {100 * c.confidence:g}% bootstrap CI over "
            f"jobsets)"
            + (
                f"; below, the geometric-mean ratio to {cfg.reference} on the same jobsets "
                "(paired bootstrap CI)."
                if has_ratio
                else "."
            ),
        )
    pols = [p for p in c.comp.order if p != cfg.reference]
    if c.ratios.get_column("ratio").drop_nulls().len() and len(pols) > 1:  # else: the table
        n_loads = max(c.n_loads, 1)
        out["ratio_grid.png"] = (
            figure(
                lambda ax: rf.plot_ratio_grid(
                    c.ratios, reference=cfg.reference, order=pols, alpha=cfg.alpha, ax=ax
                ),
                (min(3 + 0.9 * n_loads, 12), 1.2 + 0.45 * len(pols)),
                span="page" if n_loads > 4 else "column",
            ),
            f"Ratio of per-jobset {c.comp.name(cfg.primary)} to {cfg.reference} at every load "
            "(blue: better, red: worse); grey numbers are not significant after Holm's "
            "correction.",
        )
    return out


def report_figures(
    c: Computed, palette: dict[str, Any], experiment: Mapping[str, Any]
) -> dict[str, tuple[Plot, str]]:
    """Figure and caption per PNG file name."""
    where, focus = c.comp.where(), c.comp.focus
    if c.comp.is_replay():
        out = replay_section.figures(c.comp, replay_jobs(c), palette)
    else:
        out = comparison.figures(c.comp, c.per_jobset, palette)
    out |= _sweep_figures(c, palette)
    if c.per_length.height and not c.comp.is_replay():  # one jobset: no box to draw
        draw = lambda ax: figures.plot_length_boxplot(  # noqa: E731
            c.per_length, palette=palette, buckets=c.buckets, load=focus, ax=ax
        )
        out["length_boxplot.png"] = (
            figure(draw, (9, 5), paper=(3.3, 3.2)),
            f"Per-jobset average slowdown by job length {where}",
        )
    out |= learning.learning_figures(experiment.get("learning", {}), palette)
    if not c.comp.is_replay():  # a whole replay draws its per-job distributions itself
        draw = lambda ax: figures.plot_slowdown_cdf(  # noqa: E731
            c.results.table, palette=palette, load=focus, ax=ax
        )
        out["slowdown_cdf.png"] = (
            figure(draw, (9, 5), paper=(3.3, 3.2)),
            f"CDF of per-job slowdown {where}",
        )
    out |= users_section.figures(c.comp, c.users, palette)
    if c.views is not None:
        out |= views_figures.figures(c.views, palette)
    return out | withholding.agent_figures(c.results, palette)
