"""Alibaba cluster-trace-v2018 batch_task loader: DAGs, granularity, options, bad input."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
from pathlib import Path

import networkx as nx
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import dag, dag_measures
from schedlab.errors import TraceFormatError
from schedlab.jobset import JobSet
from schedlab.loaders.traces import alibaba2018_parse as parse
from schedlab.loaders.traces import alibaba2018_scan as scan
from schedlab.loaders.traces import textio
from schedlab.loaders.traces.alibaba2018 import MACHINE_CPU, TRACE_MACHINES, read_alibaba2018
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.registry import loaders
from tests.dag_helpers import brute_ranks

DATA = Path(__file__).resolve().parents[2] / "data"
DAG = DATA / "alibaba2018_dag.csv"
QUIRKS = DATA / "alibaba2018_quirks.csv"
BAD = DATA / "alibaba2018_bad.csv"
INSTANCES = DATA / "alibaba2018_instances.csv"
V2017_SMALL = DATA / "alibaba2018_given_v2017.csv"  # 6 real v2017 rows
HEADER = "task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem\n"
GOOD = "M1,1,j_1,1,Terminated,10,20,100,0.5\n"


def _csv(tmp_path: Path, text: str, name: str = "batch_task.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _col(result, name: str) -> list:
    return result.jobs.jobs.get_column(name).to_list()


def _lines(result, reason: str) -> list[int]:
    samples = result.report.samples
    return samples.filter(pl.col("reason") == reason).get_column("line").to_list()


# -- granularity on a hand-made DAG ----------------------------------------------------------------
# j_1: M1 (10 s, 2 instances), M2 (5 s), R3_1_2 (20 s, 3 instances), J4_3 (1 s)
# j_2: task_<base64> (60 s, 4 instances), MergeTask (10 s): independent tasks
# j_3: M1 Running (dropped), R2_1 (15 s): its parent was dropped


def test_task_granularity_hand_computed() -> None:
    r = read_alibaba2018(DAG)
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)
    assert r.report.dropped == {"status_Running": 1}
    assert r.report.fixed == {"dropped_parent_removed": 1}
    assert _col(r, "arrival") == [0, 0, 10, 30, 100, 160, 205]  # start_time - 100
    assert _col(r, "duration") == [10, 5, 20, 1, 60, 10, 15]
    assert _col(r, "cpu") == [1.0, 0.5, 2.0, 1.0, 0.5, 1.0, 1.0]  # plan_cpu / 100 cores
    assert _col(r, "mem") == [0.5, 0.2, 1.0, 0.3, 0.1, 0.2, 0.2]
    assert _col(r, "parents") == [[], [], [0, 1], [2], [], [], []]
    assert _col(r, "dag") == [1, 1, 1, 1, 2, 2, 3]  # j_<n>
    assert r.jobs.meta.machines == TRACE_MACHINES  # the trace's own cluster by default
    assert tuple(r.jobs.machine_capacity) == (MACHINE_CPU, 100.0)
    assert r.jobs.meta.units == ("core", "normalized memory")
    assert _lines(r, "status_Running") == [7]
    assert r.report.samples.get_column("raw").to_list() == ["M1,1,j_3,1,Running,300,0,100,0.2"]


def test_instance_granularity_copies_each_task() -> None:
    r = read_alibaba2018(DAG, granularity="instance")
    assert len(r.jobs) == 2 + 1 + 3 + 1 + 4 + 1 + 1
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)  # the report counts file rows
    assert _col(r, "duration") == [10, 10, 5, 20, 20, 20, 1, 60, 60, 60, 60, 10, 15]
    # the DAG stays between tasks: each instance names its parent tasks once
    assert _col(r, "task") == [0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 6]
    assert _col(r, "parents") == [[], [], [], [0, 1], [0, 1], [0, 1], [2], [], [], [], [], [], []]
    assert _col(r, "dag") == [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3]
    g = dag.graph(r.jobs.jobs)
    assert g.n_edges == 7
    assert g.task_rows.tolist() == [2, 1, 3, 1, 4, 1, 1]
    paths = dag_measures.critical_paths(r.jobs.jobs, g)
    assert paths.get_column("critical_path").to_list() == [31, 60, 15]


def test_instance_granularity_keeps_edges_inside_each_jobset() -> None:
    r = read_alibaba2018(DAG, granularity="instance", options=TraceOptions(jobset_size=4))
    jobs = r.jobs.jobs  # R3_1_2's instances are split over jobsets 0 and 1
    assert _col(r, "jobset") == [0] * 4 + [1] * 4 + [2] * 4 + [3]
    assert _col(r, "parents")[3:7] == [[0, 1], [], [], [2]]  # M1 and M2 are in jobset 0 only
    assert r.report.fixed["parent_outside_jobset_removed"] == 1  # (jobset 1, R3_1_2)
    dag.graph(jobs)


def test_overlapping_windows_keep_each_jobsets_own_parents() -> None:
    options = TraceOptions(jobset_size=4, windows=3, seed=1)  # 4 start rows of 7: overlaps
    r = read_alibaba2018(DAG, options=options, source_ids=True)
    jobs = r.jobs.jobs
    assert jobs.get_column("source_id").n_unique() < jobs.height  # rows repeat across windows
    wanted = {"j_1/R3_1_2": {"j_1/M1", "j_1/M2"}, "j_1/J4_3": {"j_1/R3_1_2"}}
    for _, part in r.jobs.split():
        name = dict(zip(part["job_id"], part["source_id"], strict=True))
        for sid, ps in zip(part["source_id"], part["parents"].to_list(), strict=True):
            assert {name[p] for p in ps} == wanted.get(sid, set()) & set(name.values())


def test_instance_granularity_cap() -> None:
    r = read_alibaba2018(DAG, granularity="instance", max_instances=2)
    assert len(r.jobs) == 2 + 1 + 2 + 1 + 2 + 1 + 1
    assert r.report.fixed["instances_capped"] == 2  # R3_1_2 (3) and task_... (4)


def test_job_granularity_critical_path() -> None:
    r = read_alibaba2018(DAG, granularity="job")
    # j_1: M1 -> R3 -> J4 = 10 + 20 + 1 (M2 -> R3 -> J4 = 26 is shorter); j_2: independent
    # tasks, the longest one; j_3: R2_1 alone (its parent is not kept)
    assert _col(r, "duration") == [31, 60, 15]
    assert _col(r, "arrival") == [0, 100, 205]
    assert _col(r, "cpu") == [2.0, 1.0, 1.0]  # the largest per-instance demand
    assert _col(r, "mem") == [1.0, 0.2, 0.2]
    assert _col(r, "source_id") == ["j_1", "j_2", "j_3"]
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)  # task rows merged into jobs


def test_job_granularity_total_work() -> None:
    r = read_alibaba2018(DAG, granularity="job", job_duration="total_work")
    assert _col(r, "duration") == [10 * 2 + 5 + 20 * 3 + 1, 60 * 4 + 10, 15]
    cpu = _col(r, "cpu")
    assert cpu[0] == pytest.approx((1.0 * 20 + 0.5 * 5 + 2.0 * 60 + 1.0 * 1) / 86)
    assert cpu[1] == pytest.approx((0.5 * 240 + 1.0 * 10) / 250)
    assert _col(r, "mem")[0] == pytest.approx((0.5 * 20 + 0.2 * 5 + 1.0 * 60 + 0.3 * 1) / 86)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"granularity": "tasks"}, "granularity"),
        ({"job_duration": "longest"}, "job_duration"),
        ({"demand": "used"}, "instances="),
        ({"max_instances": 0}, "max_instances"),
        ({"statuses": "Terminatd"}, "did you mean 'Terminated'"),
        ({"statuses": ()}, "at least one"),
    ],
)
def test_invalid_choices(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_alibaba2018(DAG, **kwargs)


# -- DAG name quirks, each counted -----------------------------------------------------------------


def test_quirks_each_counted() -> None:
    r = read_alibaba2018(QUIRKS, source_ids=True)
    assert r.report.rows_kept == r.report.rows_read == 28
    assert r.report.fixed == {
        "self_dependency_removed": 1,  # M5_5
        "duplicate_parent_removed": 1,  # R6_1_1
        "missing_parent_removed": 1,  # J7_1_99
        "stg_suffix_stripped": 1,  # J8_1_Stg4
        "truncated_task_name": 2,  # the two 50-character names
        "truncated_parent_dropped": 1,  # ..._23_1 (not ..._23_)
        "cyclic_dependency_removed": 1,  # R1_2 <-> R2_1
        "unrecognized_task_name": 1,  # weird-name
    }
    parents = dict(zip(_col(r, "source_id"), _col(r, "parents"), strict=True))
    ids = dict(zip(_col(r, "source_id"), _col(r, "job_id"), strict=True))
    assert parents["j_10/M5_5"] == []
    assert parents["j_10/R6_1_1"] == parents["j_10/J7_1_99"] == parents["j_10/J8_1_Stg4"] == [0]
    cut = next(k for k in parents if k.startswith("j_20/R5_"))
    trail = next(k for k in parents if k.startswith("j_20/J30_"))
    wanted = [ids["j_20/M100"], *(ids[f"j_20/M{t}"] for t in range(10, 24))]
    assert parents[cut] == parents[trail] == wanted  # the cut "_1" is gone, "_23_" is kept
    assert parents["j_20/R1_5"] == [ids[cut]]  # so no false cycle 5 -> 1 -> 5
    assert parents["j_21/R1_2"] == [ids["j_21/R2_1"]]
    assert parents["j_21/R2_1"] == []  # the edge closing the cycle is removed
    assert parents["job-x/R2_1"] == [ids["job-x/M1"]]  # non-j_<n> job names still group


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(1, 8), max_size=4),  # parents of task k+1
        min_size=1,
        max_size=8,
    )
)
def test_random_dags_come_out_acyclic(tmp_path_factory: pytest.TempPathFactory, spec) -> None:
    lines = [
        f"{'R' if ps else 'M'}{k + 1}{''.join(f'_{p}' for p in ps)},1,j_7,1,Terminated,"
        f"{k},{k + 5},100,0.1\n"
        for k, ps in enumerate(spec)
    ]
    path = tmp_path_factory.mktemp("dag") / "batch_task.csv"
    path.write_text("".join(lines))
    r = read_alibaba2018(path)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(spec)))
    edges = [
        (p, c) for c, ps in zip(_col(r, "job_id"), _col(r, "parents"), strict=True) for p in ps
    ]
    graph.add_edges_from(edges)
    assert nx.is_directed_acyclic_graph(graph)
    # every kept edge was named, and only cycles lose valid edges
    task_of = {j: int(n.split("_")[0][1:]) for j, n in enumerate(_names(spec))}
    for p, c in edges:
        assert task_of[p] in spec[c]
    named = nx.DiGraph(
        (p, k + 1) for k, ps in enumerate(spec) for p in ps if p != k + 1 and p <= len(spec)
    )
    removed = r.report.fixed.get("cyclic_dependency_removed", 0)
    assert (removed > 0) == (not nx.is_directed_acyclic_graph(named))


def _names(spec) -> list[str]:
    return [f"{'R' if ps else 'M'}{k + 1}" for k, ps in enumerate(spec)]


# -- bad input: a counted drop with reason and line, or a clear error -----------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (2, "wrong_field_count"),  # 6 fields
        (3, "not_a_number"),  # instance_num=abc
        (4, "negative_duration"),
        (5, "status_Running"),
        (6, "status_Waiting"),
        (8, "invalid_status"),  # Finished
        (9, "missing_value"),  # empty plan_cpu
        (10, "negative_demand"),
        (11, "invalid_instance_num"),  # 1.5
        (12, "wrong_field_count"),  # 10 fields
        (13, "not_a_number"),  # start_time=nan
        (14, "never_started"),  # start = end = 0
        (15, "exceeds_capacity"),  # plan_cpu 20000 = 200 cores > 96 (via finish)
    ],
)
def test_bad_fixture_line_reasons(line: int, reason: str) -> None:
    r = read_alibaba2018(BAD)
    assert line in _lines(r, reason)


def test_bad_fixture_accounts_for_every_line() -> None:
    r = read_alibaba2018(BAD)
    assert (r.report.rows_read, r.report.rows_kept) == (15, 2)  # 16 lines, one blank
    assert sum(r.report.dropped.values()) == 13
    assert r.jobs.meta.provenance["alibaba2018"]["blank_lines"] == 1
    messages = dict(zip(r.report.samples["line"], r.report.samples["message"], strict=True))
    assert messages[2] == "expected 9 comma-separated fields, found 6"
    assert messages[3] == "instance_num is not a number: abc"
    assert messages[4] == "end_time=20 is before start_time=30"
    assert messages[9] == "plan_cpu is empty"
    assert messages[15] == "cpu=200.0 exceeds a machine's 96"
    assert r.report.samples.filter(pl.col("line") == 3)["raw"].item() == (
        "M3,abc,j_1,1,Terminated,10,20,100,0.5"
    )


def test_selected_statuses_and_running_without_end() -> None:
    r = read_alibaba2018(BAD, statuses="Terminated|Running|Waiting")
    assert 5 in _lines(r, "no_end_time")  # Running: end_time 0 before start_time
    assert 6 in _lines(r, "missing_value")  # Waiting: empty instance_num, plan_cpu, plan_mem


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("M2,1,j_1,1,Terminated,10,20,100\n", "wrong_field_count"),
        ("M2,1,j_1,1,Terminated,10,20,100,0.5,1\n", "wrong_field_count"),
        ("M2,1,j_1,1,Terminated,ten,20,100,0.5\n", "not_a_number"),
        ("M2,1,j_1,1,Terminated,10,20,1e400,0.5\n", "not_a_number"),
        ("M2,1,j_1,1,Terminated,30,20,100,0.5\n", "negative_duration"),
        ("M2,1,j_1,1,Terminated,10,20,100,-0.5\n", "negative_demand"),
        ("M2,1,,1,Terminated,10,20,100,0.5\n", "missing_value"),
        (",1,j_1,1,Terminated,10,20,100,0.5\n", "missing_value"),
        ("M2,1,j_1,1,,10,20,100,0.5\n", "missing_value"),
        ("M2,1,j_1,1,Done,10,20,100,0.5\n", "invalid_status"),
        ("M2,0,j_1,1,Terminated,10,20,100,0.5\n", "invalid_instance_num"),
        ("M2,1,j_1,1,Terminated,10,20,9700,0.5\n", "exceeds_capacity"),
        ("M2,1,j_1,1,Terminated,10,20,100,101\n", "exceeds_capacity"),
    ],
)
def test_bad_line_counted_with_its_line(tmp_path: Path, bad: str, reason: str) -> None:
    r = read_alibaba2018(_csv(tmp_path, GOOD + bad + GOOD))
    assert r.report.dropped == {reason: 1}
    assert _lines(r, reason) == [2]
    assert r.report.rows_kept == 2


@pytest.mark.parametrize(
    "bad",
    [
        "M2,1,j_1,1,Terminated,10\n",
        "M2,1,j_1,1,Terminated,x,20,100,0.5\n",
        "M2,1,j_1,1,Terminated,30,20,100,0.5\n",
        "M2,1,j_1,1,Done,10,20,100,0.5\n",
    ],
)
def test_strict_names_file_and_line(tmp_path: Path, bad: str) -> None:
    path = _csv(tmp_path, GOOD + "M3,1,j_1,1,Failed,10,20,100,0.5\n" + bad)
    with pytest.raises(TraceFormatError, match=r"^line 3 of .*batch_task\.csv: "):
        read_alibaba2018(path, options=TraceOptions(strict=True))
    assert read_alibaba2018(path).report.rows_kept == 1  # not strict: counted drops


def test_strict_ignores_the_status_selection() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(strict=True))
    assert r.report.dropped == {"status_Running": 1}


def test_empty_blank_and_header_only_files(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="empty"):
        read_alibaba2018(_csv(tmp_path, ""))
    with pytest.raises(TraceFormatError, match="no data lines"):
        read_alibaba2018(_csv(tmp_path, "\n\n  \n"))
    with pytest.raises(TraceFormatError, match="no data lines"):
        read_alibaba2018(_csv(tmp_path, HEADER))
    with pytest.raises(TraceFormatError, match="no such file"):
        read_alibaba2018(tmp_path / "missing.csv")


def test_wrong_compression_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="name says gzip"):
        read_alibaba2018(_csv(tmp_path, GOOD, name="batch_task.csv.gz"))
    path = tmp_path / "batch_task.csv"
    path.write_bytes(bz2.compress(GOOD.encode()))  # bzip2 is read, whatever the name says
    _same(read_alibaba2018(_csv(tmp_path, GOOD, name="plain.csv")), read_alibaba2018(path))
    path.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(TraceFormatError, match="binary data"):
        read_alibaba2018(path)
    truncated = tmp_path / "cut.csv.gz"
    truncated.write_bytes(gzip.compress(DAG.read_bytes())[:40])
    with pytest.raises(TraceFormatError, match="corrupt or truncated"):
        read_alibaba2018(truncated)


def test_other_tables_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"batch_instance\.csv .*instances="):
        read_alibaba2018(INSTANCES)
    with pytest.raises(TraceFormatError, match="none of the first 2 lines has 9"):
        read_alibaba2018(_csv(tmp_path, "a;b;c\nd;e;f\n"))


def test_v2017_file_is_rejected() -> None:
    with pytest.raises(
        TraceFormatError, match=r"looks like Alibaba cluster-trace-v2017.*`alibaba2017`"
    ):
        read_alibaba2018(V2017_SMALL)


def test_real_v2017_table_is_rejected(v2017_csv: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"cluster-trace-v2017.* Use the `alibaba2017`"):
        read_alibaba2018(v2017_csv)


# -- formats: header, CRLF, gzip, tar.gz, the text fallback ----------------------------------------


def _same(a, b) -> None:
    """Same jobs and the same accounting (notes about the file's layout may differ)."""
    assert a.jobs.jobs.equals(b.jobs.jobs)
    assert {**a.report.to_json(), "notes": []} == {**b.report.to_json(), "notes": []}


def test_header_crlf_and_blank_lines(tmp_path: Path) -> None:
    plain = read_alibaba2018(DAG)
    text = DAG.read_text()
    with_header = read_alibaba2018(_csv(tmp_path, HEADER + text, name="h.csv"))
    _same(plain, with_header)
    assert with_header.report.notes == ("line 1 is a header line, skipped",)
    assert _lines(with_header, "status_Running") == [8]  # physical line numbers
    crlf = read_alibaba2018(_csv(tmp_path, "\n" + text.replace("\n", "\r\n"), name="c.csv"))
    assert crlf.jobs.jobs.equals(plain.jobs.jobs)
    assert crlf.jobs.meta.provenance["alibaba2018"]["blank_lines"] == 1


def test_gzip_and_tar_gz_load_like_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    plain = read_alibaba2018(DAG)
    gz = tmp_path / "batch_task.csv.gz"
    gz.write_bytes(gzip.compress(DAG.read_bytes()))
    _same(plain, read_alibaba2018(gz))
    tgz = tmp_path / "batch_task.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(DAG, arcname="batch_task.csv")
        tar.add(QUIRKS, arcname="other.csv")
    _same(plain, read_alibaba2018(tgz))


def test_tar_member_escaping_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    tgz = tmp_path / "batch_task.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        data = DAG.read_bytes()
        info = tarfile.TarInfo("../evil/batch_task.csv")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(TraceFormatError, match="escape"):
        read_alibaba2018(tgz)
    assert not (tmp_path / "evil").exists()


def test_text_fallback_gives_the_same_numbers(tmp_path: Path) -> None:
    # "1e2" is not a plain decimal: the block's numbers are parsed by polars instead
    text = DAG.read_text().replace(",100,", ",1e2,", 1)
    _same(read_alibaba2018(DAG), read_alibaba2018(_csv(tmp_path, text)))


@pytest.mark.parametrize(
    "text",
    ["0", "7", "100", "0.49", "618882", "-3.25", "+2", "1.", ".5", "123456789012345",
     "0.000000000000000000001", "12.3456789", "99999.99999", "00042"],
)  # fmt: skip
def test_scanner_numbers_are_exact(text: str) -> None:
    line = f"M1,{text},j_1,1,Terminated,{text},{text},{text},{text}\n".encode()
    nf, flags, *_, numbers, _, _ = scan.scan(np.frombuffer(line, np.uint8), 1, *parse.STATUS_TABLE)
    assert nf[0] == 9
    assert not flags[0] & scan.SLOW
    assert numbers[:, 0].tolist() == [float(text)] * 5


@pytest.mark.parametrize("text", ["1e3", "nan", "inf", " 5", "1.2.3", "0x10", "1234567890123456"])
def test_scanner_leaves_other_numbers_to_polars(text: str) -> None:
    line = f"M1,1,j_1,1,Terminated,10,20,{text},0.5".encode()
    _, flags, *_ = scan.scan(np.frombuffer(line, np.uint8), 1, *parse.STATUS_TABLE)
    assert flags[0] & scan.SLOW


def test_blocks_cut_at_line_ends(tmp_path: Path) -> None:
    lines = [f"{'x' * (k % 23)}{k}" for k in range(500)]
    path = _csv(tmp_path, "\n".join(lines))  # no final newline; lines longer than a block
    seen, total = [], 0
    for first, data, n in textio.blocks(path, size=16):
        assert first == total + 1
        seen += bytes(data).decode().splitlines()
        total += n
    assert seen == lines
    assert total == 500


def test_parquet_round_trip_keeps_parents(tmp_path: Path) -> None:
    r = read_alibaba2018(DAG)
    r.jobs.write_parquet(tmp_path / "jobs.parquet")
    back = JobSet.read_parquet(tmp_path / "jobs.parquet")
    assert back.jobs.equals(r.jobs.jobs)
    assert back.jobs.schema["parents"] == pl.List(pl.Int64)


def test_registered_and_loadable_from_the_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from schedlab.cli import main

    assert loaders.load("alibaba2018") is read_alibaba2018
    out = tmp_path / "jobs.parquet"
    args = ["load", "alibaba2018", str(DAG), "-o", str(out), "--no-cache", "-p", "granularity=job"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert JobSet.read_parquet(out).jobs.get_column("duration").to_list() == [31, 60, 15]


# -- options ---------------------------------------------------------------------------------------


def test_window_and_time_step() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(start=10, end=160, time_step=10))
    assert r.report.dropped == {"status_Running": 1, "outside_window": 4}
    assert _col(r, "arrival") == [0, 2, 9]  # (start_time - 100 - 10) // 10
    assert _col(r, "duration") == [2, 1, 6]  # ceil(20/10), ceil(1/10), ceil(60/10)
    assert _col(r, "parents") == [[], [0], []]  # R3's parents arrived before the window


def test_scaling_to_slots_and_machines() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(slots_per_machine=10, machines=2))
    assert r.jobs.meta.capacity == (20.0, 20.0)
    assert r.jobs.meta.units == ("slot", "slot")
    assert _col(r, "cpu")[2] == pytest.approx(2.0 * 10 / MACHINE_CPU)
    assert _col(r, "mem")[2] == pytest.approx(1.0 * 10 / 100)


