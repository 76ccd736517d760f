"""Windows of one log that share jobs are measured, and a report of them says so."""

from __future__ import annotations

import pytest

from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.options import TraceOptions
from schedlab.overlap import window_overlap
from schedlab.registry import generators, make_policy
from schedlab.reports.experiment import shared_jobs
from schedlab.reports.render import write_report
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate
from schedlab.traces import bundled

DAY = 86_400


def kth_load(**options):
    """The KTH-SP2 log's last 13 days (about 1,000 jobs) loaded with ``options``."""
    options = TraceOptions(time_step=1, start=320 * DAY, **options)
    return load_trace("swf", bundled("kth-sp2"), options=options, use_cache=False)[0]


def kth_windows(windows: int, size: int):
    """Windows of the KTH-SP2 log's last 13 days: they overlap."""
    return kth_load(jobset_size=size, windows=windows, seed=0).jobs


def test_overlapping_windows_are_counted_job_by_job() -> None:
    jobs = kth_windows(8, 300)
    o = window_overlap(jobs)
    assert o is not None
    table = jobs.jobs.select("jobset", "source_id")
    distinct = table.get_column("source_id").n_unique()
    assert o.jobsets == 8
    assert o.log_jobs == distinct
    assert o.mean_jobsets == pytest.approx(table.unique().height / distinct)
    counts = table.unique().group_by("source_id").len().get_column("len")
    assert o.shared == pytest.approx(float((counts > 1).mean()))
    assert o.distinct_jobsets == pytest.approx(8 / o.mean_jobsets)


def test_disjoint_jobsets_and_generated_ones_report_nothing() -> None:
    jobs = kth_load(jobset_size=300).jobs
    assert jobs.jobs.get_column("jobset").n_unique() > 1
    assert window_overlap(jobs) is None  # the log cut into consecutive jobsets
    synthetic = generators.make("deeprm").generate_sweep([0.8], n_jobsets=3, seed=0)
    assert window_overlap(synthetic) is None


def test_a_report_of_overlapping_windows_warns_that_its_tests_are_optimistic(tmp_path) -> None:
    jobs = kth_windows(6, 120)
    results = simulate(jobs, [make_policy("fcfs"), make_policy("sjf")], ClusterConfig(slots=None))
    paths = write_report(results, tmp_path, jobs=jobs, n_resamples=200, dpi=60)
    text = paths["md"].read_text()
    assert "windows of one log that share jobs" in text
    assert "p-values too small" in text


def test_an_experiment_index_names_the_workloads_whose_windows_share_jobs() -> None:
    overlapping = kth_windows(6, 300)
    synthetic = generators.make("deeprm").generate_sweep([0.8], n_jobsets=3, seed=0)
    text = shared_jobs({"kth": overlapping, "synthetic": synthetic})
    assert text is not None
    mean = window_overlap(overlapping).mean_jobsets
    assert f"kth ({mean:.1f})" in text
    assert "synthetic" not in text
    assert shared_jobs({"synthetic": synthetic}) is None


def test_loading_overlapping_windows_says_that_they_share_jobs() -> None:
    said = kth_load(jobset_size=300, windows=6, seed=0).summary()
    assert "the windows share jobs: a job is in 2.5 of them on average" in said
    assert "share jobs" not in kth_load(jobset_size=300).summary()
