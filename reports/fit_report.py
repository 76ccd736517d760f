"""The workload-fit report: HTML (self-contained) and Markdown, CSV tables and PNG figures.

:func:`write_fit_report` lays out what :func:`schedlab.evaluation.fitting.workload.fit` and
(optionally) :func:`schedlab.evaluation.fitting.check.heuristic_check` computed: the duration
candidates ranked with their distances and quantile errors (QQ and CCDF figures), the arrival models
with the overdispersion of counts and the daily profile, the demand table, the held-out
log-likelihoods, the heuristics on trace vs synthetic jobsets, and a DAG trace's job shapes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.evaluation.fitting.check import CheckResult
from schedlab.evaluation.fitting.mixture import OPTIMUM_TOL, SIGMA_FLOOR, STARTS
from schedlab.evaluation.fitting.workload import FitResult
from schedlab.reports import fit_figures as ff
from schedlab.reports import fit_tables as ft
from schedlab.reports.content import Block, Table
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import Plot, figure, panels
from schedlab.reports.palette import policy_palette
from schedlab.reports.tables import num

TOP_CANDIDATES = 3


def _dag_blocks(dags: pl.DataFrame | None) -> list[Block]:
    """The DAG shapes of :func:`schedlab.evaluation.fitting.dags.dag_shape_summary`."""
    if dags is None:
        return []
    header = ["quantity", "n", "mean", "median", "p95", "max", "model mean"]
    rows = [
        [
            x["quantity"],
            f"{x['n']:,}",
            num(x["mean"]),
            num(x["median"]),
            num(x["p95"]),
            str(x["max"]),
            num(x["model_mean"]),
        ]
        for x in dags.iter_rows(named=True)
    ]
    text = (
        "The trace's DAG jobs: tasks, depth (levels) and width (the widest level) per job, tasks "
        "per level and parents per task below a job's first level. The model (dag_shape.json) "
        "draws a job's depth, then each level's tasks and each task's parents independently "
        "from these distributions."
    )
    return [
        ("h2", "DAG shapes"),
        ("p", text),
        ("table", Table(header, rows)),
        (
            "pre",
            "schedlab generate dag -p shape=fitted -p shape_model=dag_shape.json "
            "--load 0.9 --jobsets 100 --seed 3 -o jobs.parquet",
        ),
    ]


def _figures(r: FitResult, c: CheckResult | None) -> dict[str, tuple[Plot, str]]:
    step = r.model.time_step_seconds
    top = [(f, r.fits[f].params) for f in r.durations["family"].head(TOP_CANDIDATES)]
    durations = ff.DurationFits(r.data, top, step)
    out = {
        "duration_qq.png": (
            figure(lambda ax: ff.plot_duration_qq(durations, ax=ax), (7, 6)),
            f"QQ plot of durations (log–log) for the {len(top)} best families by "
            f"{r.model.diagnostics['selection'].upper()}: model quantiles of the generated "
            "durations against the empirical ones; on the diagonal is a perfect fit.",
        ),
        "duration_ccdf.png": (
            figure(lambda ax: ff.plot_duration_ccdf(durations, ax=ax), (8, 5)),
            "Survival function of durations (log–log): trace (Kaplan–Meier, black) and the "
            "best families; the tail is what a scheduler feels most.",
        ),
        "arrival_profile.png": (
            figure(lambda ax: ff.plot_arrival_profile(r.hourly, r.model, ax=ax), (8, 4.5)),
            "Arrival rate by hour of the day: every observed (day, hour) as a grey dot, the "
            "mean over days in black, the fitted rate in orange (with batches: the rate of "
            "batches, fitted on the steps with arrivals, times the mean batch size).",
        ),
        "dispersion.png": (
            figure(lambda ax: ff.plot_dispersion(r.dispersion, ax=ax), (7, 4.5)),
            "Index of dispersion of arrival counts by bin width: 1 for a Poisson process; "
            "'vs fitted rate' divides by the counts the fitted rate (with its daily profile) "
            "expects.",
        ),
        "demands.png": (
            figure(lambda ax: ff.plot_demands(r.demands, r.model.resources, ax=ax), (8, 5.5)),
            "Empirical demand vectors: probability of the most frequent vectors within each "
            "duration class.",
        ),
    }
    if r.hourly.height == 0:
        del out["arrival_profile.png"]
    if r.dispersion.height == 0:
        del out["dispersion.png"]
    if c is not None:
        policies = c.summary.filter(pl.col("source") == "trace").sort("mean")["policy"].to_list()
        palette = policy_palette(policies)

        def draw(axes: Any) -> None:
            for ax, source in zip(axes, ("trace", "synthetic"), strict=True):
                ff.plot_check_ecdf(c.slowdowns, palette=palette, source=source, ax=ax)

        out["check_means.png"] = (
            figure(lambda ax: ff.plot_check_means(c.summary, ax=ax), (8, 4.5)),
            f"Mean per-jobset slowdown [95% bootstrap CI] of each heuristic at offered load "
            f"{c.load:.3g}: trace windows vs fitted synthetic jobsets.",
        )
        out["check_ecdf.png"] = (
            panels(lambda axes: draw(axes[0]), (11, 4.5), ncols=2, sharex=True, sharey=True),
            "Per-job slowdown distributions (pooled over jobsets, descriptive): trace windows "
            "(left) and fitted synthetic jobsets (right).",
        )
    return out


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (in dicts and lists)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def _model_text(r: FitResult) -> str:
    m = r.model
    a = m.arrivals
    batch = f", batches of {a.mean_batch():.3g} jobs on average" if a.batch_sizes else ""
    n_values = sum(v.shape[0] for v in m.demands.values)
    return (
        f"Durations: {m.durations.family} {json.dumps(rounded(m.durations.params))} (steps), "
        f"truncated at {m.durations.max_steps:,} steps. Arrivals: {a.kind}, "
        f"{a.rate_per_step:.4g} jobs per step{batch}. Demands: {len(m.demands.values)} "
        f"duration class(es), {n_values:,} distinct demand vectors. Default window of a "
        f"generated jobset: {m.window:,} steps. Offered load per job per step: "
        f"{m.load_per_rate():.4g}."
    )


def _blocks(
    r: FitResult,
    c: CheckResult | None,
    images: dict[str, Any],
    csvs: list[str],
    title: str,
    dags: pl.DataFrame | None = None,
) -> list[Block]:
    m, src = r.model, r.model.source
    fig = lambda name: [("figure", (name, images[name][1]))] if name in images else []  # noqa: E731
    sel = m.diagnostics["selection"].upper()
    blocks: list[Block] = [
        ("h1", title),
        (
            "p",
            f"Source: {src.get('path') or src.get('generator') or 'JobSet'}; "
            f"{src.get('jobs', 0):,} jobs in {src.get('jobsets', 0):,} jobset(s); resources "
            f"{dict(zip(m.resources, m.capacity, strict=True))}; one step = "
            f"{m.time_step_seconds or 'n/a'} s; offered load {num(src.get('offered_load'))}.",
        ),
        ("p", _model_text(r)),
        (
            "pre",
            "schedlab generate fitted --model model.json --load 0.9 --jobsets 100 --seed 3 "
            "-o jobs.parquet",
        ),
        *[("note", n) for n in r.notes],
        ("h2", "Durations"),
        (
            "p",
            f"Every family fitted by maximum likelihood (location 0) on interval-censored "
            f"durations (a job of d steps lasted (d-1, d] steps), ranked by {sel}. Ratios are "
            "model / empirical quantiles of the generated durations; the held-out column is "
            "the log-likelihood per job of the last part of the trace under a fit to the "
            "first part (best in bold). Lognormal mixtures are fitted by exact EM from "
            f"{len(STARTS)} starting points ({', '.join(STARTS)}; component medians >= 1/2 "
            f"step, σ >= {SIGMA_FLOOR:g}) and the best kept; starts at optimum: how many "
            f"reached it (within {OPTIMUM_TOL:g} of the best log L).",
        ),
        ("table", ft.duration_table(r)),
        ("p", _heldout_text(r)),
        *fig("duration_qq.png"),
        *fig("duration_ccdf.png"),
        ("h2", "Arrivals"),
        (
            "p",
            "Candidates fitted by maximum likelihood; the selected one (bold) has the best "
            "held-out log-likelihood of the per-step job counts.",
        ),
        ("table", ft.arrival_table(r)),
        ("table", ft.dispersion_table(r)),
        *fig("arrival_profile.png"),
        *fig("dispersion.png"),
        ("h2", "Demands"),
        (
            "p",
            f"Most frequent demand vectors per duration class (up to {ft.DEMAND_ROWS} shown); "
            f"kept share per class: {', '.join(f'{x:.4f}' for x in m.demands.coverage)}.",
        ),
        ("table", ft.demand_table(r)),
        *fig("demands.png"),
    ]
    blocks += _dag_blocks(dags)
    blocks += _check_blocks(c, fig)
    blocks += [("h2", "Files"), ("p", "CSV tables beside this report: " + ", ".join(csvs))]
    return blocks


def _heldout_text(r: FitResult) -> str:
    """Which family and arrival model predict the held-out end of the trace best."""
    d = r.durations.filter(pl.col("heldout_ll_per_job").is_not_nan())
    a = r.arrivals.filter(pl.col("heldout_ll_per_job").is_not_null())
    a = a.filter(pl.col("heldout_ll_per_job").is_not_nan())
    if not d.height:
        return "Held-out log-likelihood: not available (no job in the held-out period)."
    best = d.sort("heldout_ll_per_job", descending=True).row(0, named=True)
    chosen = r.durations.row(0, named=True)
    text = (
        f"Held-out log-likelihood per job (durations, steps): best {best['family']} "
        f"({best['heldout_ll_per_job']:.4f}); the selected {chosen['family']} "
        f"{chosen['heldout_ll_per_job']:.4f}."
    )
    if a.height:
        top = a.sort("heldout_ll_per_job", descending=True).row(0, named=True)
        text += f" Arrivals: best {top['model']} ({top['heldout_ll_per_job']:.4f} per job)."
    return text


def _check_blocks(c: CheckResult | None, fig: Any) -> list[Block]:
    if c is None:
        return [("h2", "Heuristics: trace vs synthetic"), ("p", "Not run (--no-check).")]
    jobs = (
        c.summary.group_by("source")
        .agg(
            pl.col("jobs_per_jobset").first(),
            pl.col("realised_load").first(),
            pl.col("n_jobsets").first(),
        )
        .sort("source")
    )
    desc = "; ".join(
        f"{x['source']}: {x['n_jobsets']} jobsets, {x['jobs_per_jobset']:.1f} "
        f"jobs each, offered load {x['realised_load']:.3g}"
        for x in jobs.iter_rows(named=True)
    )
    return [
        ("h2", "Heuristics: trace vs synthetic"),
        (
            "p",
            f"The same heuristics on random {c.window:,}-step windows of the trace and on "
            f"jobsets generated from the fitted model at the matched offered load "
            f"({c.load:.3g}). {desc}. Kendall's τ between the two orders of the policies: "
            f"{c.kendall_tau:.2f} by mean slowdown, {c.kendall_tau_ranks:.2f} by average rank.",
        ),
        *[("note", n) for n in c.notes],
        ("table", ft.check_table(c)),
        *fig("check_means.png"),
        *fig("check_ecdf.png"),
    ]


def write_fit_report(
    result: FitResult,
    out_dir: str | os.PathLike[str],
    *,
    check: CheckResult | None = None,
    title: str = "Workload fit",
    dags: pl.DataFrame | None = None,
) -> dict[str, Path]:
    """Write the fit report into ``out_dir`` (every file atomically).

    Files: ``fit_report.html`` (self-contained), ``fit_report.md`` (links the PNGs), CSV tables
    ``duration_candidates.csv``, ``arrival_models.csv``, ``dispersion.csv``,
    ``hourly_rates.csv``, ``demands.csv`` (and ``check_summary.csv`` with a check, and
    ``dag_shape.csv`` with ``dags``, a DAG shape summary), and the PNG figures. Returns the
    path of every file, keyed ``"html"``, ``"md"`` and by file stem.
    """
    out = Path(out_dir)
    tables = {
        "duration_candidates.csv": result.durations,
        "arrival_models.csv": result.arrivals,
        "dispersion.csv": result.dispersion,
        "hourly_rates.csv": result.hourly,
        "demands.csv": result.demands,
    }
    if check is not None:
        tables["check_summary.csv"] = check.summary
    if dags is not None:
        tables["dag_shape.csv"] = dags
    images = _figures(result, check)
    blocks = _blocks(result, check, images, list(tables), title, dags)
    return write_bundle(
        out, stem="fit_report", title=title, blocks=blocks, tables=tables, images=images
    )