def test_a_job_must_fit_on_one_machine_however_many(tmp_path: Path) -> None:
    path = _csv(tmp_path, GOOD + "M2,1,j_1,1,Terminated,10,20,20000,0.5\n")  # 200 cores
    assert read_alibaba2018(path).report.dropped == {"exceeds_capacity": 1}
    three = read_alibaba2018(path, options=TraceOptions(machines=3))
    assert three.report.dropped == {"exceeds_capacity": 1}
    assert three.jobs.meta.machines == 3
    assert three.jobs.meta.capacity == (3 * MACHINE_CPU, 300.0)
    bigger = read_alibaba2018(path, machine_cpu=256.0, options=TraceOptions(machines=1))
    assert bigger.report.rows_kept == 2


def test_sample_is_reproducible_and_keeps_parents_inside() -> None:
    opts = TraceOptions(sample=4, seed=7)
    a, b = read_alibaba2018(QUIRKS, options=opts), read_alibaba2018(QUIRKS, options=opts)
    assert len(a.jobs) == 4
    assert a.report.dropped == {"not_sampled": 24}
    _same(a, b)
    sampled = [
        read_alibaba2018(QUIRKS, options=TraceOptions(sample=4, seed=s), source_ids=True)
        for s in range(5)
    ]
    assert len({tuple(_col(s, "source_id")) for s in sampled}) > 1
    for s in sampled:
        ids = set(_col(s, "job_id"))
        assert all(set(p) <= ids for p in _col(s, "parents"))


