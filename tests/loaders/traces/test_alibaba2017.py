"""Alibaba cluster-trace-v2017 batch_task loader: statuses, bad input, v2018 files, real table."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.alibaba2017 import MACHINE_MEM, TRACE_MACHINES, read_alibaba2017
from schedlab.loaders.traces.transform import TraceOptions
from tests.loader_helpers import (
    assert_file_refused,
    assert_one_counted_drop,
    assert_report,
    assert_strict_names_line,
    sample_lines,
    sample_messages,
)

DATA = Path(__file__).resolve().parents[2] / "data"
SMALL = DATA / "alibaba2017_small.csv"

GOOD = "100,160,1,1,3,Terminated,50,0.01\n"


def _csv(tmp_path: Path, *lines: str, name: str = "batch_task.csv") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


# -- the committed fixture: one line per case ----------------------------------------------------


SMALL_DROP_LINES = {
    "status_Failed": 3,
    "status_Waiting": 4,
    "status_Running": 5,
    "negative_duration": 6,
    "missing_value": 7,
    "wrong_field_count": 8,
    "not_a_number": 9,
    "exceeds_capacity": 10,
    "invalid_status": 11,
    "negative_demand": 12,
}
"""The fixture's dropped lines, one for each reason."""


def test_small_fixture_accounts_for_every_line() -> None:
    dropped = dict.fromkeys(SMALL_DROP_LINES, 1)
    fixed = {"zero_duration_as_one_step": 1}
    assert_report(read_alibaba2017(SMALL).report, read=13, kept=3, dropped=dropped, fixed=fixed)


@pytest.mark.parametrize(("reason", "line"), SMALL_DROP_LINES.items())
def test_small_fixture_drop_lines(reason: str, line: int) -> None:
    assert sample_lines(read_alibaba2017(SMALL), reason) == [line]


def test_small_fixture_jobs() -> None:
    js = read_alibaba2017(SMALL).jobs
    jobs = js.jobs
    assert jobs.get_column("source_id").to_list() == ["7/13", "1/1", "1/2"]
    assert jobs.get_column("arrival").to_list() == [0, 160, 160]  # first create time is -60
    assert jobs.get_column("duration").to_list() == [90, 60, 1]  # end = create -> 1 step
    assert jobs.get_column("cpu").to_list() == [0.5, 0.5, 1.0]  # plan_cpu 100 = 1 core
    assert jobs.get_column("mem").to_list() == [0.02, 0.01, 0.02]
    assert js.resources == ("cpu", "mem")
    assert (js.meta.machines, tuple(js.machine_capacity)) == (TRACE_MACHINES, (64.0, MACHINE_MEM))
    assert js.meta.provenance["trace_start_s"] == -60.0
    assert js.meta.provenance["alibaba2017"]["statuses"] == ["Terminated"]


def test_messages_name_the_values() -> None:
    messages = sample_messages(read_alibaba2017(SMALL))
    assert messages["not_a_number"] == "end_time is not a number: 7x0"
    assert messages["missing_value"] == "plan_cpu is empty"
    assert messages["negative_duration"] == "end_time=399 is before create_time=400"
    assert messages["wrong_field_count"] == "expected 8 comma-separated fields, found 7"
    assert messages["exceeds_capacity"] == "cpu=128.0 exceeds a machine's 64"


def test_all_statuses_and_running_without_end() -> None:
    result = read_alibaba2017(SMALL, statuses=("Terminated", "Failed", "Running", "Waiting"))
    report = result.report
    assert report.rows_kept == 4  # + the Failed task
    assert report.dropped["missing_value"] == 2  # the Waiting task has no plan_cpu either
    assert report.dropped["no_end_time"] == 1
    assert sample_lines(result, "no_end_time") == [5]
    assert "status_Failed" not in report.dropped


