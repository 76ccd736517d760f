"""SWF loader (Parallel Workloads Archive): header, -1 handling, bad input, the real KTH log."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.swf import read_swf
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.policies.heuristics import SJF
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate
from tests import line_formats
from tests.line_formats import DATA, SMALL_DROP_LINES
from tests.loader_helpers import assert_report, sample_lines

SMALL = line_formats.SMALL["swf"]
GOOD = line_formats.GOOD["swf"]
HEADER = line_formats.HEADER["swf"]


def _swf(tmp_path: Path, *lines: str, header: str = HEADER, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(header + "".join(lines))
    return path


# -- the committed fixture: one line per case ----------------------------------------------------


def test_small_fixture_accounts_for_every_line() -> None:
    assert_report(
        read_swf(SMALL).report,
        read=11,  # 10 comment lines are not data rows
        kept=4,
        dropped=dict.fromkeys(SMALL_DROP_LINES["swf"], 1),
        fixed={"zero_duration_as_one_step": 1},
    )
    allocated = read_swf(SMALL, procs="allocated").report
    assert allocated.fixed == {"procs_from_requested": 1, "zero_duration_as_one_step": 1}


def test_small_fixture_jobs() -> None:
    js = read_swf(SMALL).jobs
    jobs = js.jobs
    assert jobs.get_column("source_id").to_list() == ["2", "3", "5", "12"]
    assert jobs.get_column("arrival").to_list() == [0, 10, 30, 100]
    assert jobs.get_column("duration").to_list() == [100, 50, 1, 45]  # run time 0 -> 1 step
    assert jobs.get_column("procs").to_list() == [4.0, 2.0, 1.0, 3.0]  # allocated -1: requested 2
    assert jobs.get_column("user").to_list() == ["1", "2", "3", "4"]
    assert js.resources == ("procs",)
    assert js.meta.capacity == (8.0,)
    assert js.meta.units == ("processor",)


def test_header_is_parsed_into_provenance() -> None:
    prov = read_swf(SMALL).jobs.meta.provenance["swf"]
    header = prov["header"]
    assert header["MaxProcs"] == 8
    assert header["MaxNodes"] == 4
    assert header["UnixStartTime"] == 1_000_000_000
    assert header["TimeZoneString"] == "Europe/Stockholm"
    assert header["Note"] == [
        "THIS IS A CLEANED VERSION OF THE LOG! The filter used to produce it was "
        "job<=1 (1 jobs removed)"
    ]
    assert prov["cleaned"] is True
    assert prov["unix_start_time"] == 1_000_000_000
    assert prov["comment_lines"] == 10
    assert prov["machine_size_from"] == "MaxProcs header"
    assert prov["memory"] is None
    assert any("memory omitted" in n for n in prov["notes"])


def test_strict_raises_on_first_malformed_line_naming_file_and_line() -> None:
    with pytest.raises(TraceFormatError, match=r"line 13 of .*swf_small\.swf: run_time=-1"):
        read_swf(SMALL, options=TraceOptions(strict=True))


# -- bad input, one case at a time ---------------------------------------------------------------


def test_strict_does_not_raise_on_a_status_selection(tmp_path: Path) -> None:
    failed = GOOD.replace(" 60 -1 1 ", " 60 -1 0 ")
    path = _swf(tmp_path, GOOD, failed)
    result = read_swf(path, options=TraceOptions(strict=True), statuses=(1,))
    assert result.report.dropped == {"status_0": 1}
    assert sample_lines(result, "status_0") == [4]


def test_statuses_selection(tmp_path: Path) -> None:
    failed = GOOD.replace(" 60 -1 1 ", " 60 -1 0 ")
    cancelled = GOOD.replace(" 60 -1 1 ", " 60 -1 5 ")
    path = _swf(tmp_path, GOOD, failed, cancelled)
    assert read_swf(path).report.rows_kept == 3  # default: every summary line
    assert read_swf(path, statuses="1|5").report.dropped == {"status_0": 1}
    assert read_swf(path, statuses=1).report.dropped == {"status_0": 1, "status_5": 1}
    with pytest.raises(ValueError, match="statuses must be"):
        read_swf(path, statuses=(9,))


def test_gzip_loads_like_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "small.swf.gz"
    with SMALL.open("rb") as fin, gzip.open(path, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    plain, packed = read_swf(SMALL), read_swf(path)
    assert packed.jobs.jobs.equals(plain.jobs.jobs)
    assert packed.report.dropped == plain.report.dropped


# -- header and machine size ---------------------------------------------------------------------


def test_no_machine_size_is_an_error_unless_given(tmp_path: Path) -> None:
    path = _swf(tmp_path, GOOD, header="; Version: 2.2\n")
    with pytest.raises(TraceFormatError, match=r"t\.swf: no MaxProcs or MaxNodes .*max_procs="):
        read_swf(path)
    js = read_swf(path, max_procs=16).jobs
    assert js.meta.capacity == (16.0,)
    assert js.meta.provenance["swf"]["machine_size_from"] == "max_procs option"


def test_maxnodes_is_the_fallback(tmp_path: Path) -> None:
    js = read_swf(_swf(tmp_path, GOOD, header="; MaxNodes: 32\n")).jobs
    assert js.meta.capacity == (32.0,)
    assert "MaxProcs defaults to MaxNodes" in " ".join(js.meta.provenance["swf"]["notes"])


def test_non_numeric_header_value_names_the_line(tmp_path: Path) -> None:
    path = _swf(tmp_path, GOOD, header="; Version: 2.2\n; MaxProcs: many\n")
    with pytest.raises(TraceFormatError, match=r"line 2 of .*t\.swf: header MaxProcs: 'many'"):
        read_swf(path)


def test_machines_and_slots_scale_capacity(tmp_path: Path) -> None:
    path = _swf(tmp_path, GOOD, GOOD.replace(" 2 -1 -1 2 ", " 12 -1 -1 12 "))
    result = read_swf(path, options=TraceOptions(machines=2, slots_per_machine=10))
    assert result.report.dropped == {"exceeds_capacity": 1}  # 12 procs fit no machine of 8
    assert (result.jobs.meta.machines, result.jobs.meta.capacity) == (2, (20.0,))
    assert result.jobs.jobs.get_column("procs").to_list() == [2.5]
    assert read_swf(path).jobs.meta.machines == 1  # the log's own machine: its MaxProcs


def test_record_count_mismatch_is_noted(tmp_path: Path) -> None:
    js = read_swf(_swf(tmp_path, GOOD, header=HEADER + "; MaxRecords: 5\n")).jobs
    assert "header MaxRecords=5 but the file has 1 job lines" in js.meta.provenance["swf"]["notes"]


# -- memory --------------------------------------------------------------------------------------


def test_memory_resource_when_the_log_has_it() -> None:
    result = read_swf(DATA / "swf_memory.swf")
    js = result.jobs
    assert js.resources == ("procs", "mem")
    assert js.meta.capacity == (4.0, 4000.0)  # MaxProcs x MaxMemory (KB per processor)
    assert js.meta.units == ("processor", "KB")
    assert js.jobs.get_column("mem").to_list() == [600.0, 500.0]
    assert result.report.dropped == {"unknown_memory": 1}
    assert sample_lines(result, "unknown_memory") == [6]
    assert result.report.fixed == {"mem_from_requested": 1}


def test_memory_none_and_requested() -> None:
    assert read_swf(DATA / "swf_memory.swf", memory="none").jobs.resources == ("procs",)
    result = read_swf(DATA / "swf_memory.swf", memory="requested")
    assert result.jobs.jobs.get_column("mem").to_list() == [600.0, 500.0]
    assert result.report.fixed == {"mem_from_used": 1}
    with pytest.raises(ValueError, match="memory must be"):
        read_swf(DATA / "swf_memory.swf", memory="rss")  # type: ignore[arg-type]


def test_memory_without_capacity(tmp_path: Path) -> None:
    path = _swf(tmp_path, GOOD.replace(" 2 -1 -1 2 ", " 2 -1 100 2 "))
    js = read_swf(path).jobs
    assert js.resources == ("procs",)
    assert "no MaxMemory header" in " ".join(js.meta.provenance["swf"]["notes"])
    with pytest.raises(TraceFormatError, match=r"t\.swf: memory='used' needs .*max_memory="):
        read_swf(path, memory="used")
    assert read_swf(path, max_memory=50).jobs.jobs.get_column("mem").to_list() == [200.0]


# -- the real KTH SP2 log ------------------------------------------------------------------------


def test_kth_loads_end_to_end(kth_swf: Path) -> None:
    result = read_swf(kth_swf)
    fixed = {"zero_duration_as_one_step": 8}
    assert_report(
        result.report, read=28_476, kept=28_475, dropped={"unknown_procs": 1}, fixed=fixed
    )
    assert sample_lines(result, "unknown_procs") == [27_323]
    js = result.jobs
    assert js.meta.capacity == (100.0,)
    prov = js.meta.provenance["swf"]
    assert prov["cleaned"] is True
    assert prov["header"]["UnixStartTime"] == 843_480_031
    assert prov["header"]["MaxRecords"] == 28_476
    assert js.meta.provenance["trace_start_s"] == 599_850.0


def test_kth_strict_stops_at_the_unknown_processors(kth_swf: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"line 27323 of .*KTH-SP2-1996-2\.swf"):
        read_swf(kth_swf, options=TraceOptions(strict=True))


def test_kth_simulates_end_to_end(kth_swf: Path) -> None:
    options = TraceOptions(time_step=60, jobset_window=7 * 86_400)
    js = read_swf(kth_swf, options=options).jobs
    assert len(js.jobset_ids) == 48  # 47.6 weeks of submissions, none empty
    assert js.meta.empty_jobsets == ()
    results = simulate(js, [SJF()], ClusterConfig())
    table = results.table
    assert table.height == len(js) == 28_475
    assert (table.get_column("start") >= table.get_column("arrival")).all()
    assert (table.get_column("slowdown") >= 1).all()


def test_processors_are_the_request_unless_asked_for_the_allocation(tmp_path: Path) -> None:
    path = _swf(
        tmp_path,
        "1 0 0 100 2 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n",  # allocated 2, requested 4
        "2 5 0 100 3 -1 -1 -1 200 -1 1 1 1 -1 -1 -1 -1 -1\n",  # no request: the allocation
    )
    requested = read_swf(path)
    assert requested.jobs.jobs.get_column("procs").to_list() == [4.0, 3.0]
    assert requested.report.fixed["procs_from_allocated"] == 1
    allocated = read_swf(path, procs="allocated")
    assert allocated.jobs.jobs.get_column("procs").to_list() == [2.0, 3.0]
    assert "procs_from_requested" not in allocated.report.fixed  # nothing to fix
    with pytest.raises(ValueError, match="procs must be 'requested' or 'allocated'"):
        read_swf(path, procs="used")  # type: ignore[arg-type]


def test_windows_are_seeded_runs_of_consecutive_jobs(tmp_path: Path) -> None:
    lines = [f"{k} {10 * k} 0 5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n" for k in range(1, 21)]
    path = _swf(tmp_path, *lines)
    options = TraceOptions(jobset_size=4, windows=3, seed=7)
    first, again = read_swf(path, options=options), read_swf(path, options=options)
    jobs = first.jobs.jobs
    assert jobs.equals(again.jobs.jobs)
    assert jobs.get_column("jobset").to_list() == [0] * 4 + [1] * 4 + [2] * 4
    for _, window in jobs.group_by("jobset"):
        ids = [int(x) for x in window.get_column("source_id")]
        assert ids == list(range(ids[0], ids[0] + 4))  # consecutive jobs of the trace
        assert window.get_column("arrival").to_list() == [0, 10, 20, 30]  # from the window start
    assert "windows: 3 windows of 4 consecutive jobs" in " ".join(first.report.notes)
    with pytest.raises(ValueError, match="room for 17 distinct windows"):
        read_swf(path, options=TraceOptions(jobset_size=4, windows=18))
    with pytest.raises(ValueError, match=r"windows .* needs jobset_size"):
        TraceOptions(windows=3)