def test_split_by_window_and_by_count() -> None:
    by_window = read_alibaba2018(DAG, options=TraceOptions(jobset_window=100))
    assert _col(by_window, "jobset") == [0, 0, 0, 0, 1, 1, 2]
    assert _col(by_window, "arrival") == [0, 0, 10, 30, 0, 60, 5]
    assert by_window.jobs.meta.arrival_window == 100
    by_count = read_alibaba2018(QUIRKS, options=TraceOptions(jobset_size=3))
    assert by_count.jobs.jobs.group_by("jobset").len()["len"].max() == 3
    assert by_count.report.fixed["parent_outside_jobset_removed"] > 0
    for _, jobs in by_count.jobs.split():  # parents never cross jobsets
        ids = set(jobs.get_column("job_id"))
        assert all(set(p) <= ids for p in jobs.get_column("parents"))


# -- batch_instance.csv ----------------------------------------------------------------------------


def test_instances_give_usage_and_instance_durations() -> None:
    used = read_alibaba2018(DAG, instances=INSTANCES, demand="used")
    assert _col(used, "cpu")[:3] == pytest.approx([0.9, 0.5, 1.7])  # mean cpu_avg / 100
    assert _col(used, "mem")[:3] == pytest.approx([0.4, 0.2, 0.9])
    assert used.report.fixed["usage_missing_plan_kept"] == 5
    prov = used.jobs.meta.provenance["alibaba2018"]["instances"]
    assert (prov["rows_read"], prov["rows_used"], prov["tasks_with_instances"]) == (7, 5, 2)
    assert prov["skipped"] == {"not_terminated": 1, "wrong_field_count": 1}
    per_instance = read_alibaba2018(DAG, instances=INSTANCES, granularity="instance")
    assert _col(per_instance, "duration")[:6] == [9, 9, 5, 18, 18, 18]  # mean instance time