def test_statuses_validation() -> None:
    assert read_alibaba2017(SMALL, statuses="Terminated|Failed").report.rows_kept == 4
    with pytest.raises(ValueError, match="did you mean 'Terminated'"):
        read_alibaba2017(SMALL, statuses=("terminated",))


def test_strict_raises_on_first_malformed_line_not_on_selection() -> None:
    with pytest.raises(TraceFormatError, match=r"line 6 of .*alibaba2017_small\.csv: end_time"):
        read_alibaba2017(SMALL, options=TraceOptions(strict=True))


def test_machine_options_set_capacity(tmp_path: Path) -> None:
    path = _csv(tmp_path, GOOD, "800,860,5,10,1,Terminated,12800,0.01\n")
    one = TraceOptions(machines=1)
    result = read_alibaba2017(path, machine_cpu=96, machine_mem=1.0, options=one)
    assert result.report.dropped == {"exceeds_capacity": 1}
    assert result.jobs.meta.capacity == (96.0, 1.0)
    scaled = read_alibaba2017(path, options=TraceOptions(machines=2, slots_per_machine=10))
    assert scaled.report.dropped == {"exceeds_capacity": 1}  # 128 cores fit no 64-core machine
    assert (scaled.jobs.meta.machines, scaled.jobs.meta.capacity) == (2, (20.0, 20.0))
    assert scaled.jobs.jobs.get_column("cpu").to_list() == [50 / 100 * 10 / 64]


# -- bad input, one case at a time ---------------------------------------------------------------

BAD_LINES = [
    ("100,160,1,1,3,Terminated,50\n", "wrong_field_count"),
    ("100,160,1,1,3,Terminated,50,0.01,9\n", "wrong_field_count"),
    ("1e2x,160,1,1,3,Terminated,50,0.01\n", "not_a_number"),
    ("100,160,1,1,3,Terminated,fifty,0.01\n", "not_a_number"),
    ("100,99,1,1,3,Terminated,50,0.01\n", "negative_duration"),
    ("100,160,1,1,3,Terminated,50,\n", "missing_value"),
    (",160,1,1,3,Terminated,50,0.01\n", "missing_value"),
    ("100,160,1,1,3,Terminated,6500,0.01\n", "exceeds_capacity"),
    ("100,160,1,1,3,Terminated,50,0.9\n", "exceeds_capacity"),
    ("100,160,1,1,3,Terminated,50,-0.1\n", "negative_demand"),
    ("100,160,1,1,3,Finished,50,0.01\n", "invalid_status"),
    ("100,160,1,1,3,Failed,50,0.01\n", "status_Failed"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_LINES)
def test_bad_line_is_a_counted_drop_with_its_line(tmp_path: Path, bad: str, reason: str) -> None:
    assert_one_counted_drop(read_alibaba2017(_csv(tmp_path, GOOD, bad, GOOD)), reason, line=2)


MALFORMED = [(b, r) for b, r in BAD_LINES if r not in ("exceeds_capacity", "status_Failed")]


@pytest.mark.parametrize(("bad", "reason"), MALFORMED)
def test_bad_line_strict_names_file_and_line(tmp_path: Path, bad: str, reason: str) -> None:
    assert_strict_names_line(read_alibaba2017, _csv(tmp_path, GOOD, bad), 2, reason)


def test_crlf_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "batch_task.csv"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode() * 2 + b"\r\n")
    result = read_alibaba2017(path)
    assert result.report.rows_read == result.report.rows_kept == 2
    assert result.jobs.meta.provenance["alibaba2017"]["blank_lines"] == 1


REFUSED_FILES = {
    "empty": ("empty.csv", b"", r"empty\.csv: the file is empty"),
    "blank": ("blank.csv", b"\n\n", r"blank\.csv: no data lines"),
    "plain_text_named_gz": (
        "batch_task.csv.gz",
        GOOD.encode(),
        r"batch_task\.csv\.gz: the name says gzip",
    ),
    # xz magic, corrupt stream
    "binary": (
        "batch_task.csv",
        b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\xff" * 8,
        r"batch_task\.csv: corrupt or truncated",
    ),
}
"""Files the loader refuses, by case: ``(name, data, the error's pattern)``."""


