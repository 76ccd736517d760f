"""Reading trace text: whole lines in blocks, with exact line numbers whatever the file's quirks.

Every loader reads its (decompressed) text through :func:`blocks`, so all of them treat the
same quirks the same way:

* a UTF-8 byte-order mark at the start is skipped (line 1 stays line 1);
* lines may end with LF, CR LF or, when the file has no LF at all, CR alone (classic Mac
  files, read as if they ended with LF); a CR before LF is never part of a line;
* a line may be longer than a block (the block grows to hold it);
* bytes that are not UTF-8 (e.g. one Latin-1 ``é``) are found by line: :func:`read_lines`
  reports which lines hold them and where, so a loader drops those lines with a reason
  instead of rejecting the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from schedlab.errors import TraceFormatError

BLOCK_BYTES = 1 << 26
"""Bytes read per block (64 MB); a block holds whole lines only."""
BOM = b"\xef\xbb\xbf"
HEAD_BYTES = 1 << 16
"""Bytes of the start of a file looked at to recognise its layout."""


@dataclass(frozen=True, slots=True)
class Layout:
    """How a text file's lines are laid out (from its first bytes)."""

    bom: bool
    """The file starts with a UTF-8 byte-order mark (skipped)."""
    cr_only: bool
    """Lines end with CR alone (no LF in the first 64 KB): CR is read as LF."""

    def notes(self) -> list[str]:
        """What a drop report should say about the layout."""
        notes = ["a UTF-8 byte-order mark at the start was skipped"] if self.bom else []
        if self.cr_only:
            notes.append("lines end with CR alone (classic Mac): read as line ends")
        return notes


def layout(path: Path) -> Layout:
    """The :class:`Layout` of the text file at ``path``."""
    head = head_bytes(path)
    return Layout(bom=head.startswith(BOM), cr_only=b"\r" in head and b"\n" not in head)


def head_bytes(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of ``path``."""
    with path.open("rb") as fh:
        return fh.read(size)


def blocks(
    path: Path, size: int = BLOCK_BYTES, ring: int = 4
) -> Iterator[tuple[int, memoryview, int]]:
    """Yield ``(number of its first line, bytes, number of lines)`` for blocks of whole lines.

    Lines end with LF in every block (see the module docstring for BOMs and CR-only files).
    Blocks are read in place into a ring of ``ring`` reused buffers (no copies but the partial
    line carried over): a consumer must be done with a block before ``ring - 1`` more are read.
    """
    lay = layout(path)
    pool: list[bytearray] = []
    line, rest, k = 1, b"", 0
    size = max(1, min(size, path.stat().st_size))  # small files get small buffers
    want = size
    with path.open("rb", buffering=0) as fh:
        if lay.bom:
            fh.seek(len(BOM))
        while True:
            need, slot = len(rest) + want, k % ring
            if slot == len(pool):
                pool.append(bytearray(need))
            elif len(pool[slot]) < need:
                pool[slot] = bytearray(need)
            buf = pool[slot]
            buf[: len(rest)] = rest
            got = fh.readinto(memoryview(buf)[len(rest) : need])
            if got == 0:
                break
            end = len(rest) + got
            if lay.cr_only:
                new = np.frombuffer(buf, dtype=np.uint8, count=got, offset=len(rest))
                new[new == 13] = 10
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:  # a line longer than what was read: read on, twice as much
                rest, want = bytes(buf[:end]), max(want, end)
                continue
            n = buf.count(b"\n", 0, cut)
            yield line, memoryview(buf)[:cut], n
            line, rest, k, want = line + n, bytes(buf[cut:end]), k + 1, size
    if rest:
        yield line, memoryview(rest), rest.count(b"\n") + 1


def split_lines(data: bytes | memoryview) -> pl.Series:
    """The lines of a block (from :func:`blocks`) as a str Series ``raw``, without line ends;
    bytes that are not UTF-8 become U+FFFD."""
    text = bytes(data).decode("utf-8", errors="replace")
    lines = pl.Series("raw", [text]).str.split("\n").explode()
    if text.endswith("\n"):
        lines = lines.head(-1)
    return lines.str.strip_suffix("\r")


def pick_lines(data: bytes | memoryview, wanted: list[int]) -> dict[int, str]:
    """The text of some lines of a block (0-based line numbers), without copying the block."""
    arr = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)
    out = {}
    for i in wanted:
        a = int(ends[i - 1]) + 1 if i else 0
        b = int(ends[i]) if i < ends.size else arr.size
        out[i] = bytes(data[a:b]).removesuffix(b"\r").decode("utf-8", errors="replace")
    return out


def invalid_utf8(data: bytes | memoryview) -> dict[int, str]:
    """Lines of a block holding bytes that are not UTF-8: 0-based line -> what and where."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return {}
    arr = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)
    bad = {}
    for i in np.unique(np.searchsorted(ends, np.flatnonzero(arr >= 0x80))).tolist():
        a = int(ends[i - 1]) + 1 if i else 0
        b = int(ends[i]) if i < ends.size else len(raw)
        try:
            raw[a:b].decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = raw[a + exc.start]
            bad[i] = f"byte 0x{byte:02x} at byte {exc.start + 1} of the line is not UTF-8"
    return bad


def read_lines(path: Path) -> pl.DataFrame:
    """Every line of a text file: ``line`` (int64, 1-based), ``raw`` (str) and ``encoding``
    (str, null unless the line holds bytes that are not UTF-8: what and where).

    Blank lines are kept so line numbers stay exact.
    """
    frames = []
    for first, data, n in blocks(path):
        frame = pl.DataFrame(
            {"line": np.arange(first, first + n, dtype=np.int64), "raw": split_lines(data)}
        ).with_columns(pl.lit(None, pl.Utf8).alias("encoding"))
        if bad := invalid_utf8(data):
            why = frame.get_column("encoding").scatter(list(bad), list(bad.values()))
            frame = frame.with_columns(why)
        frames.append(frame)
    if not frames:
        return pl.DataFrame(schema={"line": pl.Int64, "raw": pl.Utf8, "encoding": pl.Utf8})
    return pl.concat(frames)


def require_shape(data: pl.DataFrame, n_fields: int, source: str, what: str, fields: str) -> None:
    """Raise :class:`~schedlab.errors.TraceFormatError` unless some line of ``data`` (columns
    ``line``, ``raw``, ``n_fields``) has ``n_fields`` fields: the file is not ``what`` (e.g. "an
    SWF log"); ``fields`` says how they are separated (e.g. "whitespace-separated")."""
    if (data.get_column("n_fields") == n_fields).any():
        return
    first = data.row(0, named=True)
    msg = (
        f"{source}: not {what}: none of its {data.height} data lines has {n_fields} {fields} "
        f"fields (line {first['line']} has {first['n_fields']}: {first['raw'][:80]!r})"
    )
    raise TraceFormatError(msg)