# -- the real 55,874-row sample --------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(v2018_dags: Path) -> LoadResult:
    return read_alibaba2018(v2018_dags, source_ids=True)


def test_real_sample_accounts_for_every_row(real) -> None:
    rep = real.report
    assert (rep.rows_read, rep.rows_kept) == (55_874, 54_994)
    assert rep.dropped == {"status_Failed": 36, "status_Running": 652, "status_Waiting": 192}
    assert rep.fixed == {
        "integer_written_as_float": 54_994,  # pandas wrote 1.0 and 100.0
        "truncated_task_name": 307,
        "truncated_parent_dropped": 230,
        "dropped_parent_removed": 1,
        "zero_duration_as_one_step": 650,
    }
    assert real.jobs.meta.provenance["alibaba2018"]["header_line"] is True
    assert rep.samples.get_column("raw").null_count() == 0
    assert rep.samples.sort("line").row(0, named=True)["line"] == 645


def test_real_sample_dag_is_clean(real) -> None:
    jobs = real.jobs.jobs
    graph = nx.DiGraph()
    graph.add_nodes_from(jobs.get_column("job_id").to_list())
    graph.add_edges_from(
        (p, c) for c, ps in zip(jobs["job_id"], jobs["parents"], strict=True) for p in ps
    )
    assert nx.is_directed_acyclic_graph(graph)
    assert graph.number_of_edges() == 61_548  # 61,549 distinct named edges, one to a Failed task
    job = {j: s.split("/")[0] for j, s in zip(jobs["job_id"], jobs["source_id"], strict=True)}
    assert all(job[p] == job[c] for p, c in graph.edges)


