"""Self-describing, atomic Parquet files (design.md §2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from schedlab import io
from schedlab.errors import InfeasibleJobError, JobSetError, ResultsError, TraceFormatError
from schedlab.jobset import SCHEMA_VERSION, JobSet, JobSetMeta
from schedlab.results import Results

META = JobSetMeta(
    resources=("cpu", "mem"),
    capacity=(8.0, 16.0),
    units=("core", "GiB"),
    time_step_seconds=10.0,
    arrival_window=50,
    length_buckets={"short": (1, 3), "long": (10, 15)},
    provenance={
        "generator": "handmade",
        "params": {"a": [1, 2], "b": None, "c": True, "d": 0.25},
        "seed": 123,
        "dropped": {"negative_runtime": 2},
    },
)


def _jobset(shift: int = 0) -> JobSet:
    jobs = pl.DataFrame(
        {
            "jobset": [0, 0, 1],
            "job_id": [0, 1, 0],
            "arrival": [0 + shift, 3, 1],
            "duration": [2, 12, 1],
            "cpu": [1.5, 8.0, 0.0],
            "mem": [16.0, 2.0, 0.5],
            "category": ["a", None, "b"],
        }
    )
    return JobSet.create(jobs, META)


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_round_trip_equal_jobs_and_meta(tmp_path: Path) -> None:
    js = _jobset()
    path = tmp_path / "js.parquet"
    js.write_parquet(path)
    back = JobSet.read_parquet(path)
    assert back.jobs.equals(js.jobs)
    assert back.jobs.schema == js.jobs.schema
    assert back.meta == js.meta
    assert back.meta.length_buckets == {"short": (1, 3), "long": (10, 15)}
    assert isinstance(back.meta.length_buckets["short"], tuple)
    assert back.meta.units == ("core", "GiB")
    assert back.meta.capacity == (8.0, 16.0)
    assert back.meta.provenance["params"] == {"a": [1, 2], "b": None, "c": True, "d": 0.25}
    assert back.meta.time_step_seconds == 10.0
    assert back.meta.arrival_window == 50


def test_file_is_self_describing(tmp_path: Path) -> None:
    path = tmp_path / "js.parquet"
    _jobset().write_parquet(path)
    kv = pl.read_parquet_metadata(path)
    assert io.METADATA_KEY == "schedlab"
    meta = json.loads(kv["schedlab"])
    assert meta["kind"] == "jobset"
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["resources"] == ["cpu", "mem"]
    assert meta["length_buckets"] == {"short": [1, 3], "long": [10, 15]}
    assert meta["provenance"]["seed"] == 123


def test_write_creates_parent_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "js.parquet"
    _jobset().write_parquet(path)
    _jobset(shift=1).write_parquet(path)  # overwrite in place
    assert _listing(path.parent) == ["js.parquet"]
    assert JobSet.read_parquet(path).jobs.equals(_jobset(shift=1).jobs)


def test_failed_write_keeps_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "js.parquet"
    _jobset().write_parquet(path)
    before = path.read_bytes()

    def broken(self: pl.DataFrame, file: str | Path, **kwargs: object) -> None:
        Path(file).write_bytes(b"PAR1 half a file")
        msg = "disk full"
        raise OSError(msg)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        _jobset(shift=1).write_parquet(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["js.parquet"]
    assert JobSet.read_parquet(path).jobs.equals(_jobset().jobs)


def test_failed_first_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: pl.DataFrame, file: str | Path, **kwargs: object) -> None:
        Path(file).write_bytes(b"junk")
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(KeyboardInterrupt):
        _jobset().write_parquet(tmp_path / "js.parquet")
    assert _listing(tmp_path) == []


def test_write_text_atomic(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    io.write_text_atomic(path, '{"é": 1}')
    io.write_text_atomic(path, '{"é": 2}')
    assert path.read_text(encoding="utf-8") == '{"é": 2}'
    assert _listing(tmp_path) == ["config.json"]


def test_plain_parquet_without_metadata(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    _jobset().jobs.write_parquet(path)
    with pytest.raises(TraceFormatError, match=re.escape(f"{path}: Parquet file has no schedlab")):
        JobSet.read_parquet(path)


def test_not_a_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    path.write_text("jobset,job_id\n0,0\n")
    with pytest.raises(TraceFormatError, match=re.escape(f"{path}: not a readable Parquet file")):
        JobSet.read_parquet(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.parquet"
    with pytest.raises(TraceFormatError, match=re.escape(f"{path}: no such file")):
        JobSet.read_parquet(path)


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=re.escape(f"{tmp_path}: no such file")):
        JobSet.read_parquet(tmp_path)


def test_results_file_read_as_jobset(tmp_path: Path) -> None:
    path = tmp_path / "results.parquet"
    Results(
        pl.DataFrame({"policy": ["sjf"], "jobset": [0]}), {"policies": {"sjf": {}}}
    ).write_parquet(path)
    with pytest.raises(
        TraceFormatError,
        match=re.escape(f"{path}: expected a schedlab jobset file, found kind 'results'"),
    ):
        JobSet.read_parquet(path)
    with pytest.raises(ResultsError, match=r"results\.parquet: missing column\(s\) \['job_id'"):
        Results.read_parquet(path)  # results are checked on read (schedlab.results_check)


def test_jobset_file_read_as_results(tmp_path: Path) -> None:
    path = tmp_path / "js.parquet"
    _jobset().write_parquet(path)
    with pytest.raises(TraceFormatError, match="found kind 'jobset'"):
        Results.read_parquet(path)


def test_unsupported_schema_version(tmp_path: Path) -> None:
    js = _jobset()
    path = tmp_path / "future.parquet"
    io.write_parquet(js.jobs, path, {**js.meta.to_json(), "schema_version": 99})
    expected = re.escape(f"{path} (metadata): schema_version: 99 is not supported")
    with pytest.raises(JobSetError, match=expected) as info:
        JobSet.read_parquet(path)
    assert not isinstance(info.value, TraceFormatError)


def test_read_validates_the_rows(tmp_path: Path) -> None:
    js = _jobset()
    path = tmp_path / "bad.parquet"
    jobs = js.jobs.with_columns(
        pl.when(pl.col("job_id") == 1).then(0).otherwise("duration").alias("duration")
    )
    io.write_parquet(jobs, path, js.meta.to_json())
    with pytest.raises(
        JobSetError,
        match=re.escape(f"{path}: column 'duration' value 0 at row 1 (jobset 0, job_id 1)"),
    ):
        JobSet.read_parquet(path)


def test_read_checks_demand_against_file_capacity(tmp_path: Path) -> None:
    js = _jobset()
    path = tmp_path / "small.parquet"
    meta = {**js.meta.to_json(), "capacity": [8.0, 4.0]}
    io.write_parquet(js.jobs, path, meta)
    with pytest.raises(InfeasibleJobError, match=re.escape(f"{path}: job at row 0")):
        JobSet.read_parquet(path)


def test_check_writable_probes_without_leaving_files(tmp_path: Path) -> None:
    from schedlab.io import check_writable

    assert (
        check_writable(tmp_path / "new" / "deeper" / "f.parquet")
        == tmp_path / "new" / "deeper" / "f.parquet"
    )
    assert list(tmp_path.iterdir()) == []  # nor the folders it made to probe
    check_writable(tmp_path / "dir", directory=True)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    check_writable(tmp_path / "kept", directory=True)
    assert (tmp_path / "kept").is_dir()  # a folder that was there stays


def test_check_writable_names_the_problem(tmp_path: Path) -> None:
    from schedlab.errors import OutputError
    from schedlab.io import check_writable

    a_file = tmp_path / "f"
    a_file.write_text("")
    with pytest.raises(OutputError, match=r"f: is a directory|is a file, not a directory"):
        check_writable(a_file / "x.parquet")
    with pytest.raises(OutputError, match=r"is a directory; expected a file"):
        check_writable(tmp_path)
    with pytest.raises(OutputError, match=r"exists and is not a directory"):
        check_writable(a_file, directory=True)
    assert isinstance(OutputError("x"), OSError)
