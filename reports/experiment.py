"""The report of an experiment directory (``schedlab report runs/x/ -o out/``).

The experiment's resolved spec gives the reference policy, the metrics, the statistics
settings, the focus load and the title; its failures, missing runs, skipped optional policies
and environment are shown in the report, and its ``jobsets/`` give the jobs' demands for the
views of the schedule. One workload gives one report in ``out/``; several give one report per
workload in ``out/<workload>/`` and an index page ``out/report.html`` (and ``report.md``)
linking them, with the comparison over every workload × load condition
(:func:`~schedlab.evaluation.overview.across_conditions`): average ranks per workload, the
Friedman test over conditions, pairwise tests and a critical-difference diagram.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import ResultsError, SpecError
from schedlab.evaluation.analysis import AnalysisConfig, cliques, unjoined
from schedlab.evaluation.collect import Experiment, read_experiment
from schedlab.evaluation.metrics import per_jobset, time_unit
from schedlab.evaluation.overview import AcrossConditions, across_conditions
from schedlab.evaluation.runner import plan
from schedlab.evaluation.settings import StatsSettings
from schedlab.jobset import JobSet
from schedlab.overlap import window_overlap
from schedlab.reports import stats_figures as sf
from schedlab.reports.content import Block, Table
from schedlab.reports.figures import format_load, metric_label
from schedlab.reports.learning import learning_runs
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import FigureOptions, Plot, figure
from schedlab.reports.palette import policy_palette
from schedlab.reports.render import analysis_config, build_report
from schedlab.reports.tables import ci_table, num, pairwise_table
from schedlab.reports.units import TimeScale, display_scale, reference_value
from schedlab.results import Results


def _context(exp: Experiment, workload: str) -> dict[str, Any]:
    learning = learning_runs(exp.spec.policies, workload)
    return {
        "spec": exp.spec.to_json(),
        "environment": exp.environment,
        "failures": [f for f in exp.failures if f.get("workload") == workload],
        "missing": exp.missing,
        "skipped": [list(s) for s in exp.spec.skipped],
        "learning": learning,
        "description": next((w.description for w in exp.spec.workloads if w.name == workload), ""),
    }


def experiment_jobs(exp: Experiment) -> dict[str, JobSet]:
    """Each workload's JobSet, from the experiment's ``jobsets/`` (workloads without one absent)."""
    paths = {t.workload: Path(t.jobsets_path) for t in plan(exp.spec, exp.path)}
    return {w: JobSet.read_parquet(p) for w, p in paths.items() if p.is_file()}


def load_results(
    source: Results | str | os.PathLike[str],
    *,
    workload: str | None = None,
    jobs: JobSet | str | os.PathLike[str] | None = None,
) -> tuple[Results, JobSet | None]:
    """Per-job results and their JobSet from a Results, a results Parquet file or an experiment
    directory (one workload: ``workload``, or its only one).

    ``jobs`` (a JobSet or its Parquet file) is the JobSet to use; by default an experiment's
    own (``jobsets/``), and none for a results file.

    Raises
    ------
    ResultsError
        If an experiment directory has several workloads and ``workload`` names none of them.
    """
    given = JobSet.read_parquet(jobs) if isinstance(jobs, str | os.PathLike) else jobs
    if isinstance(source, Results):
        return source, given
    path = Path(source)
    if not path.is_dir():
        return Results.read_parquet(path), given
    exp = read_experiment(path)
    names = list(exp.results)
    name = workload if workload is not None else (names[0] if len(names) == 1 else None)
    if name not in exp.results:
        msg = f"{path}: name a workload (--workload / workload=); the experiment holds {names}"
        raise ResultsError(msg)
    return exp.results[name], given or experiment_jobs(exp).get(name)


def write_experiment_report(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int | None = None,
    reference: str | None = None,
    dpi: int = 200,
    style: str = "screen",
    vector: Sequence[str] | None = None,
) -> dict[str, Path]:
    """Write the report(s) of the experiment directory ``path`` into ``out_dir``.

    Parameters
    ----------
    path
        Directory written by :func:`~schedlab.evaluation.runner.run_experiment`.
    out_dir
        Output folder.
    seed
        Bootstrap seed; default the experiment's seed.
    reference
        Reference policy; default the spec's.
    dpi, style, vector
        Figure files, as :func:`~schedlab.reports.render.write_report`.

    Returns
    -------
    dict
        As :func:`~schedlab.reports.render.write_report` for one workload; with several, the
        index's files (``"html"``, ``"md"``, its CSV tables by stem) plus ``"<workload>"`` ->
        that report's HTML.

    Raises
    ------
    SpecError
        If ``path`` is not an experiment directory or no run has completed.
    """
    exp = read_experiment(path)
    spec, out = exp.spec, Path(out_dir)
    if not exp.results:
        msg = f"{path}: no run of experiment {spec.name!r} has completed; nothing to report"
        raise SpecError(msg)
    options = FigureOptions(dpi=dpi, style=style, vector=None if vector is None else tuple(vector))
    settings = spec.metrics if seed is None else replace(spec.metrics, seed=seed)
    wanted = reference or spec.reference
    title = spec.report.title or spec.description or spec.name
    jobs = experiment_jobs(exp)
    several = len(exp.results) > 1
    scale = common_scale(exp.results, settings, wanted)
    paths: dict[str, Path] = {}
    summaries, links = [], []
    for workload, results in exp.results.items():
        cfg = analysis_config(results, settings, reference=wanted)
        report = build_report(
            results,
            title=f"{title}: {workload}" if several else title,
            cfg=cfg,
            focus_load=spec.report.focus_load,
            experiment=_context(exp, workload),
            jobs=jobs.get(workload),
            requested_reference=wanted,
            scale=scale,
        )
        if not several:
            return report.write(out, options)
        paths[workload] = report.write(out / workload, options)["html"]
        summaries.append(report.computed.comp.summary)
        about = next((w.description for w in spec.workloads if w.name == workload), "")
        links.append((f"{workload}: {about}" if about else workload, f"{workload}/report.html"))
    cfg = analysis_config(exp.results[next(iter(exp.results))], settings, reference=wanted)
    order = list(dict.fromkeys(p.name for p in spec.policies))
    across = across_conditions(pl.concat(summaries, how="diagonal_relaxed"), cfg, order)
    index = _write_index(
        out, title, spec.name, links, across, cfg, options, scale.name, shared_jobs(jobs)
    )
    return paths | index


def shared_jobs(jobs: Mapping[str, JobSet]) -> str | None:
    """A warning naming the workloads whose jobsets are windows of one log that share jobs
    (:func:`~schedlab.overlap.window_overlap`), or None."""
    found = {w: o for w, j in jobs.items() if (o := window_overlap(j)) is not None}
    if not found:
        return None
    each = ", ".join(f"{w} ({o.mean_jobsets:.1f})" for w, o in found.items())
    return (
        f"The jobsets of {each} are windows of one log that share jobs: each job is in that "
        "many of its windows on average. The intervals above take the windows as independent, "
        "so they are too narrow there; each workload's report says more."
    )


def common_scale(
    results: Mapping[str, Results], settings: StatsSettings, reference: str | None
) -> TimeScale:
    """One unit for the times of every workload's report and of the index: the one that suits
    the largest of the workloads' reference means of the primary metric."""
    values, unit = [], "steps"
    for r in results.values():
        cfg = analysis_config(r, settings, reference=reference)
        pj = per_jobset(r, bsld_threshold=cfg.bounded_slowdown_threshold)
        unit = time_unit(r.table)
        values.append(reference_value(pj, cfg.primary, cfg.reference))
    largest = max((v for v in values if v is not None), default=None)
    return display_scale(largest, unit)