def test_real_sample_dags_and_ranks(real) -> None:
    jobs = real.jobs.jobs
    job = jobs.get_column("source_id").str.extract(r"^j_(\d+)/", 1).cast(pl.Int64)
    assert jobs.get_column("dag").to_list() == job.to_list()
    g = dag.graph(jobs)
    assert g.n_edges == 61_548
    rank = dag_measures.upward_rank(g, jobs.get_column("duration").to_numpy())
    assert rank.tolist() == brute_ranks(jobs)


def test_real_sample_names_match_a_regex_reference(v2018_dags: Path) -> None:
    """The compiled scanner's task indices and parents, against polars regexes."""
    parsed = parse.parse_tasks(v2018_dags, header=True, statuses=("Terminated",))
    ref = (
        pl.read_csv(v2018_dags, infer_schema=False)
        .filter(pl.col("status") == "Terminated")
        .select(
            pl.col("task_name").str.extract(r"^[A-Za-z]+(\d+)", 1).cast(pl.Int32).alias("idx"),
            pl.col("task_name")
            .str.replace(r"_\d+$", "", literal=False)
            .str.extract_all(r"_\d+")
            .alias("cut"),
            pl.col("task_name").str.extract_all(r"_\d+").alias("all"),
            (pl.col("task_name").str.len_bytes() >= 50).alias("truncated"),
        )
        .select(
            "idx",
            pl.when("truncated")
            .then("cut")
            .otherwise("all")
            .list.eval(pl.element().str.slice(1).cast(pl.Int32))
            .alias("parents"),
        )
    )
    assert parsed.good.get_column("idx").to_list() == ref.get_column("idx").to_list()
    assert parsed.lengths.tolist() == ref.get_column("parents").list.len().to_list()
    assert parsed.parents.tolist() == ref.get_column("parents").explode().to_list()


