"""Opening trace files as users have them: plain text, gzip, bzip2, xz, and tar archives of them.

The kind of a file is recognised from its first bytes, never trusted from its name: a name that
promises compression on a file that is not compressed is reported, and files of other kinds
(Parquet, zip, zstd, 7z, UTF-16 text, binary data) are rejected in one line that says what they
are. Compressed files and archive members are streamed into schedlab's cache, keyed by the
SHA-256 of the file's content (never by its name or date), under a name of our own: no archive
member can escape the cache (``../`` names and absolute paths are rejected, links are refused).

Decompression is capped against decompression bombs: by default a file may expand to
``RATIO`` times its size or ``FLOOR`` bytes, whichever is more; ``max_bytes`` (the loaders'
``TraceOptions.max_decompressed``) or ``$SCHEDLAB_MAX_DECOMPRESSED`` (bytes; 0: no limit)
override it. A decompression that fails or passes the cap leaves no file behind, and partial
files of killed processes are swept away.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Any

from schedlab import sizes
from schedlab.errors import TraceFormatError
from schedlab.io import atomic_path
from schedlab.loaders.traces.cache import cache_dir, source_sha256, sweep_partial
from schedlab.loaders.traces.textio import head_bytes

RATIO = 100
"""Default cap: a compressed file may expand to this many times its size..."""
FLOOR = 1 << 28
"""... or to this many bytes (256 MiB), whichever is more."""
ENV_LIMIT = "SCHEDLAB_MAX_DECOMPRESSED"
CHUNK = 1 << 22
OPENERS: dict[str, Callable[..., IO[Any]]] = {  # IO[bytes] when opened "rb"
    "gzip": gzip.open,
    "bzip2": bz2.open,
    "xz": lzma.open,
}
"""Compressions read natively."""
SUFFIXES = {".gz": "gzip", ".tgz": "gzip", ".bz2": "bzip2", ".tbz2": "bzip2", ".xz": "xz"}
REFUSED = {
    b"PAR1": "a Parquet file, not a text trace (a JobSet Parquet file needs no loading: "
    "give it to `schedlab simulate` as it is)",
    b"PK\x03\x04": "a zip archive: unzip it first",
    b"\x28\xb5\x2f\xfd": "zstd-compressed: decompress it first (zstd -d)",
    b"7z\xbc\xaf\x27\x1c": "a 7z archive: extract it first",
    b"\xff\xfe": "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)",
    b"\xfe\xff": "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)",
}
"""Magic bytes of files that are not text traces, and what to tell the user."""


def compression(head: bytes) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` from a file's first bytes, else None."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh") and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    return None


def check_text(head: bytes, source: str) -> None:
    """Raise unless ``head`` (a file's first bytes) looks like text."""
    for magic, what in REFUSED.items():
        if head.startswith(magic):
            msg = f"{source}: {what}"
            raise TraceFormatError(msg)
    if (nul := head.find(b"\x00")) >= 0:
        msg = f"{source}: binary data (a NUL byte at byte {nul + 1}), not a text trace"
        raise TraceFormatError(msg)


def limit_bytes(max_bytes: int | None, compressed_size: int) -> int | None:
    """The decompression cap in bytes (None: no cap); see the module docstring."""
    if max_bytes is None and (env := os.environ.get(ENV_LIMIT)):
        try:
            max_bytes = int(env)
        except ValueError:
            msg = f"${ENV_LIMIT} must be a number of bytes (0: no limit), got {env!r}"
            raise ValueError(msg) from None
    if max_bytes is None:
        return max(RATIO * compressed_size, FLOOR)
    if max_bytes < 0:
        msg = f"max_decompressed must be >= 0 bytes (0: no limit), got {max_bytes}"
        raise ValueError(msg)
    return max_bytes or None


def text_path(
    path: str | os.PathLike[str], *, member: str | None = None, max_bytes: int | None = None
) -> Path:
    """A plain-text path for ``path``: itself, or its decompressed copy in the cache.

    Parameters
    ----------
    member
        For a tar archive: the member's file name to use (e.g. ``"batch_task.csv"``); by
        default the archive must hold exactly one regular file.
    max_bytes
        Largest decompressed size accepted, in bytes (0: no limit); default from
        ``$SCHEDLAB_MAX_DECOMPRESSED``, else ``max(RATIO x size, FLOOR)``.

    Raises
    ------
    TraceFormatError
        Missing or empty file, a file of another kind (Parquet, zip, binary...), corrupt or
        mislabelled compression, unsafe or missing archive members, a decompressed size past
        the cap.
    """
    src = Path(path)
    if not src.is_file():
        msg = f"{src}: no such file" if not src.exists() else f"{src}: not a regular file"
        raise TraceFormatError(msg)
    size = src.stat().st_size
    if size == 0:
        msg = f"{src}: the file is empty"
        raise TraceFormatError(msg)
    head = head_bytes(src, 1024)
    kind = compression(head)
    tar = _is_tar(src, kind)
    if kind is None and not tar:
        if src.suffix in SUFFIXES:
            msg = f"{src}: the name says {SUFFIXES[src.suffix]} but the content is not compressed"
            raise TraceFormatError(msg)
        check_text(head, str(src))
        return src
    key = hashlib.sha256(f"{source_sha256(src)}\0{member or ''}".encode()).hexdigest()
    out = cache_dir() / "extracted" / f"{key}.txt"  # a name of our own, whatever ``member`` is
    if not out.is_file():
        sweep_partial(out.parent)
        limit = limit_bytes(max_bytes, size)
        try:
            if tar:
                _extract_member(src, member, out, limit)
            else:
                with OPENERS[kind](src, "rb") as fin:  # type: ignore[index]
                    _copy(fin, out, limit, src)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, tarfile.TarError) as exc:
            msg = f"{src}: corrupt or truncated compressed file ({exc})"
            raise TraceFormatError(msg) from exc
    check_text(head_bytes(out, 1 << 16), f"{src} (decompressed)")
    return out


