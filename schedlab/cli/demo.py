"""``schedlab demo`` (``make run``): the DeepRM study as an experiment, with its report."""

from __future__ import annotations

import time
from pathlib import Path

import click

from schedlab.cli.experiment import FORCE_HELP, fail_on_failures, summary
from schedlab.cli.options import (
    Command,
    cluster_options,
    count_option,
    force_option,
    loads_option,
    output_option,
    seed_option,
)


@click.command("demo", cls=Command)
@count_option("--jobsets", 100, "Jobsets per load.")
@seed_option("Seed of workload and bootstrap.")
@loads_option("Offered loads (default 10%..190% in steps of 20%).")
@cluster_options
@output_option("Directory for jobsets, results and report.", file_okay=False, default=Path("out"))
@force_option(
    FORCE_HELP + " It also lets the study's report replace the report of another study "
    "(schedlab report RESULTS -o OUTPUT) there."
)
def demo_cmd(
    jobsets: int,
    seed: int,
    loads: list[float],
    slots: int,
    horizon: int,
    output: Path,
    force: bool,
) -> None:
    """The DeepRM study: every heuristic (and shipped DeepRM checkpoints) at loads 10%–190%.

    Writes the study as an experiment spec (OUTPUT/spec.toml), runs it with the experiment
    runner into OUTPUT and writes the report there. OUTPUT holding a study with other
    settings, or the report of another study, is refused unless --force.
    """
    import tomllib

    from schedlab.evaluation.demo import DEMO_LOADS, demo_spec
    from schedlab.evaluation.runner import check_directory, run_experiment
    from schedlab.evaluation.spec import parse_spec_dict
    from schedlab.io import write_text_atomic
    from schedlab.reports.experiment import write_experiment_report
    from schedlab.reports.report_source import check_report_folder, record_report_source

    t0 = time.perf_counter()
    check_report_folder(output, output, force=force, what="the DeepRM study of schedlab demo")
    text = demo_spec(
        jobsets=jobsets, seed=seed, loads=list(loads or DEMO_LOADS), slots=slots, horizon=horizon
    )
    spec_path = output / "spec.toml"
    spec = parse_spec_dict(tomllib.loads(text), base_dir=output.resolve(), source=str(spec_path))
    replaced = check_directory(spec, output, force=force)
    record_report_source(output, output)
    write_text_atomic(spec_path, text)
    outcome = run_experiment(spec, output)
    summary(outcome)
    if replaced is not None:
        click.echo(f"moved the previous study's files to {replaced}")
    for name, why in spec.skipped:  # the shipped DeepRM policies without the learned extra
        click.echo(f"not run: {name} ({why})")
    paths = write_experiment_report(output, output)
    headline(output / "runs.csv", spec.report.focus_load)
    click.echo(f"done in {time.perf_counter() - t0:.1f} s. Open the report: {paths['html']}")
    click.echo(f"(Markdown: {paths['md']}; tables: {output}/*.csv)")
    fail_on_failures(outcome)


def headline(runs_csv: Path, load: float | None) -> None:
    """Print the policies' mean slowdown at ``load``, best first."""
    import polars as pl

    runs = pl.read_csv(runs_csv).filter(pl.col("status") == "done")
    if load is None or runs.height == 0:
        return
    at = runs.filter((pl.col("load") - load).abs() < 1e-9).sort("mean_slowdown")
    click.echo(f"average job slowdown at offered load {100 * load:g}% (mean over jobsets):")
    width = max(12, *(len(p) for p in at.get_column("policy")))
    for row in at.iter_rows(named=True):
        click.echo(
            f"  {row['policy']:{width}s} {row['mean_slowdown']:8.2f}  ({row['n_jobsets']} jobsets)"
        )