def _write_index(
    out: Path,
    title: str,
    name: str,
    links: list[tuple[str, str]],
    across: AcrossConditions,
    cfg: AnalysisConfig,
    options: FigureOptions,
    unit: str,
    shared: str | None = None,
) -> dict[str, Path]:
    """The index page: links to the workloads' reports and the comparison over conditions
    (times in ``unit``; ``shared``: a warning that some workloads' jobsets share jobs)."""
    blocks: list[Block] = [
        ("h1", title),
        ("p", f"Experiment {name}: one report per workload."),
        ("links", links),
        ("h2", "Across workloads and loads"),
        ("p", across_headline(across, cfg)),
    ]
    if across.omnibus.height == 0 and len(across.policies) >= 2:
        blocks.append(
            (
                "note",
                f"No test over conditions: with {across.n_conditions} conditions no pair of "
                f"the {len(across.policies)} policies could reach significance at "
                f"α = {cfg.alpha:g} after Holm's correction (at least "
                f"{across.min_conditions} are needed), so the Friedman test and the "
                "critical-difference diagram are left out. Each workload's report compares "
                "the policies in its own conditions.",
            )
        )
    table = ranks_table(across)
    if len(across.policies) > 1:  # ranks of a single policy say nothing (see the headline)
        blocks += [
            ("table", table),
            (
                "p",
                f"Average rank (1 = best) of each policy over the conditions (workload × "
                f"offered load) of each workload, ranked within each condition by the mean over "
                f"jobsets of its per-jobset {cfg.primary}; bold: best in the column.",
            ),
        ]
        if across.left_out:
            blocks.append(
                ("note", f"Not in every condition, so left out: {', '.join(across.left_out)}.")
            )
    means = means_table(across)
    blocks += [
        ("table", means),
        (
            "p",
            f"{metric_label(cfg.primary, unit)} of every policy in every condition: the mean "
            f"over jobsets of the per-jobset value [{cfg.confidence:.0%} bootstrap CI over "
            "jobsets], or for a workload replayed as one jobset the whole log's mean "
            f"[{cfg.confidence:.0%} block-bootstrap CI over time] (– : not run there); bold: "
            "lowest as shown in its column. The workloads' own reports test the differences.",
        ),
    ]
    if shared is not None:
        blocks.append(("warning", shared))
    images: dict[str, tuple[Plot, str]] = {}
    if across.omnibus.height and across.pairwise.height:
        images["cd_diagram.png"] = _cd_figure(across, cfg)
        blocks.append(("figure", ("cd_diagram.png", images["cd_diagram.png"][1])))
        blocks += [
            ("table", pairwise_table(across.pairwise, cfg.alpha, unit="conditions")),
            (
                "p",
                f"Two-sided Wilcoxon signed-rank tests over conditions on the log of the "
                f"condition means of {cfg.primary} (differences are log ratios), "
                "Holm-adjusted over the pairs. Conditions of one workload share its "
                "generator: they describe these conditions, not a population of workloads.",
            ),
        ]
    tables = {"across_ranks.csv": across.ranks, "across_means.csv": across.means}
    if across.omnibus.height:
        tables |= {"across_omnibus.csv": across.omnibus, "across_pairwise.csv": across.pairwise}
    return write_bundle(
        out,
        stem="report",
        title=title,
        blocks=blocks,
        tables=tables,
        images=images,
        options=options,
        formatted={
            "ranks_table": (table, f"{title}: average ranks"),
            "means_table": (means, f"{title}: mean {cfg.primary} per condition"),
        },
    )


