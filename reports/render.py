"""Render a report of per-job results: HTML (self-contained) and Markdown, CSV tables, PNGs.

:func:`write_report` computes the tidy tables with :mod:`schedlab.evaluation` (per-jobset
metrics, bootstrap summaries, and the paired comparison of :mod:`schedlab.evaluation.analysis`),
draws the figures of :mod:`schedlab.reports.figures` and :mod:`schedlab.reports.stats_figures`
and writes every file atomically. The HTML and the Markdown hold the same content, built once
as a list of blocks (:mod:`schedlab.reports.markup`); the HTML embeds the figures as base64 PNG
and needs no other file, the Markdown links the PNG files written beside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.evaluation.analysis import AnalysisConfig, conditions
from schedlab.evaluation.metrics import (
    BSLD_THRESHOLD,
    METRICS,
    length_buckets,
    per_jobset,
    per_length,
    policy_order,
)
from schedlab.evaluation.stats import SUMMARY_STATS, summarize
from schedlab.reports import comparison, figures, learning, sections, stats_figures
from schedlab.reports.markup import png, write_bundle
from schedlab.reports.sections import Computed
from schedlab.results import Results

DEFAULT_SECONDARY = ("completion", "bounded_slowdown", "p95_slowdown")


def _focus(pj: pl.DataFrame, wanted: float | None) -> float | None:
    """The load of the detailed tables: ``wanted`` if present, else the highest; None if none."""
    loads = pj.get_column("load").drop_nulls().unique().sort().to_list() if pj.height else []
    if not loads:
        return None
    if wanted is not None:
        close = [x for x in loads if abs(x - wanted) <= 1e-9 * max(1.0, abs(wanted))]
        if close:
            return float(close[0])
    return float(loads[-1])


def _compute(
    results: Results, cfg: AnalysisConfig, focus_load: float | None, bsld_threshold: float
) -> Computed:
    pj = per_jobset(results, bsld_threshold=bsld_threshold)
    pln = per_length(results)
    focus = _focus(pj, focus_load)
    comp = comparison.compare_policies(pj, pln, cfg, policy_order(results), focus, bsld_threshold)
    by = ("policy", *conditions(pj))
    kw = {"seed": cfg.seed, "confidence": cfg.confidence, "n_resamples": cfg.n_resamples}
    return Computed(
        results=results,
        per_jobset=pj,
        per_length=pln,
        summary=comp.summary.select(*by, "metric", *SUMMARY_STATS),
        length_summary=summarize(
            comp.at_focus(pln), metrics=("slowdown",), by=("policy", "load", "bucket"), **kw
        ),
        buckets=length_buckets(results),
        comp=comp,
        n_loads=pj.get_column("load").drop_nulls().n_unique(),
        seed=cfg.seed,
        confidence=cfg.confidence,
        n_resamples=cfg.n_resamples,
    )


def _figures(
    c: Computed, palette: dict[str, Any], experiment: Mapping[str, Any]
) -> dict[str, tuple[bytes, str]]:
    """PNG bytes and caption per file name; the load sweep only with two loads or more."""
    cfg, where, focus = c.comp.cfg, c.comp.where(), c.comp.focus
    out = comparison.figures(c.comp, c.per_jobset, palette)
    if c.n_loads >= 2:
        draw = lambda ax: figures.plot_load_sweep(  # noqa: E731
            c.summary, palette=palette, metric=cfg.primary, confidence=c.confidence, ax=ax
        )
        out["load_sweep.png"] = (
            png(draw, (9, 5)),
            f"{METRICS[cfg.primary].capitalize()} vs offered load: mean over jobsets of the "
            f"per-jobset average (bands: {100 * c.confidence:g}% bootstrap CI over jobsets)",
        )
    if c.per_length.height:
        draw = lambda ax: figures.plot_length_boxplot(  # noqa: E731
            c.per_length, palette=palette, buckets=c.buckets, load=focus, ax=ax
        )
        out["length_boxplot.png"] = (
            png(draw, (9, 5)),
            f"Per-jobset average slowdown by job length {where}",
        )
    out |= _learning_figures(experiment.get("learning", {}), palette)
    draw = lambda ax: figures.plot_slowdown_cdf(  # noqa: E731
        c.results.table, palette=palette, load=focus, ax=ax
    )
    out["slowdown_cdf.png"] = (png(draw, (9, 5)), f"CDF of per-job slowdown {where}")
    return out


def _learning_figures(
    learning: Mapping[str, str], palette: dict[str, Any]
) -> dict[str, tuple[bytes, str]]:
    """One learning-curve figure per learned policy whose training run left a ``curve.csv``."""
    out: dict[str, tuple[bytes, str]] = {}
    for k, (policy, folder) in enumerate(learning.items()):
        curve_path, base_path = Path(folder) / "curve.csv", Path(folder) / "baselines.json"
        if not curve_path.is_file():
            continue
        curve = pl.read_csv(curve_path)
        if not {"iteration", "val_slowdown"} <= set(curve.columns):
            continue
        base = json.loads(base_path.read_text()) if base_path.is_file() else {}
        draw = lambda ax, curve=curve, base=base, policy=policy: (  # noqa: E731
            stats_figures.plot_learning_curve(curve, base, policy=policy, palette=palette, ax=ax)
        )
        out[f"learning_{k}.png"] = (
            png(draw, (9, 4.5)),
            f"Learning curve of {policy} (training run {folder}): average job slowdown per "
            "training iteration on the run's own validation jobsets, heuristics dashed.",
        )
    return out


def write_report(
    results: Results,
    out_dir: str | os.PathLike[str],
    *,
    title: str = "schedlab report",
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    reference: str | None = None,
    primary: str = "slowdown",
    secondary: Sequence[str] = DEFAULT_SECONDARY,
    alpha: float = 0.05,
    bsld_threshold: float = BSLD_THRESHOLD,
    focus_load: float | None = None,
    experiment: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write the report of ``results`` into ``out_dir``, every file atomically.

    Files: ``report.html`` (self-contained: figures as base64 PNG, inline CSS), ``report.md``
    (same content, linking the PNGs beside it); CSV tables ``summary.csv`` (policy × load ×
    metric), ``per_jobset.csv``, ``per_length.csv``, ``length_summary.csv`` (at the focus
    load), ``comparison.csv`` (summary, ranks and ratio to the reference, every load),
    ``omnibus.csv``, ``pairwise.csv`` and ``exploratory.csv``; PNG figures
    ``jobset_values.png``, ``cd_diagram.png``, ``pairwise_heatmap.png``,
    ``ratio_to_reference.png``, ``length_boxplot.png``, ``slowdown_cdf.png`` and, with two
    offered loads or more, ``load_sweep.png``.

    Parameters
    ----------
    results
        Per-job results (one workload).
    out_dir
        Output folder, created if missing; existing files of the same names are replaced.
    title
        Report title.
    seed
        Seed of the bootstrap confidence intervals.
    confidence
        Confidence level of the intervals.
    n_resamples
        Bootstrap resamples per interval.
    reference
        Reference policy of the comparisons; default the first policy simulated.
    primary
        Metric of the confirmatory tests (a column of
        :func:`~schedlab.evaluation.metrics.per_jobset`).
    secondary
        Exploratory metrics.
    alpha
        Significance level.
    bsld_threshold
        τ of the bounded slowdown, in steps.
    focus_load
        Offered load of the detailed comparison; default (or when absent) the highest.
    experiment
        Context of an experiment: ``spec`` (resolved spec dict), ``environment``,
        ``failures``, ``missing`` and ``skipped``, shown in the report.

    Returns
    -------
    dict
        Path of every file written, keyed ``"html"``, ``"md"`` and, for the others, by file
        name without extension (``"summary"``, ``"load_sweep"``, ...).
    """
    out, experiment = Path(out_dir), experiment or {}
    order = policy_order(results)
    ref = reference if reference in order else order[0]
    cfg = AnalysisConfig(
        reference=ref,
        primary=primary,
        secondary=tuple(secondary),
        alpha=alpha,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    c = _compute(results, cfg, focus_load, bsld_threshold)
    palette = figures.policy_palette(order)
    images = _figures(c, palette, experiment)
    images |= learning.agent_figures(results)  # withheld jobs of learned policies, if any
    tables = {
        "summary.csv": c.summary,
        "per_jobset.csv": c.per_jobset,
        "per_length.csv": c.per_length,
        "length_summary.csv": c.length_summary,
        "comparison.csv": c.comp.summary,
        "omnibus.csv": c.comp.omnibus,
        "pairwise.csv": c.comp.pairwise,
        "exploratory.csv": c.comp.exploratory,
    }
    label = {b: figures.bucket_label(b, r) for b, r in c.buckets.items()}
    blocks = [
        *sections.intro(c, title, experiment),
        *comparison.blocks(c.comp, images, label),
        *sections.sweep_blocks(c, images),
        *sections.length_blocks(c, images),
        *learning.agent_blocks(results),
        *sections.meta_blocks(c, experiment, list(tables)),
    ]
    if reference is not None and reference not in order:
        blocks.insert(
            2, ("warning", f"reference policy {reference!r} has no results; {ref} is used instead.")
        )
    return write_bundle(
        out, stem="report", title=title, blocks=blocks, tables=tables, images=images
    )