PARSE_BYTES_PER_TEXT_BYTE = 16
"""Peak memory of parsing a trace, per byte of its text (measured: 50 MB of SWF or Alibaba
v2018 text peak at 0.6-0.75 GB above the interpreter's baseline, 12.6-14.8 bytes a byte)."""


def check_parse_size(text: Path, source: str | os.PathLike[str]) -> None:
    """Refuse (:class:`~schedlab.errors.SizeError`) to parse ``text`` (the plain text of
    ``source``) when :data:`PARSE_BYTES_PER_TEXT_BYTE` times its size cannot fit in memory."""
    size = text.stat().st_size
    sizes.check(
        f"parsing {source} ({sizes.human(size)} of text, ~{PARSE_BYTES_PER_TEXT_BYTE} bytes of "
        "memory a byte)",
        float(size * PARSE_BYTES_PER_TEXT_BYTE),
        "load a part of the trace (cut its lines with head or split)",
    )


def _is_tar(src: Path, kind: str | None) -> bool:
    """Whether ``src`` is a tar archive (plain, or compressed as ``kind``)."""
    if kind is None:
        return head_bytes(src, 512)[257:262] == b"ustar"
    try:
        return tarfile.is_tarfile(src)
    except (OSError, EOFError, zlib.error, lzma.LZMAError):
        return False


def _copy(fin: IO[bytes], out: Path, limit: int | None, src: Path) -> None:
    """Stream ``fin`` into ``out`` atomically, failing (and leaving nothing) past ``limit``."""
    total = 0
    with atomic_path(out) as tmp, tmp.open("wb") as fout:
        while block := fin.read(CHUNK):
            total += len(block)
            if limit is not None and total > limit:
                msg = (
                    f"{src}: decompresses to more than {limit:,} bytes (from {src.stat().st_size:,}"
                    f"), the limit against decompression bombs; raise it with max_decompressed= "
                    f"(bytes) or ${ENV_LIMIT} (0: no limit)"
                )
                raise TraceFormatError(msg)
            fout.write(block)


def _check_member(member: tarfile.TarInfo, archive: Path) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        msg = f"{archive}: member {member.name!r} would escape the extraction directory"
        raise TraceFormatError(msg)


def _extract_member(archive: Path, member: str | None, out: Path, limit: int | None) -> None:
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            _check_member(m, archive)
        named = [m for m in members if member is None or PurePosixPath(m.name).name == member]
        for m in named:
            if m.issym() or m.islnk():
                kind = "symbolic" if m.issym() else "hard"
                msg = (
                    f"{archive}: member {m.name!r} is a {kind} link (to {m.linkname!r}), not a "
                    "regular file; links in archives are not followed"
                )
                raise TraceFormatError(msg)
        chosen = [m for m in named if m.isfile()]
        if len(chosen) != 1:
            names = [m.name for m in members if m.isfile()]
            want = f"member {member!r}" if member else "exactly one file"
            msg = f"{archive}: expected {want} in the archive, found {names}"
            raise TraceFormatError(msg)
        fin = tar.extractfile(chosen[0])
        assert fin is not None  # a regular file always has a stream
        _copy(fin, out, limit, archive)
