"""Schedlab's cache of traces: its directory and the memoised SHA-256 of source files.

Converted traces (:mod:`schedlab.loaders.traces.load`) and decompressed files
(:mod:`schedlab.loaders.traces.archive`) are keyed by the SHA-256 of their source's content,
never by its name, size or date. The hash of a large trace is computed once and memoised under
the file's identity: device, inode, size, mtime *and* ctime, which the system sets on every
change of the file (a copy that keeps the name, size and mtime of another still differs).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from schedlab.io import sha256, write_text_atomic

STALE_SECONDS = 600.0
"""A partial file (``.<name>.<random>.tmp``) untouched this long belongs to a killed process."""


def cache_dir() -> Path:
    """Schedlab's cache: ``$SCHEDLAB_CACHE`` or ``~/.cache/schedlab``."""
    root = os.environ.get("SCHEDLAB_CACHE") or Path.home() / ".cache" / "schedlab"
    return Path(root)


def source_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the content of ``path``, memoised in the cache by the file's identity."""
    p = Path(path).resolve()
    st = p.stat()
    memo = cache_dir() / "hashes" / hashlib.sha256(str(p).encode()).hexdigest()
    stamp = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    if memo.is_file():
        saved_stamp, _, digest = memo.read_text().partition(" ")
        if saved_stamp == stamp and len(digest) == 64:
            return digest
    digest = sha256(p)
    write_text_atomic(memo, f"{stamp} {digest}")
    return digest


def sweep_partial(directory: Path) -> None:
    """Delete partial files that killed processes left in ``directory`` (atomic writes of live
    processes are younger than :data:`STALE_SECONDS`)."""
    if not directory.is_dir():
        return
    now = time.time()
    for tmp in directory.glob(".*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_SECONDS:
                tmp.unlink()
        except FileNotFoundError:  # another process swept it first
            continue
