"""``schedlab report``, ``show`` and ``export``: reports, schedule figures and per-job tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from schedlab.cli.options import Command, force_option, output_option, seed_option

FIGURE_STYLES = ("screen", "paper")
VECTOR_FORMATS = ("pdf", "svg")
DPI_HELP = "Resolution of the PNG figures (the HTML embeds lighter copies)."


def _style_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--dpi and --style, shared by `report` and `show`."""
    fn = click.option(
        "--style",
        type=click.Choice(FIGURE_STYLES),
        default="screen",
        show_default=True,
        help="screen: figures for the HTML report; paper: one column of a two-column paper "
        "(3.3 in wide, 8 pt text).",
    )(fn)
    return click.option(
        "--dpi", default=200, show_default=True, type=click.IntRange(min=1), help=DPI_HELP
    )(fn)


def _jobs_option(purpose: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--jobs",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=f"JobSet a results file was simulated on (not needed for an experiment directory), "
        f"{purpose}.",
    )


REPORT_FORCE_HELP = (
    "Write into OUTPUT although it holds another study's output (the report of another results "
    "file or experiment, or an experiment directory other than RESULTS); refused without it."
)


def _check_reference(reference: str, results: Path) -> None:
    """``--reference`` must name a policy of ``results`` (one of any workload of an experiment);
    else a usage error with the closest name."""
    import polars as pl

    from schedlab.param_checks import did_you_mean

    path = results / "results.parquet" if results.is_dir() else results
    if not path.is_file():
        return  # reading the results says what is wrong with them
    try:
        ran = pl.scan_parquet(path).select(pl.col("policy").unique()).collect().to_series()
    except (pl.exceptions.PolarsError, OSError):
        return  # reading the results says what is wrong with them
    names = sorted(str(p) for p in ran.to_list())
    if reference not in names:
        hint = did_you_mean(reference, names)
        msg = f"{reference!r} is not a policy of {results}{hint} (policies: {', '.join(names)})"
        raise click.BadParameter(msg, param_hint="'--reference'")


@click.command("report", cls=Command)
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@output_option("Directory for the report.", file_okay=False, default=Path("out"))
@force_option(REPORT_FORCE_HELP)
@seed_option("Seed of the bootstrap (default: the experiment's, or 0).", default=None)
@click.option("--reference", help="Reference policy (default: the spec's, or the first policy).")
@_jobs_option("for utilisation, queue and fragmentation over time")
@_style_options
@click.option(
    "--vector",
    multiple=True,
    type=click.Choice(VECTOR_FORMATS),
    help="Also write every figure in this vector format (repeatable; default: pdf and svg with "
    "--style paper, none with --style screen).",
)
def report_cmd(
    results: Path,
    output: Path,
    force: bool,
    seed: int | None,
    reference: str | None,
    jobs: Path | None,
    dpi: int,
    style: str,
    vector: tuple[str, ...],
) -> None:
    """Render RESULTS (a results Parquet file or an experiment directory) as HTML and Markdown.

    CSV and LaTeX tables and the figures (PNG; PDF and SVG with --style paper or --vector) are
    written beside the report, and OUTPUT/report-source.json names RESULTS. OUTPUT holding
    another study's output (another source's report, another experiment) is refused unless
    --force.
    """
    from schedlab.reports.report_source import check_report_folder, record_report_source

    check_report_folder(output, results, force=force)
    if reference is not None:
        _check_reference(reference, results)
    record_report_source(output, results)
    figures: dict[str, Any] = {"dpi": dpi, "style": style, "vector": vector or None}
    if results.is_dir():
        from schedlab.reports.experiment import write_experiment_report

        paths = write_experiment_report(results, output, seed=seed, reference=reference, **figures)
    else:
        from schedlab.jobset import JobSet
        from schedlab.reports.render import write_report
        from schedlab.results import Results

        res = Results.read_parquet(results)
        js = JobSet.read_parquet(jobs) if jobs is not None else None
        settings: dict[str, Any] = {} if seed is None else {"seed": seed}  # default: its own
        paths = write_report(res, output, reference=reference, jobs=js, **figures, **settings)
    click.echo(f"report: {paths['html']}  (Markdown: {paths['md']})")


