"""Absolute time axes of JobSets, censoring masks, and the check's trace windows."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.errors import JobSetError
from schedlab.evaluation.fitting.check import rescale, trace_windows
from schedlab.evaluation.fitting.timeline import resolve_censored, timeline
from schedlab.jobset import JobSet, JobSetMeta, offered_load


def _jobset(ids: list[int], arrivals: list[int], **meta: object) -> JobSet:
    n = len(ids)
    jobs = pl.DataFrame(
        {
            "jobset": ids,
            "job_id": list(range(n)),
            "arrival": arrivals,
            "duration": [2] * n,
            "cpu": [1.0] * n,
        }
    )
    return JobSet.create(jobs, JobSetMeta(resources=("cpu",), capacity=(4.0,), **meta))  # type: ignore[arg-type]


def test_trace_time_windows_share_one_axis_with_empty_windows() -> None:
    js = _jobset(
        [0, 0, 2],
        [1, 5, 3],
        arrival_window=10,
        empty_jobsets=(1, 3),
        time_step_seconds=60.0,
        provenance={"options": {"jobset_window": 600}, "trace_start_s": 120.0},
    )
    tl, times = timeline(js)
    np.testing.assert_array_equal(times, [1, 5, 23])
    np.testing.assert_array_equal(tl.segments, [[0, 40]])  # 4 windows, two of them empty
    assert tl.origin_seconds == 120.0
    assert tl.has_clock()


def test_replicates_are_laid_end_to_end_without_a_clock() -> None:
    js = _jobset(
        [0, 0, 1, 1],
        [0, 7, 2, 3],
        arrival_window=10,
        time_step_seconds=1.0,
        provenance={"generator": "deeprm"},
    )
    tl, times = timeline(js)
    np.testing.assert_array_equal(times, [0, 7, 12, 13])
    np.testing.assert_array_equal(tl.segments, [[0, 10], [10, 20]])
    assert not tl.has_clock()
    assert tl.split_step(0.5) == 10


def test_one_jobset_is_its_own_axis() -> None:
    tl, times = timeline(_jobset([0, 0, 0], [0, 4, 9]))
    np.testing.assert_array_equal(times, [0, 4, 9])
    np.testing.assert_array_equal(tl.segments, [[0, 10]])
    assert tl.origin_seconds is None  # no step length: no time of day


def test_swf_clock_is_local_time() -> None:
    prov = {
        "trace_start_s": 100.0,
        "options": {"start": 50.0},
        "swf": {"unix_start_time": 1000, "time_zone": 3600},
    }
    tl, _ = timeline(_jobset([0], [0], time_step_seconds=1.0, provenance=prov))
    assert tl.origin_seconds == 1000 + 3600 + 100 + 50


def test_censored_mask_from_a_column_or_an_array() -> None:
    js = _jobset([0, 0, 0], [0, 1, 2])
    assert resolve_censored(js, None) is None
    mask = resolve_censored(js, np.array([True, False, False]))
    assert mask is not None
    assert mask.tolist() == [True, False, False]
    with_col = JobSet(js.jobs.with_columns(censored=pl.Series([False, True, True])), js.meta)
    assert resolve_censored(with_col, None).tolist() == [False, True, True]  # type: ignore[union-attr]
    with pytest.raises(JobSetError, match="no column 'running'"):
        resolve_censored(js, "running")
    with pytest.raises(JobSetError, match="boolean array of 3 values"):
        resolve_censored(js, np.array([1, 0, 0]))


def test_trace_windows_and_rescaling_keep_the_jobs_and_scale_the_load() -> None:
    rng = np.random.default_rng(0)
    arrivals = np.sort(rng.integers(0, 1000, 300)).tolist()
    js = _jobset([0] * 300, arrivals, time_step_seconds=1.0)
    windows = trace_windows(js, 100, 5, np.random.default_rng(1))
    assert windows.meta.arrival_window == 100
    assert len(windows.jobset_ids) == 5
    assert windows.jobs["arrival"].max() < 100
    load = offered_load(windows)["load"].item()
    faster = rescale(windows, 0.5)
    assert faster.meta.arrival_window == 50
    assert len(faster) == len(windows)
    assert offered_load(faster)["load"].item() == pytest.approx(2 * load)
