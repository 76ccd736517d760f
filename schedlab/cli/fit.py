"""``schedlab fit``: a workload model fitted to a JobSet, with its report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from schedlab.cli.options import (
    LOAD,
    Command,
    cluster_options,
    count_option,
    output_option,
    seed_option,
)

if TYPE_CHECKING:
    import polars as pl

    from schedlab.jobset import JobSet


@click.command("fit", cls=Command)
@click.argument("jobs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--censored-column",
    help="Boolean column of still-running (right-censored) jobs "
    "(default: a `censored` column if present).",
)
@click.option(
    "--family",
    "families",
    multiple=True,
    help="Duration family to compare (repeatable; default: all).",
)
@click.option(
    "--select",
    "selection",
    type=click.Choice(["aic", "bic"]),
    default="aic",
    show_default=True,
    help="Criterion choosing the duration family.",
)
@count_option(
    "--demand-classes", 4, "Duration classes the demand table is conditioned on (1: none)."
)
@click.option(
    "--window", type=click.IntRange(min=1), help="Arrival window (steps) of generated jobsets."
)
@click.option(
    "--holdout",
    default=0.3,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Share of the observed time held out (the end) for out-of-sample checks.",
)
@count_option("--subsample", 200_000, "Completed jobs used for the KS/AD distances.")
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Run the heuristics on trace windows and on synthetic jobsets.",
)
@count_option("--check-jobsets", 30, "Jobsets per side.")
@click.option("--check-load", type=LOAD, help="Offered load of the check (default: matched).")
@seed_option("Seed of subsamples and the check.")
@cluster_options
@output_option("Directory for model.json and the fit report.", file_okay=False)
def fit_cmd(
    jobs: Path,
    censored_column: str | None,
    families: tuple[str, ...],
    selection: str,
    demand_classes: int,
    window: int | None,
    holdout: float,
    subsample: int,
    check: bool,
    check_jobsets: int,
    check_load: float | None,
    seed: int,
    slots: int,
    horizon: int,
    output: Path,
) -> None:
    """Fit a workload model to the JobSet JOBS; write OUTPUT/model.json and a fit report.

    Generate from it with `schedlab generate fitted --model OUTPUT/model.json --load 0.9 ...`.
    A JobSet with DAGs (parents, dag) also gets its DAG shapes summarised (in the report and
    OUTPUT/dag_shape.csv) and fitted (OUTPUT/dag_shape.json, for `schedlab generate dag
    -p shape=fitted -p shape_model=OUTPUT/dag_shape.json`).
    """
    from schedlab.evaluation.fitting.check import heuristic_check
    from schedlab.evaluation.fitting.workload import fit
    from schedlab.jobset import JobSet
    from schedlab.loaders.workload.families import FAMILIES
    from schedlab.reports.fit_report import write_fit_report
    from schedlab.simulator.config import ClusterConfig

    t0 = time.perf_counter()
    js = JobSet.read_parquet(jobs)
    result = fit(
        js,
        censored=censored_column,
        families=families or FAMILIES,
        selection=selection,  # type: ignore[arg-type]
        demand_classes=demand_classes,
        window=window,
        holdout=holdout,
        subsample=subsample,
        seed=seed,
    )
    model_path = output / "model.json"
    result.save(model_path)
    m = result.model
    click.echo(
        f"fitted {len(js):,} jobs in {time.perf_counter() - t0:.1f} s: durations "
        f"{m.durations.family} ({selection.upper()}), arrivals "
        f"{result.arrivals.filter(result.arrivals['selected'])['model'][0]}; "
        f"wrote {model_path}"
    )
    dags = _fit_dags(js, output) if {"parents", "dag"} <= set(js.jobs.columns) else None
    outcome = None
    if check:
        config = ClusterConfig(slots=slots, horizon=horizon)
        outcome = heuristic_check(
            js, model_path, n_jobsets=check_jobsets, load=check_load, seed=seed, config=config
        )
        click.echo(
            f"check at load {outcome.load:.3g}: Kendall tau of the heuristics' order "
            f"trace vs synthetic = {outcome.kendall_tau:.2f} by mean slowdown, "
            f"{outcome.kendall_tau_ranks:.2f} by average rank"
        )
    paths = write_fit_report(
        result, output, check=outcome, title=f"Workload fit of {jobs.name}", dags=dags
    )
    click.echo(f"report: {paths['html']}  (Markdown: {paths['md']})")


def _fit_dags(js: JobSet, output: Path) -> pl.DataFrame:
    """Fit the DAG shapes of ``js`` (``dag_shape.json``); echo and return their summary (the
    report's ``dag_shape.csv``)."""
    from schedlab.evaluation.fitting.dags import dag_shape_summary, fit_dag_shape

    shape = fit_dag_shape(js)
    shape.model.save(output / "dag_shape.json")
    summary = dag_shape_summary(shape)
    click.echo(f"DAG shapes of {shape.jobs.height:,} jobs (wrote dag_shape.json):")
    for row in summary.iter_rows(named=True):
        click.echo(
            f"  {row['quantity']}: mean {row['mean']:.3g}, median {row['median']:g}, "
            f"p95 {row['p95']:g}, max {row['max']}"
            if row["n"]
            else f"  {row['quantity']}: none"
        )
    return summary
