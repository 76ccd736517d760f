"""``schedlab report``: HTML and Markdown reports of results or of an experiment directory."""

from __future__ import annotations

from pathlib import Path

import click

from schedlab.cli.options import output_option


@click.command("report")
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@output_option("Directory for the report.", file_okay=False, default=Path("out"))
@click.option("--seed", type=int, help="Seed of the bootstrap (default: the experiment's, or 0).")
@click.option("--reference", help="Reference policy (default: the spec's, or the first policy).")
def report_cmd(results: Path, output: Path, seed: int | None, reference: str | None) -> None:
    """Render RESULTS (a results Parquet file or an experiment directory) as HTML and Markdown.

    CSV tables and PNG figures are written beside the report.
    """
    if results.is_dir():
        from schedlab.reports.experiment import write_experiment_report

        paths = write_experiment_report(results, output, seed=seed, reference=reference)
    else:
        from schedlab.reports.render import write_report
        from schedlab.results import Results

        res = Results.read_parquet(results)
        paths = write_report(res, output, seed=seed or 0, reference=reference)
    click.echo(f"report: {paths['html']}  (Markdown: {paths['md']})")
