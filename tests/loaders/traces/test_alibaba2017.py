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
from tests import line_formats
from tests.line_formats import DATA, SMALL_DROP_LINES
from tests.loader_helpers import assert_report, sample_lines

SMALL = line_formats.SMALL["alibaba2017"]
GOOD = line_formats.GOOD["alibaba2017"]


def _csv(tmp_path: Path, *lines: str, name: str = "batch_task.csv") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


# -- the committed fixture: one line per case ----------------------------------------------------


def test_small_fixture_accounts_for_every_line() -> None:
    dropped = dict.fromkeys(SMALL_DROP_LINES["alibaba2017"], 1)
    fixed = {"zero_duration_as_one_step": 1}
    assert_report(read_alibaba2017(SMALL).report, read=13, kept=3, dropped=dropped, fixed=fixed)


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


def test_crlf_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "batch_task.csv"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode() * 2 + b"\r\n")
    result = read_alibaba2017(path)
    assert result.report.rows_read == result.report.rows_kept == 2
    assert result.jobs.meta.provenance["alibaba2017"]["blank_lines"] == 1


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
