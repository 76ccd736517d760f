"""Opening trace files as users have them: plain, gzip or the official ``.tar.gz``.

Compression is detected from the file's magic bytes, not trusted from its name; a name that
promises gzip on a file that is not gzip (or the reverse) is reported, never guessed past.
Archives are never extracted to the paths their members name: the chosen member is streamed into
schedlab's cache under a name of our own, so no member can escape the cache (``../`` names,
absolute paths and links are rejected and reported).
"""

from __future__ import annotations

import gzip
import os
import shutil
import tarfile
import zlib
from pathlib import Path, PurePosixPath

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.io import atomic_path
from schedlab.loaders.traces.cache import cache_dir

GZIP_MAGIC = b"\x1f\x8b"


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def _check_member(member: tarfile.TarInfo, archive: Path) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        msg = f"{archive}: member {member.name!r} would escape the extraction directory"
        raise TraceFormatError(msg)


def text_path(path: str | os.PathLike[str], *, member: str | None = None) -> Path:
    """A plain-text path for ``path``: itself, or its decompressed copy in the cache.

    Parameters
    ----------
    member
        For a tar archive: the member's file name to use (e.g. ``"batch_task.csv"``); by default
        the archive must hold exactly one regular file.

    Raises
    ------
    TraceFormatError
        Missing or empty file, corrupt or mislabelled compression, unsafe archive members.
    """
    src = Path(path)
    if not src.is_file():
        msg = f"{src}: no such file"
        raise TraceFormatError(msg)
    if src.stat().st_size == 0:
        msg = f"{src}: the file is empty"
        raise TraceFormatError(msg)
    gz = _is_gzip(src)
    if not gz:
        if src.suffix in (".gz", ".tgz"):
            msg = f"{src}: the name says gzip but the content is not gzip-compressed"
            raise TraceFormatError(msg)
        return src
    stat = src.stat()
    key = f"{src.name}-{stat.st_size}-{stat.st_mtime_ns}-{member or ''}"
    out = cache_dir() / "extracted" / f"{key}.txt"
    if out.is_file():
        return out
    try:
        if ".tar" in src.suffixes or src.suffix == ".tgz" or tarfile.is_tarfile(src):
            _extract_member(src, member, out)
        else:
            with gzip.open(src, "rb") as fin, atomic_path(out) as tmp, tmp.open("wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 22)
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        msg = f"{src}: corrupt or truncated compressed file ({exc})"
        raise TraceFormatError(msg) from exc
    return out


def _extract_member(archive: Path, member: str | None, out: Path) -> None:
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            _check_member(m, archive)
        named = [m for m in members if member is None or PurePosixPath(m.name).name == member]
        if any(m.issym() or m.islnk() for m in named):
            msg = f"{archive}: member {member!r} is a link, not a regular file"
            raise TraceFormatError(msg)
        chosen = [m for m in named if m.isfile()]
        if len(chosen) != 1:
            names = [m.name for m in members if m.isfile()]
            want = f"member {member!r}" if member else "exactly one file"
            msg = f"{archive}: expected {want} in the archive, found {names}"
            raise TraceFormatError(msg)
        fin = tar.extractfile(chosen[0])
        assert fin is not None  # a regular file always has a stream
        with atomic_path(out) as tmp, tmp.open("wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 22)


def read_lines(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Every line of a text file as ``line`` (int64, 1-based) and ``raw`` (str; blank -> "").

    Blank lines are kept so line numbers stay exact.
    """
    p = Path(path)
    try:
        df = pl.read_csv(
            p, has_header=False, separator="\x1f", quote_char=None, schema={"raw": pl.Utf8},
            raise_if_empty=False,
        )  # fmt: skip
    except pl.exceptions.ComputeError as exc:
        msg = f"{p}: not a readable UTF-8 text file ({str(exc).splitlines()[0]})"
        raise TraceFormatError(msg) from exc
    return df.with_row_index("line", offset=1).with_columns(
        pl.col("line").cast(pl.Int64), pl.col("raw").fill_null("")
    )