def across_headline(across: AcrossConditions, cfg: AnalysisConfig) -> str:
    """One sentence: the best policy over all conditions and the omnibus test."""
    overall = across.ranks.filter(pl.col("workload") == "all")
    if overall.height < 2:
        who = (
            f"only {overall.row(0, named=True)['policy']} ran"
            if overall.height
            else "no policy ran"
        )
        return (
            f"No ranking across conditions: {who} in every condition. The table below gives "
            "every policy's mean where it ran; each workload's report compares its policies."
        )
    best = overall.row(0, named=True)
    n = best["n_conditions"]
    text = (
        f"Over {'the ' + str(n) if n > 1 else 'its one'} condition{'s' * (n > 1)}, "
        f"{best['policy']} has the best average rank ({num(best['mean_rank'])}) on "
        f"{cfg.primary}."
    )
    if across.omnibus.height == 0:
        return text
    o = across.omnibus.row(0, named=True)
    verdict = "differ significantly" if o["p"] <= cfg.alpha else "do not differ significantly"
    return text + (
        f" Friedman test over conditions (Iman–Davenport): F({o['df1']}, {o['df2']}) = "
        f"{num(o['f'])}, {sf.p_equals(o['p'])}: the {o['k']} policies {verdict} at "
        f"α = {cfg.alpha:g}; Kendall's W = {num(o['kendall_w'])}."
    )


