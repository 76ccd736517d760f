"""Reading text in blocks of whole lines: line numbers, line ends, BOMs, bytes not UTF-8."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.loaders.traces import textio

LINE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=30),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
    bom=st.booleans(),
    final=st.booleans(),
    size=st.integers(1, 64),
)
def test_blocks_give_every_line_once_with_its_number(
    tmp_path_factory, lines: list[str], end: str, bom: bool, final: bool, size: int
) -> None:
    path = tmp_path_factory.mktemp("t") / "t.txt"
    body = end.join(lines) + (end if final else "")
    path.write_bytes((textio.BOM if bom else b"") + body.encode())
    seen: list[str] = []
    for first, data, n in textio.blocks(path, size=size):
        assert first == len(seen) + 1
        part = textio.split_lines(data).to_list()
        assert len(part) == n
        seen += part
    unended_empty = not final and lines[-1] == ""  # no characters, no end: no line
    assert seen == (lines[:-1] if unended_empty else lines)
    assert textio.read_lines(path).get_column("line").to_list() == list(range(1, len(seen) + 1))


def test_lines_with_bytes_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\nM\xfcller\n\xe2\x82\xac fine\nbad \xff\xfe end\n")
    frame = textio.read_lines(path)
    raw = ["ok", "M\ufffdller", "€ fine", "bad \ufffd\ufffd end"]
    assert frame.get_column("raw").to_list() == raw
    assert frame.get_column("encoding").to_list() == [
        None,
        "byte 0xfc at byte 2 of the line is not UTF-8",
        None,
        "byte 0xff at byte 5 of the line is not UTF-8",
    ]


def test_a_line_longer_than_many_blocks(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\n" + b"x" * 100_000 + b"\nb")
    got = [(first, n) for first, _, n in textio.blocks(path, size=7)]
    assert sum(n for _, n in got) == 3
    assert textio.read_lines(path).get_column("raw").str.len_chars().to_list() == [1, 100_000, 1]