def test_real_sample_bundled_gzip_is_the_same(real, tmp_path, monkeypatch) -> None:
    from schedlab.traces import bundled

    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path))
    _same(real, read_alibaba2018(bundled("alibaba2018"), source_ids=True))


def test_real_sample_windowed_and_sampled_jobsets_simulate(v2018_dags: Path) -> None:
    from schedlab.policies.heuristics import SJF
    from schedlab.simulator.run import simulate

    opts = TraceOptions(time_step=10, slots_per_machine=10, sample=2000, seed=3, jobset_size=200)
    sampled = read_alibaba2018(v2018_dags, options=opts)
    assert len(sampled.jobs) == 2000
    assert len(sampled.jobs.jobset_ids) == 10
    windowed = read_alibaba2018(
        v2018_dags,
        options=TraceOptions(start=3600, end=7200, time_step=10, slots_per_machine=10,
                             jobset_window=600),
    )  # fmt: skip
    assert windowed.report.rows_kept == 710
    for js in (sampled.jobs, windowed.jobs):
        table = simulate(js, [SJF()]).table
        assert table.height == len(js)
        assert (table["start"] >= table["arrival"]).all()


def test_real_sample_every_status_per_job(v2018_dags: Path) -> None:
    every = "Terminated|Failed|Running|Waiting"
    r = read_alibaba2018(v2018_dags, statuses=every, granularity="job")
    assert (r.report.rows_read, r.report.rows_kept) == (55_874, 55_469)
    assert r.report.dropped == {"missing_value": 354, "no_end_time": 51}
    assert len(r.jobs) == 2_119
