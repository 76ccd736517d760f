"""Schedlab's cache of traces: its directory and the memoised SHA-256 of source files.

Converted traces (:mod:`schedlab.loaders.traces.load`) and decompressed files
(:mod:`schedlab.loaders.traces.textio`) are keyed by the SHA-256 of their source's content. The
hash of a large trace is computed once and memoised by (resolved path, size, mtime).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from schedlab.io import sha256, write_text_atomic


def cache_dir() -> Path:
    """Schedlab's cache: ``$SCHEDLAB_CACHE`` or ``~/.cache/schedlab``."""
    root = os.environ.get("SCHEDLAB_CACHE") or Path.home() / ".cache" / "schedlab"
    return Path(root)


def source_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of ``path``, memoised in the cache by (resolved path, size, mtime_ns)."""
    p = Path(path).resolve()
    st = p.stat()
    memo = cache_dir() / "hashes" / hashlib.sha256(str(p).encode()).hexdigest()
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    if memo.is_file():
        saved_stamp, _, digest = memo.read_text().partition(" ")
        if saved_stamp == stamp:
            return digest
    digest = sha256(p)
    write_text_atomic(memo, f"{stamp} {digest}")
    return digest
