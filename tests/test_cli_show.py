"""``schedlab show`` and ``export`` from the command line, on a small simulated JobSet."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.cli_helpers import run_ok


def test_show_and_export(tmp_path: Path) -> None:
    jobs, results = tmp_path / "jobs.parquet", tmp_path / "results.parquet"
    run_ok("generate", "deeprm", "--load", "0.9", "--jobsets", "3", "--seed", "2", "-o", str(jobs))
    run_ok("simulate", str(jobs), "--policy", "sjf", "--policy", "fcfs", "-o", str(results))
    figure = tmp_path / "fig.pdf"
    out = run_ok("show", str(results), "--jobs", str(jobs), "--jobset", "1", "--policy", "sjf",
                 "--policy", "fcfs", "-o", str(figure))  # fmt: skip
    assert str(figure) in out
    assert figure.read_bytes().startswith(b"%PDF")
    csv = tmp_path / "jobs.csv"
    run_ok("export", str(results), "--jobs", str(jobs), "-o", str(csv))
    table = pl.read_csv(csv)
    assert {"policy", "jobset", "job_id", "start", "finish", "machine", "cpu", "mem"} <= set(
        table.columns
    )
    assert table.height == 2 * pl.read_parquet(jobs).height
