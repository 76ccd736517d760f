"""Alibaba cluster-trace-v2018 batch_task loader, bad input: every line a counted drop with its
reason, or a clear error; compression, headers, other tables; the compiled scanner."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces import alibaba2018_parse as parse
from schedlab.loaders.traces import alibaba2018_scan as scan
from schedlab.loaders.traces import textio
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.loaders.traces.transform import TraceOptions
from tests.alibaba2018_helpers import (
    BAD,
    DAG,
    GOOD,
    HEADER,
    INSTANCES,
    QUIRKS,
    V2017_SMALL,
    csv_file,
    same_load,
)
from tests.loader_helpers import sample_lines

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
    assert line in sample_lines(r, reason)


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
    assert 5 in sample_lines(r, "no_end_time")  # Running: end_time 0 before start_time
    assert 6 in sample_lines(r, "missing_value")  # Waiting: empty instance_num, plan_cpu, plan_mem


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
    r = read_alibaba2018(csv_file(tmp_path, GOOD + bad + GOOD))
    assert r.report.dropped == {reason: 1}
    assert sample_lines(r, reason) == [2]
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
    path = csv_file(tmp_path, GOOD + "M3,1,j_1,1,Failed,10,20,100,0.5\n" + bad)
    with pytest.raises(TraceFormatError, match=r"^line 3 of .*batch_task\.csv: "):
        read_alibaba2018(path, options=TraceOptions(strict=True))
    assert read_alibaba2018(path).report.rows_kept == 1  # not strict: counted drops


def test_strict_ignores_the_status_selection() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(strict=True))
    assert r.report.dropped == {"status_Running": 1}


def test_empty_blank_and_header_only_files(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="empty"):
        read_alibaba2018(csv_file(tmp_path, ""))
    with pytest.raises(TraceFormatError, match="no data lines"):
        read_alibaba2018(csv_file(tmp_path, "\n\n  \n"))
    with pytest.raises(TraceFormatError, match="no data lines"):
        read_alibaba2018(csv_file(tmp_path, HEADER))
    with pytest.raises(TraceFormatError, match="no such file"):
        read_alibaba2018(tmp_path / "missing.csv")


def test_wrong_compression_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="name says gzip"):
        read_alibaba2018(csv_file(tmp_path, GOOD, name="batch_task.csv.gz"))
    path = tmp_path / "batch_task.csv"
    path.write_bytes(bz2.compress(GOOD.encode()))  # bzip2 is read, whatever the name says
    same_load(read_alibaba2018(csv_file(tmp_path, GOOD, name="plain.csv")), read_alibaba2018(path))
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
        read_alibaba2018(csv_file(tmp_path, "a;b;c\nd;e;f\n"))


def test_v2017_file_is_rejected() -> None:
    with pytest.raises(
        TraceFormatError, match=r"looks like Alibaba cluster-trace-v2017.*`alibaba2017`"
    ):
        read_alibaba2018(V2017_SMALL)


def test_real_v2017_table_is_rejected(v2017_csv: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"cluster-trace-v2017.* Use the `alibaba2017`"):
        read_alibaba2018(v2017_csv)


# -- formats: header, CRLF, gzip, tar.gz, the text fallback ----------------------------------------


def test_header_crlf_and_blank_lines(tmp_path: Path) -> None:
    plain = read_alibaba2018(DAG)
    text = DAG.read_text()
    with_header = read_alibaba2018(csv_file(tmp_path, HEADER + text, name="h.csv"))
    same_load(plain, with_header)
    assert with_header.report.notes == ("line 1 is a header line, skipped",)
    assert sample_lines(with_header, "status_Running") == [8]  # physical line numbers
    crlf = read_alibaba2018(csv_file(tmp_path, "\n" + text.replace("\n", "\r\n"), name="c.csv"))
    assert crlf.jobs.jobs.equals(plain.jobs.jobs)
    assert crlf.jobs.meta.provenance["alibaba2018"]["blank_lines"] == 1


def test_gzip_and_tar_gz_load_like_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    plain = read_alibaba2018(DAG)
    gz = tmp_path / "batch_task.csv.gz"
    gz.write_bytes(gzip.compress(DAG.read_bytes()))
    same_load(plain, read_alibaba2018(gz))
    tgz = tmp_path / "batch_task.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(DAG, arcname="batch_task.csv")
        tar.add(QUIRKS, arcname="other.csv")
    same_load(plain, read_alibaba2018(tgz))


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
    same_load(read_alibaba2018(DAG), read_alibaba2018(csv_file(tmp_path, text)))


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "7",
        "100",
        "0.49",
        "618882",
        "-3.25",
        "+2",
        "1.",
        ".5",
        "123456789012345",
        "0.000000000000000000001",
        "12.3456789",
        "99999.99999",
        "00042",
    ],
)
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
    path = csv_file(tmp_path, "\n".join(lines))  # no final newline; lines longer than a block
    seen, total = [], 0
    for first, data, n in textio.blocks(path, size=16):
        assert first == total + 1
        seen += bytes(data).decode().splitlines()
        total += n
    assert seen == lines
    assert total == 500
