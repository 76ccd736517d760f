"""Loaders survive huge numbers (issue 9, split from ``test_hostile.py``): times past the range
the simulators count in are dropped and named; spans past it are one line. Requested times:
``test_hostile_times.py`` (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.errors import JobSetError, TraceFormatError
from schedlab.loaders.traces.swf import read_swf
from schedlab.loaders.traces.transform import TraceOptions
from tests.loaders.traces.test_hostile import (
    HEADER,
    READERS,
    formats,
    line_of,
    row,
    text,
    write,
)

# -- huge numbers ---------------------------------------------------------------------------------


@formats
@pytest.mark.parametrize("value", ["1e300", "9223372036854775808", "4.7e18"])
def test_times_past_int64_are_dropped_and_named(fmt: str, value: str, tmp_path: Path) -> None:
    bad = row(fmt, 9, start="100", length=value)
    path = write(tmp_path, text(fmt, bad))
    result = READERS[fmt](path)
    assert result.report.dropped == {"out_of_range": 1}
    assert result.report.rows_kept == 3
    assert result.report.sample_lines("out_of_range") == [line_of(fmt, 4)]
    with pytest.raises(TraceFormatError, match=rf"line {line_of(fmt, 4)} of .*out_of_range"):
        READERS[fmt](path, options=TraceOptions(strict=True))


@formats
def test_arrival_past_int64_is_dropped(fmt: str, tmp_path: Path) -> None:
    path = write(tmp_path, text(fmt, row(fmt, 9, start="1e300", length="1e300")))
    result = READERS[fmt](path)
    assert result.report.dropped == {"out_of_range": 1}
    assert result.jobs.jobs["arrival"].max() == 20  # the outlier did not shift the others


def test_a_tiny_time_step_puts_times_out_of_range(tmp_path: Path) -> None:
    path = write(tmp_path, text("swf", row("swf", 9, start="9000000000")))
    result = read_swf(path, options=TraceOptions(time_step=1e-9))
    assert result.report.dropped == {"out_of_range": 1}


# -- spans that overflow --------------------------------------------------------------------------


@formats
def test_durations_summing_past_the_span_limit_are_rejected(fmt: str, tmp_path: Path) -> None:
    rows = [row(fmt, i, start="100", length="100000000000000000") for i in range(1, 13)]
    path = write(tmp_path, HEADER[fmt] + "\n".join(rows) + "\n")
    with pytest.raises(JobSetError, match=r"trace\.txt: jobset 0: .*exceeds .*2\^59"):
        READERS[fmt](path)
    split = READERS[fmt](path, options=TraceOptions(jobset_size=2))  # each jobset fits
    assert len(split.jobs.jobset_ids) == 6
