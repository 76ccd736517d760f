"""Checks shared by the trace-loader and generator tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.transform import TraceOptions


def sample_lines(result: Any, reason: str) -> list[int]:
    """The file lines of the report's samples dropped or fixed for ``reason``."""
    samples = result.report.samples
    return samples.filter(pl.col("reason") == reason).get_column("line").to_list()


def sample_messages(result: Any) -> dict[str, str]:
    """The report's sample message for each reason."""
    samples = result.report.samples
    return dict(zip(samples["reason"], samples["message"], strict=True))


def assert_report(
    report: Any, *, read: int, kept: int, dropped: dict[str, int], fixed: dict[str, int]
) -> None:
    """The report's counts, and every line read kept or counted as a drop."""
    assert report.rows_read == read
    assert report.rows_kept == kept
    assert report.dropped == dropped
    assert report.fixed == fixed
    assert report.rows_read == report.rows_kept + sum(report.dropped.values())


def assert_one_counted_drop(result: Any, reason: str, line: int) -> None:
    """Three lines read, two kept, and one dropped for ``reason`` at file line ``line``."""
    assert result.report.rows_read == 3
    assert result.report.rows_kept == 2
    assert result.report.dropped == {reason: 1}
    assert sample_lines(result, reason) == [line]


def assert_seed_reproducible(gen: Any, load: float, *, n_jobsets: int) -> None:
    """Seed 42 twice gives the same jobsets and meta; seed 43 other jobs."""
    a = gen.generate(load, n_jobsets=n_jobsets, seed=42)
    b = gen.generate(load, n_jobsets=n_jobsets, seed=42)
    c = gen.generate(load, n_jobsets=n_jobsets, seed=43)
    assert a.jobs.equals(b.jobs)
    assert a.meta == b.meta
    assert not a.jobs.equals(c.jobs)


def assert_strict_names_line(read: Callable[..., Any], path: Path, line: int, reason: str) -> None:
    """Under ``strict``, ``read(path)`` stops at line ``line``, naming the file and ``reason``."""
    with pytest.raises(TraceFormatError, match=rf"line {line} of {path}: .*\({reason}\)"):
        read(path, options=TraceOptions(strict=True))


def assert_file_refused(
    read: Callable[..., Any], folder: Path, name: str, data: bytes, match: str
) -> None:
    """``data`` written to ``folder/name``: ``read`` refuses it in one error matching ``match``."""
    path = folder / name
    path.write_bytes(data)
    with pytest.raises(TraceFormatError, match=match):
        read(path)
