"""Loaders survive any file (issue 9): one test per category, every fixture built in tmp_path.

Each category runs over every trace loader where it applies; a loader either loads the good
rows and accounts for every other one, or raises TraceFormatError in one line naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.alibaba2017 import read_alibaba2017
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.loaders.traces.cache import cache_dir
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.swf import read_swf
from schedlab.loaders.traces.transform import TraceOptions

Reader = Callable[..., LoadResult]
READERS: dict[str, Reader] = {
    "swf": read_swf,
    "alibaba2017": read_alibaba2017,
    "alibaba2018": read_alibaba2018,
}
HEADER = {"swf": "; MaxProcs: 100\n", "alibaba2017": "", "alibaba2018": ""}


def row(fmt: str, i: int, start: str = "100", length: str = "50") -> str:
    """One valid data line of ``fmt``: job ``i`` arriving at ``start`` s, running ``length`` s
    (both as written in the file; ``length`` is the end time for the Alibaba tables)."""
    if fmt == "swf":
        return f"{i} {start} 5 {length} 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1"
    end = length if not length.replace(".", "").isdigit() else str(int(start) + int(length))
    if fmt == "alibaba2017":
        return f"{start},{end},{i},1,5,Terminated,100,0.1"
    return f"M1,1,j_{i},1,Terminated,{start},{end},100,0.5"


def text(fmt: str, *lines: str, n: int = 3) -> str:
    """``n`` good rows, then ``lines``."""
    body = [row(fmt, i, start=str(100 + 10 * i)) for i in range(1, n + 1)]
    return HEADER[fmt] + "\n".join([*body, *lines]) + "\n"


def write(tmp_path: Path, data: str | bytes, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def line_of(fmt: str, k: int) -> int:
    """File line number of data row ``k`` (1-based) of :func:`text`."""
    return k + HEADER[fmt].count("\n")


formats = pytest.mark.parametrize("fmt", list(READERS))


def test_every_registered_loader_is_covered() -> None:
    from schedlab.registry import loaders

    assert set(loaders.names()) == set(READERS)


# -- non-contiguous v2018 jobs --------------------------------------------------------------------


def _by_task(result: LoadResult) -> pl.DataFrame:
    """Jobs keyed by source id, parents as source ids (independent of row order and job ids)."""
    jobs = result.jobs.jobs
    name = dict(zip(jobs["job_id"], jobs["source_id"], strict=True))
    parents = [sorted(name[p] for p in ps) for ps in jobs["parents"]]
    return (
        jobs.drop("job_id", "parents")
        .with_columns(pl.Series("parents", parents, dtype=pl.List(pl.Utf8)))
        .sort("source_id")
    )


def test_v2018_jobs_need_not_be_contiguous(tmp_path: Path) -> None:
    lines = [
        "M1,1,j_1,1,Terminated,100,110,100,0.5",
        "M1,1,j_2,1,Terminated,100,120,100,0.5",
        "R2_1,1,j_1,1,Terminated,110,130,100,0.5",
        "R2_1,1,j_2,1,Terminated,120,125,100,0.5",
        "J3_1_2,1,j_1,1,Terminated,130,140,100,0.5",
    ]
    mixed = read_alibaba2018(write(tmp_path, "\n".join(lines) + "\n"), source_ids=True)
    contiguous = "\n".join(lines[i] for i in (0, 2, 4, 1, 3)) + "\n"
    ordered = read_alibaba2018(write(tmp_path, contiguous, "o.csv"), source_ids=True)
    assert _by_task(mixed).equals(_by_task(ordered))
    assert _by_task(mixed).filter(pl.col("source_id") == "j_1/J3_1_2")["parents"].to_list() == [
        ["j_1/M1", "j_1/R2_1"]
    ]
    jobs = read_alibaba2018(write(tmp_path, "\n".join(lines) + "\n"), granularity="job")
    assert jobs.jobs.jobs.sort("source_id")["duration"].to_list() == [40, 25]  # critical paths


@pytest.mark.slow
def test_shuffled_real_sample_loads_to_the_same_jobset(v2018_dags: Path, tmp_path: Path) -> None:
    header, *rows = v2018_dags.read_text().splitlines()
    random.Random(7).shuffle(rows)
    shuffled = write(tmp_path, "\n".join([header, *rows]) + "\n", "shuffled.csv")
    a = read_alibaba2018(v2018_dags, source_ids=True)
    b = read_alibaba2018(shuffled, source_ids=True)
    assert _by_task(a).equals(_by_task(b))
    assert (a.report.dropped, a.report.fixed) == (b.report.dropped, b.report.fixed)
    a_jobs = read_alibaba2018(v2018_dags, granularity="job").jobs.jobs.drop("job_id")
    b_jobs = read_alibaba2018(shuffled, granularity="job").jobs.jobs.drop("job_id")
    assert a_jobs.sort("source_id").equals(b_jobs.sort("source_id"))


# -- binary input and encodings -------------------------------------------------------------------


@formats
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"PAR1\x15\x04\x15\x10" + b"\x00" * 40, "a Parquet file, not a text trace"),
        (b"\x7fELF\x02\x01\x01\x00" * 30, r"binary data \(a NUL byte at byte 8\)"),
        (b"PK\x03\x04" + b"\x00" * 40, "a zip archive"),
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "zstd-compressed"),
        ("é".encode("utf-16"), "UTF-16 text"),
    ],
)
def test_files_of_another_kind_get_one_clear_line(
    fmt: str, data: bytes, message: str, tmp_path: Path
) -> None:
    path = write(tmp_path, data, "trace.csv")
    where = re.escape(str(tmp_path / "trace.csv"))
    with pytest.raises(TraceFormatError, match=rf"^{where}: {message}") as info:
        READERS[fmt](path)
    assert "\n" not in str(info.value)


def test_parquet_file_given_to_the_swf_loader(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({"job_id": [1, 2]}).write_parquet(path)
    with pytest.raises(TraceFormatError, match=r"jobs\.parquet: a Parquet file, not a text trace"):
        read_swf(path)


@pytest.mark.parametrize("fmt", ["swf", "alibaba2017"])
def test_a_latin1_byte_drops_its_line_by_number(fmt: str, tmp_path: Path) -> None:
    bad = row(fmt, 9).encode() + b"\xe9"
    path = write(tmp_path, text(fmt).encode() + bad + b"\n")
    result = READERS[fmt](path)
    assert result.report.dropped == {"invalid_utf8": 1}
    assert result.report.sample_lines("invalid_utf8") == [line_of(fmt, 4)]
    message = result.report.samples["message"][0]
    assert message == f"byte 0xe9 at byte {len(bad)} of the line is not UTF-8"
    with pytest.raises(TraceFormatError, match=rf"line {line_of(fmt, 4)} of .*0xe9"):
        READERS[fmt](path, options=TraceOptions(strict=True))


def test_latin1_in_an_swf_comment_is_a_note(tmp_path: Path) -> None:
    path = write(tmp_path, b"; Note: M\xfcller\n" + text("swf").encode())
    result = read_swf(path)
    assert result.report.rows_kept == 3
    assert any("not UTF-8" in note for note in result.report.notes)


@formats
def test_a_control_byte_is_a_bad_row_not_an_encoding_error(fmt: str, tmp_path: Path) -> None:
    bad = row(fmt, 9).replace("100", "1\x1f00", 1)
    result = READERS[fmt](write(tmp_path, text(fmt, bad)))
    assert sum(result.report.dropped.values()) == 1
    assert result.report.rows_kept == 3
    assert "UTF-8" not in result.report.summary()


@formats
@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress])
def test_compressed_files_load_like_plain(fmt: str, compress: Callable, tmp_path: Path) -> None:
    plain = READERS[fmt](write(tmp_path, text(fmt)))
    packed = READERS[fmt](write(tmp_path, compress(text(fmt).encode()), "trace.dat"))
    assert packed.jobs.jobs.equals(plain.jobs.jobs)


@formats
def test_line_endings_cr_only_crlf_and_mixed(fmt: str, tmp_path: Path) -> None:
    plain = READERS[fmt](write(tmp_path, text(fmt)))
    cr = READERS[fmt](write(tmp_path, text(fmt).replace("\n", "\r"), "cr.txt"))
    assert cr.jobs.jobs.equals(plain.jobs.jobs)
    assert any("CR alone" in note for note in cr.report.notes)
    mixed = text(fmt).replace("\n", "\r\n", 2)
    assert READERS[fmt](write(tmp_path, mixed, "mixed.txt")).jobs.jobs.equals(plain.jobs.jobs)


def _tar(members: list[tarfile.TarInfo], data: bytes = b"", mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return buf.getvalue()


@formats
def test_plain_tar_is_an_archive_not_text(fmt: str, tmp_path: Path) -> None:
    data = text(fmt).encode()
    member = tarfile.TarInfo("batch_task.csv")
    member.size = len(data)
    path = write(tmp_path, _tar([member], data), "trace.tar")
    assert READERS[fmt](path).jobs.jobs.equals(READERS[fmt](write(tmp_path, data)).jobs.jobs)


@formats
def test_symlink_member_is_named(fmt: str, tmp_path: Path) -> None:
    link = tarfile.TarInfo("data/batch_task.csv")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    path = write(tmp_path, _tar([link], mode="w:gz"), "trace.tar.gz")
    message = r"member 'data/batch_task\.csv' is a symbolic link \(to '/etc/passwd'\)"
    with pytest.raises(TraceFormatError, match=message):
        READERS[fmt](path)


def test_member_option_cannot_escape_the_cache(tmp_path: Path) -> None:
    data = text("alibaba2017").encode()
    member = tarfile.TarInfo("evil")
    member.size = len(data)
    path = write(tmp_path, _tar([member], data, mode="w:gz"), "t.tar.gz")
    assert read_alibaba2017(path, member="evil").report.rows_kept == 3
    for name in ("../../evil", "/tmp/evil"):
        with pytest.raises(TraceFormatError, match="expected member"):
            read_alibaba2017(path, member=name)
    files = [p for p in cache_dir().rglob("*") if p.is_file()]
    assert files
    assert all(p.parent.parent == cache_dir() for p in files)


# -- zero rows kept -------------------------------------------------------------------------------


@formats
def test_nothing_kept_is_an_error_saying_why(fmt: str, tmp_path: Path) -> None:
    path = write(tmp_path, text(fmt))
    statuses = {"swf": "0", "alibaba2017": "Failed", "alibaba2018": "Failed"}[fmt]
    with pytest.raises(TraceFormatError, match=r"no job kept: all 3 rows read were dropped: 3 "):
        READERS[fmt](path, statuses=statuses)
    with pytest.raises(TraceFormatError, match=r"3 outside_window \(e\.g\. line \d+: arrives"):
        READERS[fmt](path, options=TraceOptions(start=1e6))


@formats
def test_quoted_fields_and_trailing_delimiters(fmt: str, tmp_path: Path) -> None:
    sep = " " if fmt == "swf" else ","
    quoted = HEADER[fmt] + "".join(
        sep.join(f'"{f}"' for f in row(fmt, i).split(sep)) + "\n" for i in range(1, 4)
    )
    with pytest.raises(TraceFormatError, match=r"no job kept.*the fields are quoted"):
        READERS[fmt](write(tmp_path, quoted))
    trailing = write(tmp_path, HEADER[fmt] + "".join(row(fmt, i) + sep + "\n" for i in range(4)))
    if fmt == "swf":  # whitespace-separated: trailing blanks are no field
        assert read_swf(trailing).report.rows_kept == 4
    else:
        with pytest.raises(TraceFormatError, match=r"none of .* lines has [89] comma-separated"):
            READERS[fmt](trailing)


@formats
@pytest.mark.parametrize(
    "data", ["", "   \n\t\n\n", "\ufeff", "\ufeff\n\n"], ids=["empty", "blank", "bom", "bom+blank"]
)
def test_empty_and_blank_files(fmt: str, data: str, tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"trace\.txt: (the file is empty|no (data|job))"):
        READERS[fmt](write(tmp_path, data))


# -- header lines and BOMs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "header"),
    [
        ("alibaba2017", "create_time,end_time,job_id,task_id,instance_num,status,plan_cpu,"
                        "plan_mem"),
        ("alibaba2018", "task_name,instance_num,job_name,task_type,status,start_time,end_time,"
                        "plan_cpu,plan_mem"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_header_lines_and_boms_are_skipped(fmt: str, header: str, bom: str, tmp_path: Path) -> None:
    plain = READERS[fmt](write(tmp_path, text(fmt)))
    path = write(tmp_path, bom + header + "\n" + text(fmt), "h.csv")
    result = READERS[fmt](path, options=TraceOptions(strict=True))
    assert result.jobs.jobs.equals(plain.jobs.jobs)
    assert result.report.rows_read == 3
    assert result.report.fixed == plain.report.fixed  # the BOM did not make a name unknown
    assert any("header line" in n for n in result.report.notes)
    assert any("byte-order mark" in n for n in result.report.notes) == bool(bom)
    with pytest.raises(TraceFormatError, match="no data lines"):
        READERS[fmt](write(tmp_path, bom + header + "\n", "only.csv"))


def test_v2018_bom_keeps_the_first_task_and_its_edge(tmp_path: Path) -> None:
    lines = "\ufeffM1,1,j_1,1,Terminated,100,110,100,0.5\nR2_1,1,j_1,1,Terminated,110,130,100,0.5\n"
    result = read_alibaba2018(write(tmp_path, lines))
    assert result.report.fixed == {}
    assert result.jobs.jobs["parents"].to_list() == [[], [0]]


# -- bounded samples, notes and the summary -------------------------------------------------------


@formats
def test_stored_bad_lines_are_clipped(fmt: str, tmp_path: Path) -> None:
    huge = "x" * 2_000_000
    path = write(tmp_path, text(fmt, huge, row(fmt, 9, length="1" + huge)))
    result, _ = load_trace(fmt, path)
    for column in ("raw", "message"):
        assert result.report.samples[column].str.len_chars().max() < 400
    assert "more characters)" in result.report.samples["raw"][0]
    cached = list((cache_dir() / "converted").glob("*.report.json"))
    assert [p.stat().st_size < 10_000 for p in cached] == [True]
    assert json.loads(cached[0].read_text())["rows_read"] == 5


def test_duplicated_header_and_maxrecords_are_noted(tmp_path: Path) -> None:
    head = "; MaxProcs: 100\n; MaxRecords: 7\n; MaxProcs: 128\n"
    result = read_swf(write(tmp_path, head + text("swf")[len(HEADER["swf"]) :]))
    assert result.jobs.meta.capacity == (100.0,)
    notes = " | ".join(result.report.notes)
    assert "header MaxProcs is given 2 times (lines 1, 3: '100', '128'); the first" in notes
    assert "header MaxRecords=7 but the file has 3 job lines" in notes


def test_load_summary_prints_drops_with_lines_fixes_and_notes(tmp_path: Path) -> None:
    bad = [row("swf", 7, length="-1"), row("swf", 8, length="-1"), row("swf", 9, length="0")]
    path = write(tmp_path, "; MaxRecords: 99\n" + text("swf", *bad))
    summary = read_swf(path).summary()
    assert "read 6 rows, kept 4" in summary
    assert "dropped 2: unknown_run_time (lines 6, 7)" in summary
    assert "e.g. line 6: run_time=-1 (unknown)" in summary
    assert "fixed   1: zero_duration_as_one_step" in summary
    assert "note: header MaxRecords=99 but the file has 6 job lines" in summary
    assert "4 jobs in 1 jobsets, span 31 steps of 1 s, offered load" in summary


# -- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobset_size": 0}, r"jobset_size \(--jobset-size\) must be an integer >= 1, got 0"),
        ({"sample": -2}, r"sample \(--sample\) must be an integer >= 1"),
        ({"time_step": float("nan")}, r"time_step \(--time-step, seconds\) must be a finite"),
        ({"time_step": float("inf")}, r"time_step .* must be a finite number > 0"),
        ({"jobset_window": 0.0}, r"jobset_window .* must be a finite number > 0"),
        ({"start": float("nan")}, r"start \(--start\) must be a finite number"),
        ({"seed": -1}, r"seed \(--seed\) must be an integer >= 0"),
        ({"machines": 0}, r"machines \(--machines\) must be >= 1"),
    ],
)
def test_bad_options_are_one_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TraceOptions(**kwargs)
