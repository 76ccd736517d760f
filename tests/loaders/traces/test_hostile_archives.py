"""Loaders survive compressed bombs (issue 9, split from ``test_hostile.py``): decompression is
capped and leaves nothing behind; the cache."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.cache import cache_dir
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.swf import read_swf
from schedlab.loaders.traces.transform import TraceOptions
from tests.loaders.traces.test_hostile import (
    READERS,
    formats,
    text,
    write,
)

# -- decompression limits and the cache -----------------------------------------------------------


def _extracted() -> list[Path]:
    folder = cache_dir() / "extracted"
    return sorted(folder.iterdir()) if folder.is_dir() else []


@formats
def test_decompression_is_capped_and_leaves_nothing(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = write(tmp_path, gzip.compress(text(fmt).encode() + b"\n" * 3_000_000), "bomb.gz")
    options = TraceOptions(max_decompressed=1_000_000)
    with pytest.raises(TraceFormatError, match=r"bomb\.gz: decompresses to more than 1,000,000"):
        READERS[fmt](bomb, options=options)
    assert _extracted() == []
    monkeypatch.setenv("SCHEDLAB_MAX_DECOMPRESSED", "2000000")
    with pytest.raises(TraceFormatError, match="more than 2,000,000 bytes"):
        READERS[fmt](bomb)
    monkeypatch.setenv("SCHEDLAB_MAX_DECOMPRESSED", "0")  # no limit
    assert READERS[fmt](bomb).report.rows_kept == 3


def test_default_cap_is_a_ratio_with_a_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    from schedlab.loaders.traces.archive import FLOOR, RATIO, limit_bytes

    monkeypatch.delenv("SCHEDLAB_MAX_DECOMPRESSED", raising=False)
    assert limit_bytes(None, 10) == FLOOR
    assert limit_bytes(None, 10 * FLOOR) == RATIO * 10 * FLOOR
    assert limit_bytes(0, 10) is None
    with pytest.raises(ValueError, match="max_decompressed must be >= 0"):
        limit_bytes(-1, 10)


def test_partial_files_of_killed_processes_are_swept(tmp_path: Path) -> None:
    folder = cache_dir() / "extracted"
    folder.mkdir(parents=True)
    stale, fresh = folder / ".a.txt.x1.tmp", folder / ".b.txt.x2.tmp"
    stale.write_bytes(b"x" * 100)
    fresh.write_bytes(b"x")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    read_swf(write(tmp_path, gzip.compress(text("swf").encode()), "t.swf.gz"))
    assert not stale.exists()
    assert fresh.exists()


@formats
def test_cache_is_keyed_by_content_not_name_size_or_date(fmt: str, tmp_path: Path) -> None:
    first, second = (
        gzip.compress(text(fmt).replace("110", x).encode(), 0, mtime=0) for x in ("110", "115")
    )  # fmt: skip (level 0: equal sizes)
    assert len(first) == len(second)
    assert first != second
    path = tmp_path / "trace.gz"
    path.write_bytes(first)
    stamp = path.stat().st_mtime_ns
    a, _ = load_trace(fmt, path)
    path.write_bytes(second)
    os.utime(path, ns=(stamp, stamp))  # same name, size and mtime: other content
    b, hit = load_trace(fmt, path)
    assert not hit
    assert not b.jobs.jobs.equals(a.jobs.jobs)
    c, _ = load_trace(fmt, path, use_cache=False)  # --no-cache: the extracted copy is fresh too
    assert c.jobs.jobs.equals(b.jobs.jobs)


def test_load_trace_rejects_unknown_options(tmp_path: Path) -> None:
    path = write(tmp_path, text("swf"))
    with pytest.raises(ValueError, match=r"loader 'swf' has no option 'granularity'"):
        load_trace("swf", path, granularity="job")
    with pytest.raises(ValueError, match=r"no option 'max_proc'; did you mean 'max_procs'\?"):
        load_trace("swf", path, max_proc=4)
