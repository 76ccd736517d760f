"""Requested times and estimates bounded where they enter (issue 36): an SWF requested time of
1e30, 2^63 or past 2^59 steps is dropped as ``out_of_range`` naming the field, or refused under
``strict`` naming the line, instead of a polars conversion traceback; requests that make a
jobset's span pass the bound are one line; a generator's ``estimate_factor`` that would pass it
names the parameter; a JobSet file with a null or huge estimate names the file, column and row."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from schedlab import io
from schedlab.errors import JobSetError, ParameterError, TraceFormatError
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.traces.swf import read_swf
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.registry import generators
from schedlab.timebounds import MAX_TIME
from tests.cli_helpers import run_fail, run_ok
from tests.strategies import jobs_frame

HEADER = "; MaxProcs: 100\n"


def swf_line(i: int, requested: str, run: str = "50") -> str:
    """Job ``i`` arriving at ``100 + 10 i`` s, running ``run`` s, requesting ``requested`` s."""
    return f"{i} {100 + 10 * i} 5 {run} 4 -1 -1 4 {requested} -1 1 1 1 -1 1 -1 -1 -1"


def swf(tmp_path: Path, *requests: str) -> Path:
    path = tmp_path / "log.swf"
    path.write_text(HEADER + "\n".join(swf_line(i, r) for i, r in enumerate(requests, 1)) + "\n")
    return path


@pytest.mark.parametrize(
    "requested", ["1e30", "9223372036854775808", "9223372036854775807", str(2**60)]
)
def test_a_huge_requested_time_is_dropped_naming_the_field(requested: str, tmp_path: Path) -> None:
    path = swf(tmp_path, "100", "200", requested, "300")
    result = read_swf(path)
    assert result.report.dropped == {"out_of_range": 1}
    assert result.report.sample_lines("out_of_range") == [4]
    message = result.report.samples.get_column("message")[0]
    assert message.startswith("requested time (estimate)")
    assert "2^59 steps of 1 s" in message
    assert result.jobs.jobs.get_column("estimate").to_list() == [100, 200, 300]
    with pytest.raises(TraceFormatError, match=r"line 4 of .*log\.swf: requested time"):
        read_swf(path, options=TraceOptions(strict=True))


def test_the_cli_loads_it_in_one_line(tmp_path: Path) -> None:
    path = swf(tmp_path, "100", "1e30")
    out = run_ok("load", "swf", str(path), "-o", str(tmp_path / "j.parquet"))
    assert "out_of_range" in out
    out = run_fail("load", "swf", str(path), "--strict", "-o", str(tmp_path / "k.parquet"))
    assert "line 3 of" in out
    assert "requested time (estimate) 1e+30 s" in out


def test_requests_that_pass_the_span_are_one_line(tmp_path: Path) -> None:
    near = str(MAX_TIME // 2)
    path = swf(tmp_path, near, near, near)
    with pytest.raises(JobSetError, match=r"log\.swf: jobset 0: .*max\(duration, estimate\)"):
        read_swf(path)
    assert len(read_swf(path, options=TraceOptions(jobset_size=1)).jobs.jobset_ids) == 3


def test_a_generators_estimate_factor_past_the_bound_names_it() -> None:
    gen = generators.make("deeprm", estimate="factor", estimate_factor=1e300)
    with pytest.raises(ParameterError, match=r"estimate_factor=1e\+300: .*lower estimate_factor"):
        gen.generate(0.5, n_jobsets=2, seed=0)
    args = ["--load", "0.5", "-p", "estimate=factor", "-p", "estimate_factor=1e300"]
    out = run_fail("generate", "deeprm", *args, "-o", "x.parquet")
    assert "estimate_factor=1e+300" in out


@pytest.mark.parametrize(
    ("estimate", "message"),
    [
        (None, r"column 'estimate' has a missing value at row 1 \(jobset 0, job_id 2\)"),
        (2**63 - 1, r"column 'estimate' value 9223372036854775807 at row 1 .* exceeds 2\^59"),
    ],
)
def test_a_jobset_file_with_a_bad_estimate_names_file_column_row(
    estimate: int | None, message: str, tmp_path: Path
) -> None:
    meta = JobSetMeta(resources=("cpu",), capacity=(10.0,))
    jobs = jobs_frame(
        first_id=1,
        arrival=[0, 1],
        duration=[3, 3],
        cpu=[1.0, 1.0],
        estimate=pl.Series([4, estimate], dtype=pl.Int64),
    )
    path = tmp_path / "jobs.parquet"
    io.write_parquet(jobs, path, meta.to_json())  # written unvalidated
    with pytest.raises(JobSetError, match=rf"jobs\.parquet: {message}"):
        JobSet.read_parquet(path)
    out = run_fail("simulate", str(path), "--policy", "fcfs+conservative", "-o", "x.parquet")
    assert "jobs.parquet: column 'estimate'" in out
