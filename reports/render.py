"""Render a report of per-job results: HTML (self-contained) and Markdown, CSV and LaTeX tables,
figures as PNG, PDF and SVG.

:func:`build_report` computes the tidy tables with :mod:`schedlab.evaluation` (per-jobset
metrics, bootstrap summaries, the paired comparison of :mod:`schedlab.evaluation.analysis`, its
overview over loads, and the views of a representative schedule) and lays out the figures and
blocks; :func:`write_report` writes them, every file atomically. The HTML and the Markdown hold
the same content, built once as a list of blocks (:mod:`schedlab.reports.markup`); the HTML
embeds the figures as base64 PNG and needs no other file, the Markdown links the PNG files
written beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.evaluation.analysis import AnalysisConfig, conditions
from schedlab.evaluation.metrics import (
    TIME_METRICS,
    length_buckets,
    length_units,
    per_jobset,
    per_length,
    policy_order,
    time_unit,
)
from schedlab.evaluation.overview import ratio_overview
from schedlab.evaluation.replay import replay
from schedlab.evaluation.settings import DEFAULT_STATS, StatsSettings, stats_settings
from schedlab.evaluation.stats import SUMMARY_STATS, summarize
from schedlab.evaluation.users import per_user
from schedlab.jobset import JobSet
from schedlab.overlap import window_overlap
from schedlab.reports import (
    comparison,
    comparison_data,
    figures,
    replay_section,
    sections,
    users_section,
    views,
    withholding,
)
from schedlab.reports import views_section as vs
from schedlab.reports.content import Block, Table
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import FigureOptions, Plot
from schedlab.reports.palette import policy_palette
from schedlab.reports.report_figures import report_figures
from schedlab.reports.sections import Computed
from schedlab.reports.tables import num, overview_table, pairwise_table, summary_table
from schedlab.reports.units import TimeScale, display_scale, reference_value
from schedlab.results import Results


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


def compute(
    results: Results,
    cfg: AnalysisConfig,
    *,
    focus_load: float | None = None,
    jobs: JobSet | None = None,
    scale: TimeScale | None = None,
) -> Computed:
    """Every table a report shows, for ``results`` of one workload, times in ``scale``'s unit
    (default :func:`~schedlab.reports.units.display_scale` of the reference's primary metric)."""
    raw = per_jobset(results, bsld_threshold=cfg.bounded_slowdown_threshold)
    pln = per_length(results)
    focus = _focus(raw, focus_load)
    unit, order = time_unit(results.table), policy_order(results)
    scale = scale or display_scale(reference_value(raw, cfg.primary, cfg.reference), unit)
    pj = scale.frame(raw)
    blocks = replay(results, raw, cfg, order)
    comp = comparison_data.compare_policies(
        pj,
        pln,
        cfg,
        order,
        focus,
        time_unit=scale.name,
        source_unit=unit,
        time_factor=scale.factor,
        replay=None if blocks is None else replay_section.scaled(blocks, scale),
    )
    by = ("policy", *conditions(pj))
    view = views.compute(
        results,
        pj,
        comp.ranked(),
        reference=cfg.reference,
        metric=cfg.primary,
        load=focus,
        jobs=jobs,
    )
    return Computed(
        results=results,
        per_jobset=pj,
        per_length=pln,
        summary=comp.summary.select(*by, "metric", *SUMMARY_STATS),
        length_summary=summarize(
            comp.at_focus(pln), metrics=("slowdown",), by=("policy", "load", "bucket"), settings=cfg
        ),
        buckets=length_buckets(length_units(results)),
        comp=comp,
        ratios=ratio_overview(comp.summary, comp.pairwise, cfg),
        views=view,
        n_loads=pj.get_column("load").drop_nulls().n_unique(),
        users=per_user(results, jobs, bsld_threshold=cfg.bounded_slowdown_threshold),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Report:
    """A report, computed and laid out, not yet written."""

    computed: Computed
    """Every table it shows."""
    title: str
    """Its title."""
    blocks: list[Block]
    """Its content."""
    tables: dict[str, pl.DataFrame]
    """CSV file name -> table."""
    images: dict[str, tuple[Plot, str]]
    """PNG file name -> figure and caption."""
    formatted: dict[str, tuple[Table, str]]
    """File stem -> table and comment, written as LaTeX and Markdown."""

    def write(self, out_dir: str | os.PathLike[str], options: FigureOptions) -> dict[str, Path]:
        """Write every file into ``out_dir`` (see :func:`write_report`)."""
        return write_bundle(
            Path(out_dir),
            stem="report",
            title=self.title,
            blocks=self.blocks,
            tables=self.tables,
            images=self.images,
            options=options,
            formatted=self.formatted,
        )


def build_report(
    results: Results,
    *,
    title: str = "schedlab report",
    cfg: AnalysisConfig,
    focus_load: float | None = None,
    experiment: Mapping[str, Any] | None = None,
    jobs: JobSet | None = None,
    requested_reference: str | None = None,
    scale: TimeScale | None = None,
) -> Report:
    """Compute and lay out the report of ``results`` (arguments as :func:`write_report`; ``scale``
    as :func:`compute`)."""
    experiment = experiment or {}
    c = compute(results, cfg, focus_load=focus_load, jobs=jobs, scale=scale)
    palette = policy_palette(c.comp.order)
    images = report_figures(c, palette, experiment)
    tables = {
        "summary.csv": c.summary,
        "per_jobset.csv": c.per_jobset,
        "per_length.csv": c.per_length,
        "length_summary.csv": c.length_summary,
    }
    if not c.comp.is_replay():  # (a replay's statistics are its replay_* tables, below)
        tables |= {
            "comparison.csv": c.comp.summary,
            "ratios.csv": c.ratios,
            "omnibus.csv": c.comp.omnibus,
            "pairwise.csv": c.comp.pairwise,
            "exploratory.csv": c.comp.exploratory,
        }
    if c.users is not None:
        tables["per_user.csv"] = c.users
    if c.comp.replay is not None:
        tables |= {
            "replay_summary.csv": c.comp.replay.summary,
            "replay_blocks.csv": c.comp.replay.blocks,
            "replay_design.csv": c.comp.replay.design,
            "replay_quantiles.csv": c.comp.replay.quantiles,
        }
    view_table = None
    if c.views is not None and c.views.summary is not None:
        assert c.views.timeline is not None  # set with the summary
        tables["timeline_jobset.csv"] = c.views.timeline
        tables["timeline_summary.csv"] = c.views.summary
        if c.views.binned is not None:
            tables["timeline_bins.csv"] = c.views.binned
        if c.views.machine_util is not None:
            tables["machine_utilisation.csv"] = c.views.machine_util
        view_table = vs.summary_table(c.views, c.comp.order, settings=cfg)
    tables = {name: t for name, t in tables.items() if t.height}  # none written empty
    label = {b: figures.bucket_label(b, r) for b, r in c.buckets.items()}
    blocks = [
        *sections.intro(c, title, experiment),
        *sections.overview_blocks(c, images),
        *(
            replay_section.blocks(c.comp, images)
            if c.comp.is_replay()
            else comparison.blocks(c.comp, images, label, c.ratios)
        ),
        *sections.sweep_blocks(c, images),
        *users_section.blocks(c.comp, c.users, images),
        *(
            vs.blocks(
                c.views,
                images,
                view_table,
                metric=c.comp.name(cfg.primary),
                confidence=cfg.confidence,
                value=_jobset_value(c),
            )
            if c.views is not None
            else []
        ),
        *sections.length_blocks(c, images),
        *withholding.agent_blocks(results),
        *sections.meta_blocks(c, experiment, list(tables)),
        *sections.skipped_blocks(experiment),
    ]
    overlap = None if jobs is None else window_overlap(jobs)
    if overlap is not None:
        blocks.insert(2, ("warning", overlap.describe()))
    if requested_reference is not None and requested_reference != cfg.reference:
        msg = f"reference policy {requested_reference!r} has no results; {cfg.reference} is used."
        blocks.insert(2, ("warning", msg))
    if c.comp.is_replay():
        formatted = {
            "summary_table": (replay_section.main_table(c.comp), f"{title}: the whole log"),
        }
    else:
        formatted = {
            "summary_table": (
                summary_table(c.comp, c.ratios),
                f"{title}: summary {c.comp.where()}",
            ),
            "pairwise_table": (
                pairwise_table(c.comp.at_focus(c.comp.pairwise), cfg.alpha),
                f"{title}: all pairs {c.comp.where()}",
            ),
        }
    if c.ratios.get_column("ratio").drop_nulls().len():
        formatted["ratio_table"] = (
            overview_table(c.comp, c.ratios),
            f"{title}: ratio to {cfg.reference} at every load",
        )
    return Report(
        computed=c, title=title, blocks=blocks, tables=tables, images=images, formatted=formatted
    )


def _jobset_value(c: Computed) -> str | None:
    """The drawn jobset's primary metric under the reference, as the tables show it."""
    cfg = c.comp.cfg
    if c.views is None or cfg.primary == "slowdown":  # the section gives the slowdown anyway
        return None
    row = c.per_jobset.filter(
        (pl.col("policy") == cfg.reference) & (pl.col("jobset") == c.views.jobset)
    )
    row = c.comp.at_focus(row)
    if row.height != 1 or cfg.primary not in row.columns:
        return None
    unit = c.comp.time_unit if cfg.primary in TIME_METRICS else ""
    return f"{num(row.get_column(cfg.primary).item())} {unit}".strip()


def analysis_config(
    results: Results,
    settings: StatsSettings = DEFAULT_STATS,
    *,
    reference: str | None = None,
    **overrides: Any,
) -> AnalysisConfig:
    """The analysis settings of a report: ``settings`` with ``overrides`` (fields by name)
    against ``reference``, which defaults to (or, when it has no results, falls back to) the
    first policy simulated. A DAG workload whose metrics nobody chose (the default settings, no
    ``primary`` or ``secondary`` given) is compared on its jobs: job slowdown, then job
    completion time, then the default secondary metrics (its rows are tasks)."""
    table = results.table
    dags = "dag" in table.columns and table.get_column("dag").null_count() < table.height
    if dags and settings is DEFAULT_STATS and not {"primary", "secondary"} & set(overrides):
        overrides |= {"primary": "job_slowdown", "secondary": ("jct", *settings.secondary)}
    order = policy_order(results)
    chosen = stats_settings(settings, **overrides)
    return AnalysisConfig.of(chosen, reference if reference in order else order[0])


def write_report(
    results: Results,
    out_dir: str | os.PathLike[str],
    *,
    title: str = "schedlab report",
    reference: str | None = None,
    settings: StatsSettings = DEFAULT_STATS,
    focus_load: float | None = None,
    experiment: Mapping[str, Any] | None = None,
    jobs: JobSet | None = None,
    dpi: int = 200,
    style: str = "screen",
    vector: Sequence[str] | None = None,
    **overrides: Any,
) -> dict[str, Path]:
    """Write the report of ``results`` into ``out_dir``, every file atomically.

    Files: ``report.html`` (self-contained: figures as base64 PNG, inline CSS), ``report.md``
    (same content, linking the figures beside it); CSV tables ``summary.csv`` (policy × load ×
    metric), ``per_jobset.csv``, ``per_length.csv``, ``length_summary.csv`` (at the focus
    load), ``comparison.csv`` (summary, ranks and ratio to the reference, every load),
    ``ratios.csv`` (ratio to the reference with the Holm-adjusted test, every load),
    ``omnibus.csv``, ``pairwise.csv``, ``exploratory.csv`` (a workload replayed once has its
    ``replay_*`` tables instead; a table with no row is not written) and, when the jobs' demands are
    known, ``timeline_jobset.csv`` (the representative jobset over time) and
    ``timeline_summary.csv`` (every jobset at the focus load); the summary, ratio and
    pairwise tables as LaTeX (booktabs) and Markdown (``summary_table``, ``ratio_table``,
    ``pairwise_table``, each ``.tex`` and ``.md``); figures ``ratio_grid``,
    ``jobset_values``, ``cd_diagram``, ``pairwise_heatmap``, ``ratio_to_reference``,
    ``schedule_diff``, ``timeline``, ``timeline_mean``, ``length_boxplot``,
    ``slowdown_cdf`` and, with two offered loads or more, ``load_sweep``, each as ``.png``
    and in the ``vector`` formats (``.pdf``, ``.svg``).

    Parameters
    ----------
    results
        Per-job results (one workload).
    out_dir
        Output folder, created if missing; existing files of the same names are replaced.
    title
        Report title.
    reference
        Reference policy of the comparisons; default the first policy simulated.
    settings
        Metrics and statistics settings (primary and secondary metrics, τ of the bounded
        slowdown, confidence, alpha, bootstrap resamples and seed).
    focus_load
        Offered load of the detailed comparison; default (or when absent) the highest.
    experiment
        Context of an experiment: ``spec`` (resolved spec dict), ``environment``,
        ``failures``, ``missing``, ``skipped`` and ``learning`` (learned policy -> training
        run folder), shown in the report.
    jobs
        The JobSet the results were simulated on: its demands give the utilisation, queue and
        fragmentation views (without it, and without demand columns in the results, the
        schedule section shows the Gantt charts only).
    dpi
        Resolution of the PNG files (the HTML embeds lighter copies).
    style
        ``"screen"`` or ``"paper"`` (one column of a two-column paper;
        :mod:`schedlab.reports.output`).
    vector
        Vector copies of each figure (``"pdf"``, ``"svg"``); default (None) both in the paper
        style and none in the screen style, as they take more time than the PNGs.
    **overrides
        Fields of ``settings`` to replace, by name (``seed=1``, ``n_resamples=500``; see
        :class:`~schedlab.evaluation.settings.StatsSettings`).

    Returns
    -------
    dict
        Path of every file written: ``"html"``, ``"md"``; CSV tables and PNG figures by file
        stem (``"summary"``, ``"load_sweep"``, ...); other files by file name
        (``"load_sweep.pdf"``, ``"summary_table.tex"``, ...).
    """
    options = FigureOptions(dpi=dpi, style=style, vector=None if vector is None else tuple(vector))
    cfg = analysis_config(results, settings, reference=reference, **overrides)
    report = build_report(
        results,
        title=title,
        cfg=cfg,
        focus_load=focus_load,
        experiment=experiment,
        jobs=jobs,
        requested_reference=reference,
    )
    return report.write(out_dir, options)
