"""``schedlab load`` (a trace into a JobSet) and ``schedlab traces fetch``."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import click

from schedlab.cli.config_options import cli_message, config_options, option_name, with_options
from schedlab.cli.options import Command, Group, RegistryName, output_option, param_option
from schedlab.loaders.traces.options import TraceOptions
from schedlab.registry import loaders


@click.command("load", cls=Command)
@click.argument("loader", type=RegistryName(loaders))
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_options(config_options(TraceOptions))
@param_option("Format option, e.g. -p granularity=job (see the loader's docstring).")
@click.option("--no-cache", is_flag=True, help="Parse again even if a cached conversion exists.")
@output_option("JobSet Parquet file to write.")
def load_cmd(
    loader: str,
    path: Path,
    params: dict[str, Any],
    no_cache: bool,
    output: Path,
    **options: Any,
) -> None:
    """Load a trace at PATH with LOADER into a JobSet, reporting every dropped or fixed row.

    LOADER is a name of `schedlab list loaders` (plug-ins included) or package.module:attr.
    The options are the fields of TraceOptions (schedlab.loaders.TraceOptions)."""
    from schedlab.loaders import load_trace

    kwargs = loaders.check(loader, params, where="-p")
    try:
        trace_options = TraceOptions(**options)
    except ValueError as exc:  # name the options, not TraceOptions' fields
        names = {f.name: option_name(f.name) for f in dataclasses.fields(TraceOptions)}
        raise click.UsageError(cli_message(str(exc), names)) from exc
    t0 = time.perf_counter()
    result, cached = load_trace(
        loader, path, options=trace_options, use_cache=not no_cache, **kwargs
    )
    js = result.jobs
    js.write_parquet(output)
    click.echo(result.summary())
    how = "from the cache" if cached else "parsed"
    click.echo(f"wrote {output} ({how}, {time.perf_counter() - t0:.1f} s)")


@click.group("traces", cls=Group)
def traces_group() -> None:
    """Public traces: fetch them from their official locations."""


@traces_group.command("fetch")
@click.argument("dataset")
@click.option(
    "--files",
    "files",
    multiple=True,
    default=("batch_task",),
    show_default=True,
    help="Files of the dataset to fetch (repeatable).",
)
@click.option(
    "--dest",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("traces-data"),
    show_default=True,
    help="Directory to download into.",
)
@click.option("--base-url", help="Fetch from this location instead of the official ones.")
def fetch_cmd(dataset: str, files: tuple[str, ...], dest: Path, base_url: str | None) -> None:
    """Download DATASET (e.g. alibaba2018), resuming and verifying published checksums."""
    from schedlab.traces.fetch import fetch

    for path in fetch(dataset, files, dest=dest, base_url=base_url):
        click.echo(f"verified {path}")
