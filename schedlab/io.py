"""Atomic file output and self-describing Parquet files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import OutputError, TraceFormatError

METADATA_KEY = "schedlab"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename.

    A crash or an exception leaves any previous ``path`` untouched and no partial file behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256(path: str | os.PathLike[str], *, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of the bytes of the file at ``path``, read in blocks of ``chunk`` bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_parquet(df: pl.DataFrame, path: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """Write ``df`` with ``meta`` (JSON) in the file's key-value metadata, atomically."""
    payload = json.dumps(meta, default=str)
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, metadata={METADATA_KEY: payload}, statistics=True)


def read_parquet(path: str | os.PathLike[str], kind: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read a schedlab Parquet file of the given ``kind`` (``"jobset"``, ``"results"``).

    Raises
    ------
    TraceFormatError
        If the file is missing, not Parquet, not written by schedlab, or of another kind.
    """
    p = Path(path)
    if not p.is_file():
        msg = f"{p}: no such file"
        raise TraceFormatError(msg)
    try:
        kv = pl.read_parquet_metadata(p)
        df = pl.read_parquet(p)
    except Exception as exc:  # polars raises several types for a non-Parquet file
        msg = f"{p}: not a readable Parquet file ({type(exc).__name__}: {exc})"
        raise TraceFormatError(msg) from exc
    if METADATA_KEY not in kv:
        msg = f"{p}: Parquet file has no schedlab metadata; was it written by schedlab?"
        raise TraceFormatError(msg)
    try:
        meta = json.loads(kv[METADATA_KEY])
    except json.JSONDecodeError as exc:
        msg = f"{p}: schedlab metadata is not valid JSON ({exc})"
        raise TraceFormatError(msg) from exc
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        found = meta.get("kind") if isinstance(meta, dict) else type(meta).__name__
        msg = f"{p}: expected a schedlab {kind} file, found kind {found!r}"
        raise TraceFormatError(msg)
    return df, meta


def check_writable(path: str | os.PathLike[str], *, directory: bool = False) -> Path:
    """Fail before any work if ``path`` (a file, or a directory with ``directory``) cannot be
    written: create its folder and a probe file there, then remove the probe.

    Raises
    ------
    OutputError
        Naming the path and the reason (not a directory, permission denied, read-only...).
    """
    target = Path(path)
    if not directory and target.is_dir():
        msg = f"{target}: is a directory; expected a file to write"
        raise OutputError(msg)
    if directory and target.exists() and not target.is_dir():
        msg = f"{target}: exists and is not a directory"
        raise OutputError(msg)
    folder = target if directory else target.parent
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        msg = f"{target}: cannot write there ({blocker} is a file, not a directory)"
        raise OutputError(msg)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".schedlab-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        msg = f"{target}: cannot write there ({exc.strerror or exc})"
        raise OutputError(msg) from exc
    return target