@click.command("show", cls=Command)
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--jobset",
    type=int,
    help="Jobset id (default: the median one by the first "
    "policy's average slowdown at the highest offered load).",
)
@click.option(
    "--policy",
    "policy_specs",
    multiple=True,
    metavar="NAME|SPEC",
    help="Policy, by its name in the results or the spec it was run with, e.g. sjf or "
    "deeprm:deeprm-1.3 (repeatable; two draw their difference; default: the first).",
)
@click.option("--workload", help="Workload of an experiment directory (default: its only one).")
@click.option(
    "--window",
    metavar="FROM:TO",
    help="Times of the Gantt charts since the jobset's start, e.g. 36h:48h or 2d:3d (units s, "
    "min, h, d; plain numbers are steps). Default: all of a jobset of up to 600 jobs, else the "
    "window where the first policy's queued work is largest.",
)
@_jobs_option("for utilisation, queue and fragmentation")
@_style_options
@output_option("Figure file: .pdf, .svg or .png.")
def show_cmd(
    results: Path,
    jobset: int | None,
    policy_specs: tuple[str, ...],
    workload: str | None,
    window: str | None,
    jobs: Path | None,
    dpi: int,
    style: str,
    output: Path,
) -> None:
    """Draw the schedules of one jobset of RESULTS (a results file or an experiment directory).

    One Gantt chart per policy (jobs in arrival order: waiting, then running; one lane per
    machine on a cluster of machines), the change of each job's finish time between two
    policies, and utilisation per resource, queue length and fragmentation over time.
    """
    from schedlab.reports.experiment import load_results
    from schedlab.reports.show import parse_window, write_schedule_figure

    res, js = load_results(results, workload=workload, jobs=jobs)
    step = res.meta.get("jobset", {}).get("time_step_seconds")
    try:
        steps = parse_window(window, step) if window is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--window") from None
    path = write_schedule_figure(
        res,
        output,
        jobset=jobset,
        policies=policy_specs,
        jobs=js,
        window=steps,
        dpi=dpi,
        style=style,
    )
    click.echo(f"wrote {path}")


@click.command("export", cls=Command)
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "ndjson", "swf", "batsim"]),
    default="csv",
    show_default=True,
    help="csv/ndjson: every per-job row; swf: one schedule as an SWF log (simulated waits); "
    "batsim: one schedule as Batsim's _jobs.csv (evalys reads both).",
)
@_jobs_option("to add the jobs' demands")
@click.option("--policy", help="Policy of the schedule (swf, batsim; default: the only one).")
@click.option(
    "--jobset", type=int, help="Jobset of the schedule (swf, batsim; default: the only one)."
)
@click.option("--workload", help="Workload of an experiment directory (swf, batsim).")
@output_option("File to write; csv/ndjson put the metadata in <name>.meta.json beside it.")
def export_cmd(
    results: Path,
    fmt: str,
    jobs: Path | None,
    policy: str | None,
    jobset: int | None,
    workload: str | None,
    output: Path,
) -> None:
    """Write the per-job results of RESULTS (a results file or an experiment directory) for
    other tools: one row per policy and job, with the jobs' demands when known; or one
    schedule (one policy on one jobset) as an SWF log or a Batsim _jobs.csv."""
    from schedlab.reports.export import export_results

    paths = export_results(
        results, output, format=fmt, jobs=jobs, policy=policy, jobset=jobset, workload=workload
    )
    meta = f" (metadata: {paths['meta']})" if "meta" in paths else ""
    click.echo(f"wrote {paths['data']}{meta}")