def ranks_table(across: AcrossConditions) -> Table:
    """Rows: policies (best first); columns: each workload's average rank, then all."""
    workloads = across.ranks.get_column("workload").unique(maintain_order=True).to_list()
    workloads = [w for w in workloads if w != "all"] + ["all"]
    cells = {(p, w): r for p, w, r in across.ranks.select("policy", "workload", "mean_rank").rows()}
    pols = across.ranks.get_column("policy").unique(maintain_order=True).to_list()
    rows = [[p, *(num(cells.get((p, w))) for w in workloads)] for p in pols]
    bold = set()
    for j, w in enumerate(workloads, start=1):
        best = min((cells[(p, w)] for p in pols if (p, w) in cells), default=None)
        bold |= {(i, j) for i, p in enumerate(pols) if cells.get((p, w)) == best}
    header = ["policy", *(("all conditions" if w == "all" else w) for w in workloads)]
    return Table(header, rows, bold)


def means_table(across: AcrossConditions) -> Table:
    """Rows: every policy (display order); columns: the conditions (in order); cells: mean
    [CI] (:func:`~schedlab.reports.tables.ci_table`)."""
    cond = [c for c in ("workload", "load") if c in across.means.columns]
    key = pl.concat_str([pl.col(c).cast(pl.String).fill_null("–") for c in cond], separator="|")
    keyed = across.means.with_columns(key.alias("_key"))
    first = keyed.unique("_key", keep="first", maintain_order=True)
    labels = [_condition_label(r) for r in first.iter_rows(named=True)]
    index = keyed.get_column("_key").replace_strict(first.get_column("_key"), range(len(labels)))
    return ci_table(keyed.with_columns(condition=index), "condition", labels.__getitem__)


def _condition_label(key: dict[str, Any]) -> str:
    """``"res_slot_20, 64.6%"``: a condition's workload and offered load."""
    parts = [str(key["workload"])] if key.get("workload") is not None else []
    if key.get("load") is not None:
        parts.append(format_load(key["load"]))
    return ", ".join(parts) or "all"


def _cd_figure(across: AcrossConditions, cfg: AnalysisConfig) -> tuple[Plot, str]:
    """Critical-difference diagram over conditions."""
    overall = across.ranks.filter(pl.col("workload") == "all")
    ranks = dict(overall.select("policy", "mean_rank").rows())
    groups = cliques(ranks, across.pairwise)
    o = across.omnibus.row(0, named=True)
    palette = policy_palette(across.policies)
    plot = figure(
        lambda ax: sf.plot_cd_diagram(ranks, groups, palette=palette, cd=o["nemenyi_cd"], ax=ax),
        sf.cd_figsize(ranks, len(groups)),
    )
    caption = (
        f"Critical-difference diagram over {o['n_conditions']} conditions: average rank of "
        f"each policy (1 = best). Bars join rank-adjacent policies with no significant pair by the "
        f"Holm-adjusted Wilcoxon tests at α = {cfg.alpha:g}; scale bar: Nemenyi CD "
        f"({o['nemenyi_cd']:.2f}).{sf.unjoined_sentence(unjoined(groups, across.pairwise))}"
    )
    return plot, caption