@pytest.mark.parametrize(("name", "data", "match"), REFUSED_FILES.values(), ids=list(REFUSED_FILES))
def test_a_file_that_is_no_table_is_refused_naming_it(
    tmp_path: Path, name: str, data: bytes, match: str
) -> None:
    assert_file_refused(read_alibaba2017, tmp_path, name, data, match)


def test_gzip_and_tar_gz_load_like_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    raw = SMALL.read_bytes()
    gz = tmp_path / "batch_task.csv.gz"
    gz.write_bytes(gzip.compress(raw))
    tgz = tmp_path / "trace_201708.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, blob in [
            ("server_event.csv", b"0,1,add,,64,0.69,0.1\n"),
            ("batch_task.csv", raw),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    plain = read_alibaba2017(SMALL)
    for path in (gz, tgz):
        result = read_alibaba2017(path)
        assert result.jobs.jobs.equals(plain.jobs.jobs)
        assert result.report.dropped == plain.report.dropped
    with pytest.raises(TraceFormatError, match=r"expected member 'task\.csv' in the archive"):
        read_alibaba2017(tgz, member="task.csv")


# -- the wrong trace version ---------------------------------------------------------------------


def test_v2018_file_is_rejected() -> None:
    with pytest.raises(
        TraceFormatError,
        match=r"alibaba2017_given_v2018\.csv: this looks like Alibaba cluster-trace-v2018 "
        r"batch_task\.csv.*3 of 3 lines.*line 1: 'M1,12846\.0,j_3.*Use the `alibaba2018` loader",
    ):
        read_alibaba2017(DATA / "alibaba2017_given_v2018.csv")


def test_v2018_rows_in_a_v2017_file_are_counted_drops(tmp_path: Path) -> None:
    path = _csv(tmp_path, GOOD, "M1,12846.0,j_3,1,Terminated,157213,157295,100.0,0.3\n", GOOD)
    assert read_alibaba2017(path).report.dropped == {"wrong_field_count": 1}


def test_other_csv_is_not_v2017(tmp_path: Path) -> None:
    path = _csv(tmp_path, "a,b,c\n1,2,3\n", name="other.csv")
    with pytest.raises(TraceFormatError, match=r"other\.csv: not a cluster-trace-v2017 batch_task"):
        read_alibaba2017(path)


# -- the real table ------------------------------------------------------------------------------


def test_real_table_loads_end_to_end(v2017_csv: Path) -> None:
    result = read_alibaba2017(v2017_csv)
    dropped = {"status_Waiting": 8_847, "status_Running": 3_567, "status_Failed": 1_126}
    assert_report(
        result.report,
        read=80_553,
        kept=67_003,
        dropped={**dropped, "missing_value": 10},
        fixed={"zero_duration_as_one_step": 21},
    )
    assert len(result.jobs) == 67_003
    assert result.jobs.meta.provenance["trace_start_s"] == -1078.0


def test_real_table_every_status(v2017_csv: Path) -> None:
    statuses = ("Terminated", "Failed", "Running", "Waiting")
    options = TraceOptions(strict=False)
    report = read_alibaba2017(v2017_csv, statuses=statuses, options=options).report
    assert report.rows_kept == 71_454
    assert report.dropped == {"missing_value": 9_017, "no_end_time": 82}
    assert report.rows_read == report.rows_kept + sum(report.dropped.values())


@pytest.mark.slow
def test_real_table_strict_names_the_first_missing_value(v2017_csv: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"line 54977 of .*batch_task\.csv: plan_cpu is"):
        read_alibaba2017(v2017_csv, options=TraceOptions(strict=True))
