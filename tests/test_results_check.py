"""Results validated on read, like JobSets and model files (issue 36): every tampered results
file is one ``Error:`` line naming the file, the column and the row, never a report drawn from
it or a traceback; and a report of a DAG workload draws its schedules (a task's arrival is its
ready time, which differs between policies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import io
from schedlab.errors import ResultsError
from schedlab.registry import make_policy
from schedlab.results import Results
from schedlab.results_check import check_table
from schedlab.simulator.run import simulate
from tests.cli_helpers import run_fail, run_ok
from tests.dag_helpers import jobset as dag_jobset
from tests.dag_helpers import random_dag_jobs

matplotlib.use("agg")


@pytest.fixture(scope="module")
def results(small_jobs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("res") / "res.parquet"
    run_ok("simulate", str(small_jobs), "--policy", "sjf", "--policy", "fcfs", "-o", str(path))
    return path


def tampered(results: Path, tmp_path: Path, change: Any) -> Path:
    table, meta = io.read_parquet(results, "results")
    path = tmp_path / "t.parquet"
    io.write_parquet(change(table), path, meta)
    return path


def at_row(col: str, value: Any, row: int = 3) -> Any:
    def change(t: pl.DataFrame) -> pl.DataFrame:
        index = pl.int_range(pl.len())
        return t.with_columns(pl.when(index == row).then(value).otherwise(pl.col(col)).alias(col))

    return change


CASES = {
    "null wait": (at_row("wait", None), r"column 'wait' has a missing value at row 3"),
    "negative wait": (at_row("wait", -5), r"column 'wait' value -5 at row 3 .*start − arrival"),
    "NaN slowdown": (at_row("slowdown", float("nan")), r"column 'slowdown' value nan at row 3"),
    "start before arrival": (
        at_row("start", pl.col("arrival") - 3),
        r"column 'start' value \d+ at row 3 \(policy 'sjf', jobset 0, job_id \d+\) is before",
    ),
    "finish before start": (
        at_row("finish", pl.col("start") - 1),
        r"column 'finish' value \d+ at row 3 .* is before its start",
    ),
    "duplicated rows": (
        lambda t: pl.concat([t, t.slice(5, 1)]),
        r"row \d+ \(policy 'sjf', jobset 0, job_id \d+\) is repeated",
    ),
    "no policy column": (lambda t: t.drop("policy"), r"missing column\(s\) \['policy'\]"),
    "no finish column": (lambda t: t.drop("finish"), r"missing column\(s\) \['finish'\]"),
    "string finish": (
        lambda t: t.with_columns(pl.col("finish").cast(pl.String)),
        r"column 'finish' is String, expected whole numbers",
    ),
    "zero rows": (lambda t: t.head(0), r"holds no result row"),
    "negative load": (at_row("load", -0.5), r"column 'load' value -0.5 at row 3"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tampered_results_are_one_line_naming_file_column_row(
    case: str, results: Path, tmp_path: Path
) -> None:
    change, message = CASES[case]
    path = tampered(results, tmp_path, change)
    with pytest.raises(ResultsError, match=rf"t\.parquet: {message}"):
        Results.read_parquet(path)
    for command in (["report", str(path), "-o", str(tmp_path / "out")], ["export", str(path)]):
        out = run_fail(*command, *(["-o", str(tmp_path / "x.csv")] if "export" in command else []))
        lines = [line for line in out.splitlines() if line.startswith("Error:")]
        assert len(lines) == 1, out
        assert "t.parquet:" in lines[0]
        assert "warning" not in out.lower()
    assert not (tmp_path / "out" / "report.html").exists()


def test_a_truncated_file_is_one_line(results: Path, tmp_path: Path) -> None:
    path = tmp_path / "cut.parquet"
    path.write_bytes(results.read_bytes()[: results.stat().st_size // 3])
    out = run_fail("report", str(path), "-o", str(tmp_path / "out"))
    assert "cut.parquet: not a readable Parquet file" in out


def test_metadata_must_name_the_tables_policies(results: Path, tmp_path: Path) -> None:
    table, meta = io.read_parquet(results, "results")
    io.write_parquet(table, tmp_path / "m.parquet", {**meta, "policies": {"sjf": {}}})
    with pytest.raises(ResultsError, match=r"m\.parquet: policies \['fcfs'\] of column 'policy'"):
        Results.read_parquet(tmp_path / "m.parquet")


@settings(max_examples=30, deadline=None)
@given(row=st.integers(0, 57), shift=st.integers(1, 10**6))
def test_any_start_moved_before_its_arrival_is_caught(results: Path, row: int, shift: int) -> None:
    table, _ = io.read_parquet(results, "results")
    row = row % table.height
    moved = at_row("start", pl.col("arrival") - shift, row)(table)
    with pytest.raises(ResultsError, match=rf"column 'start' value -?\d+ at row {row} "):
        check_table(moved, source="x")


def test_a_dag_report_draws_its_schedules(tmp_path: Path) -> None:
    js = dag_jobset(random_dag_jobs(3, n_jobsets=1, dags=4, tasks=10))
    res = simulate(js, [make_policy("sjf"), make_policy("cpf")])
    orders = [
        res.table.filter(pl.col("policy") == p).sort("arrival", "job_id").get_column("job_id")
        for p in ("sjf", "cpf")
    ]
    assert orders[0].to_list() != orders[1].to_list()  # ready times differ between policies
    res.write_parquet(tmp_path / "dag.parquet")
    pair = ["--policy", "sjf", "--policy", "cpf"]
    run_ok("show", str(tmp_path / "dag.parquet"), *pair, "-o", str(tmp_path / "diff.png"))
    run_ok("report", str(tmp_path / "dag.parquet"), "--reference", "cpf", "-o", str(tmp_path / "r"))
    assert (tmp_path / "r" / "schedule_diff.png").is_file()
