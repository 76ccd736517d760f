"""A CSV job loader, written as schedlab's built-in loaders are: polars expressions, one
reason per dropped row, and schedlab's shared steps (windows, sampling, the drop report)."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.archive import text_path
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.textio import read_lines
from schedlab.loaders.traces.transform import TraceOptions, finish, first_reason

FIELDS = ("submit", "runtime", "cpus")
"""The columns, in file order: submit time (s), run time (s), processors."""


def read_jobs_csv(
    source: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    machine_cpus: float = 64.0,
) -> LoadResult:
    """Load a CSV of ``submit,runtime,cpus`` (seconds, seconds, processors) with a header line.

    Parameters
    ----------
    source
        The CSV file (plain or gzip).
    options
        Shared load options (time step, window, sampling, jobset split, strict).
    machine_cpus
        Processors of the one machine the jobs run on.

    Raises
    ------
    TraceFormatError
        No header line, or no row kept (with ``options.strict``, the first malformed line).
    """
    options = options or TraceOptions()
    lines = read_lines(text_path(source, max_bytes=options.max_decompressed))
    lines = lines.filter(pl.col("raw").str.strip_chars() != "")
    if lines.height == 0 or lines.item(0, "raw").strip() != ",".join(FIELDS):
        msg = f"{source}: the first line must be the header {','.join(FIELDS)}"
        raise TraceFormatError(msg)
    tokens = pl.col("raw").str.split(",")
    rows = lines.slice(1).with_columns(
        tokens.list.len().alias("n_fields"),
        *(
            tokens.list.get(i, null_on_oob=True)
            .str.strip_chars()
            .cast(pl.Float64, strict=False)
            .alias(f)
            for i, f in enumerate(FIELDS)
        ),
    )
    numbers = pl.all_horizontal(pl.col(f).is_finite() for f in FIELDS).fill_null(False)
    rows = first_reason(
        rows,
        [
            (pl.col("encoding").is_not_null(), "invalid_utf8", pl.col("encoding")),
            (
                pl.col("n_fields") != 3,
                "wrong_field_count",
                pl.format("expected 3 comma-separated fields, found {}", "n_fields"),
            ),
            (~numbers, "not_a_number", pl.lit("submit, runtime and cpus must be numbers")),
            (
                (pl.col("runtime") < 0) | (pl.col("cpus") <= 0),
                "negative_value",
                pl.lit("runtime must be >= 0 and cpus > 0"),
            ),
        ],
    ).with_columns(
        pl.col("submit").alias("arrival_s"),
        pl.col("runtime").alias("duration_s"),
        pl.col("cpus").alias("cpu"),
        pl.col("line").cast(pl.Utf8).alias("source_id"),
    )
    return finish(
        rows,
        source=str(source),
        loader="jobs-csv",
        resources=["cpu"],
        machine_size=[machine_cpus],
        units=["processor"],
        options=options,
        notes=["line 1 is the header"],
    )


read_jobs_csv.sample = Path(__file__).parent / "data" / "sample.csv"  # type: ignore[attr-defined]
"""A small valid file, for ``schedlab check plugins``."""
