"""What the line-oriented trace loaders (SWF, Alibaba v2017) do alike: the committed fixture's
drops and messages, every bad line a counted drop with its line number (or under ``strict`` an error
naming file and line), and a file that is no trace refused in one error naming it."""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.line_formats import GOOD, HEADER, READ, SMALL, SMALL_DROP_LINES, data_line, write
from tests.loader_helpers import (
    assert_file_refused,
    assert_one_counted_drop,
    assert_strict_names_line,
    sample_lines,
    sample_messages,
)


def per_format(table: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    """One case ``(fmt, key, value)`` for each format and key of ``table``, named ``fmt-key``."""
    return [
        pytest.param(fmt, key, value, id=f"{fmt}-{key}")
        for fmt, values in table.items()
        for key, value in values.items()
    ]


# -- the committed fixture: one line per case ----------------------------------------------------


@pytest.mark.parametrize(("fmt", "reason", "line"), per_format(SMALL_DROP_LINES))
def test_small_fixture_drop_lines(fmt: str, reason: str, line: int) -> None:
    assert sample_lines(READ[fmt](SMALL[fmt]), reason) == [line]


SMALL_MESSAGES = {
    "swf": {
        "not_a_number": "field 4 (run_time) is not a number: 4x",
        "wrong_field_count": "expected 18 whitespace-separated fields, found 17",
        "negative_duration": "run_time=-5 must be >= 0",
        "exceeds_capacity": "procs=16.0 exceeds a machine's 8",
    },
    "alibaba2017": {
        "not_a_number": "end_time is not a number: 7x0",
        "missing_value": "plan_cpu is empty",
        "negative_duration": "end_time=399 is before create_time=400",
        "wrong_field_count": "expected 8 comma-separated fields, found 7",
        "exceeds_capacity": "cpu=128.0 exceeds a machine's 64",
    },
}
"""Per format: the fixture's sample message for a reason, naming the value."""


@pytest.mark.parametrize(("fmt", "reason", "message"), per_format(SMALL_MESSAGES))
def test_messages_name_the_values(fmt: str, reason: str, message: str) -> None:
    assert sample_messages(READ[fmt](SMALL[fmt]))[reason] == message


# -- bad input, one case at a time ---------------------------------------------------------------

BAD_LINES = {
    "swf": [
        ("1 0 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1\n", "wrong_field_count"),
        ("1 0 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1 7\n", "wrong_field_count"),
        ("1 0 0 ten 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "not_a_number"),
        ("1 0 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 nan\n", "not_a_number"),
        ("1 0 0 -7 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "negative_duration"),
        ("1 0 0 -1 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "unknown_run_time"),
        ("1 -1 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "unknown_submit_time"),
        ("1 -9 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "negative_submit_time"),
        ("1 0 0 10 -1 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "unknown_procs"),
        ("1 0 0 10 9 -1 -1 9 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "exceeds_capacity"),
        ("1 0 0 10 2 -1 -1 2 60 -1 7 1 1 -1 -1 -1 -1 -1\n", "invalid_status"),
        ("1 0 0 10 2 -1 -1 2 60 -1 3 1 1 -1 -1 -1 -1 -1\n", "partial_execution"),
    ],
    "alibaba2017": [
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
    ],
}
"""Per format: a bad data line and the reason it is dropped for."""

SELECTED = {
    "swf": ("exceeds_capacity", "partial_execution"),
    "alibaba2017": ("exceeds_capacity", "status_Failed"),
}
"""Per format: reasons a well-formed line is dropped for, where ``strict`` does not stop."""

CASES = [(fmt, bad, reason) for fmt, lines in BAD_LINES.items() for bad, reason in lines]


@pytest.mark.parametrize(("fmt", "bad", "reason"), CASES)
def test_bad_line_is_a_counted_drop_with_its_line(
    tmp_path: Path, fmt: str, bad: str, reason: str
) -> None:
    result = READ[fmt](write(fmt, tmp_path, GOOD[fmt], bad, GOOD[fmt]))
    assert_one_counted_drop(result, reason, line=data_line(fmt, 2))


@pytest.mark.parametrize(("fmt", "bad", "reason"), [c for c in CASES if c[2] not in SELECTED[c[0]]])
def test_bad_line_strict_names_file_and_line(
    tmp_path: Path, fmt: str, bad: str, reason: str
) -> None:
    path = write(fmt, tmp_path, GOOD[fmt], bad)
    assert_strict_names_line(READ[fmt], path, data_line(fmt, 2), reason)


# -- files that are no trace ---------------------------------------------------------------------

REFUSED_FILES = {
    "swf": {
        "empty": ("empty.swf", b"", r"empty\.swf: the file is empty"),
        "only_comments": ("t.swf", f"{HEADER['swf']}\n".encode(), r"t\.swf: no job lines"),
        "plain_text_named_gz": (
            "log.swf.gz",
            f"{HEADER['swf']}{GOOD['swf']}".encode(),
            r"log\.swf\.gz: the name says gzip",
        ),
        "truncated_gzip": (
            "cut.swf.gz",
            gzip.compress(SMALL["swf"].read_bytes())[:60],
            r"cut\.swf\.gz: corrupt or truncated",
        ),
        # bzip2 magic, corrupt stream
        "corrupt_bzip2": (
            "log.swf",
            b"BZh91AY&SY\xff\xfe\x00\x81" * 8,
            r"log\.swf: corrupt or truncated compressed",
        ),
        "binary": (
            "log.swf",
            b"\x7fELF\x02\x01\x01\x00" * 8,
            r"log\.swf: binary data \(a NUL byte at byte 8\)",
        ),
        "not_an_swf_log": (
            "t.swf",
            b"100,160,1,1,3,Terminated,50,0.01\n",
            r"t\.swf: not an SWF log: .*line 1 has 1",
        ),
    },
    "alibaba2017": {
        "empty": ("empty.csv", b"", r"empty\.csv: the file is empty"),
        "blank": ("blank.csv", b"\n\n", r"blank\.csv: no data lines"),
        "plain_text_named_gz": (
            "batch_task.csv.gz",
            GOOD["alibaba2017"].encode(),
            r"batch_task\.csv\.gz: the name says gzip",
        ),
        # xz magic, corrupt stream
        "binary": (
            "batch_task.csv",
            b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\xff" * 8,
            r"batch_task\.csv: corrupt or truncated",
        ),
    },
}
"""Per format, by case: ``(name, data, the error's pattern)`` of a file the loader refuses."""


@pytest.mark.parametrize(("fmt", "case", "refused"), per_format(REFUSED_FILES))
def test_a_file_that_is_no_trace_is_refused_naming_it(
    tmp_path: Path, fmt: str, case: str, refused: tuple[str, bytes, str]
) -> None:
    assert_file_refused(READ[fmt], tmp_path, *refused)
