"""Atomic file output and self-describing Parquet files."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import OutputError, TraceFormatError
from schedlab.validate import parse_document

METADATA_KEY = "schedlab"


_INPUTS: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar(
    "schedlab_inputs", default=()
)
"""Files the running command reads: no output may replace one (see :func:`reading`)."""
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)
_WRITE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EFBIG: "file too large",
    errno.EIO: "input/output error",
}


@contextlib.contextmanager
def reading(paths: Iterable[str | os.PathLike[str]]) -> Iterator[None]:
    """Within the block, :func:`check_output` (and so every atomic write) refuses to replace any
    of ``paths``, compared after resolving links (the CLI declares each command's inputs)."""
    token = _INPUTS.set((*_INPUTS.get(), *(Path(p) for p in paths)))
    try:
        yield
    finally:
        _INPUTS.reset(token)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: str | os.PathLike[str]) -> Path:
    """``path`` if an output may be written there, else :class:`OutputError`.

    Refused: one of the running command's inputs (:func:`reading`; the same file after
    resolving links, so a link to an input counts), and an existing path that is not a
    regular file (a device such as ``/dev/full``, a FIFO, ``/dev/stdout``, a socket): outputs
    are written by atomically replacing a file, which would replace the node itself.
    """
    target = Path(path)
    for source in _INPUTS.get():
        if _same_file(target, source):
            also = "" if str(source) == str(target) else f" ({source})"
            msg = f"{target}: is an input of this command{also}; name another output"
            raise OutputError(msg)
    try:
        mode = target.stat().st_mode
    except OSError:
        return target  # nothing there yet (or unreadable: the write reports it)
    kind = next((name for test, name in _KINDS if test(mode)), None)
    if kind is not None:
        msg = (
            f"{target}: is {kind}, not a regular file; schedlab writes outputs by atomically "
            "replacing a file and will not replace it: name a file"
        )
        raise OutputError(msg)
    return target


def _write_failure(target: Path, exc: BaseException) -> OutputError | None:
    """The one-line :class:`OutputError` for a failed write of ``target`` (no space, no
    permission, a read-only disk...), or None if ``exc`` is not such a failure. Also reads the
    ``(os error N)`` that polars' Rust writer puts in its messages."""
    code = getattr(exc, "errno", None)
    if code is None and (m := re.search(r"\(os error (\d+)\)", str(exc))):
        code = int(m.group(1))
    if code not in _WRITE_ERRNOS:
        return None
    msg = f"{target}: cannot write: {_WRITE_ERRNOS[code]}; nothing was changed there"
    error = OutputError(msg)
    error.errno = code
    return error


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename.

    A crash or an exception leaves any previous ``path`` untouched and no partial file behind.
    ``path`` is checked first (:func:`check_output`), and a full disk or a missing permission
    ends in one :class:`OutputError` naming ``path``.
    """
    target = check_output(path)
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        failure = None if isinstance(exc, OutputError) else _write_failure(target, exc)
        if failure is not None:
            raise failure from exc
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


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a full disk is one :class:`OutputError` naming
    ``path`` (serialise first, e.g. ``torch.save`` into a buffer, whose own writer would report
    a short write without its cause)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


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
    meta = parse_document(kv[METADATA_KEY], f"{p} (metadata)", error=TraceFormatError, fmt="json")
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        found = meta.get("kind") if isinstance(meta, dict) else type(meta).__name__
        msg = f"{p}: expected a schedlab {kind} file, found kind {found!r}"
        raise TraceFormatError(msg)
    return df, meta


def check_writable(path: str | os.PathLike[str], *, directory: bool = False) -> Path:
    """Fail before any work if ``path`` (a file, or a directory with ``directory``) cannot be
    written: create its folder and a probe file there, then remove the probe and the folders
    it created (what the command writes creates them again).

    Raises
    ------
    OutputError
        Naming the path and the reason (not a directory, permission denied, read-only, an
        input of the command, a device or FIFO: see :func:`check_output`).
    """
    target = Path(path) if directory else check_output(path)
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
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".schedlab-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        msg = f"{target}: cannot write there ({exc.strerror or exc})"
        raise OutputError(msg) from exc
    finally:  # a command that fails later leaves no empty folder behind
        for p in made:
            with contextlib.suppress(OSError):
                p.rmdir()
    return target
