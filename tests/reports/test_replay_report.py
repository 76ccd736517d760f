"""The report of a trace replayed whole (one jobset per policy): statistics over time blocks,
per-job distributions, users, the cluster over the log's calendar, and no degenerate statistic."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import polars as pl
import pytest

from schedlab.jobset import JobSet
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.reports.render import write_report
from schedlab.results import Results
from schedlab.simulator.run import simulate

KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
POLICIES = ["fcfs+easy", "sjf+easy", "fcfs"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    js: JobSet = read_swf(KTH, options=TraceOptions(end=21 * 86_400.0)).jobs
    res: Results = simulate(js, [make_policy(p) for p in POLICIES], {"slots": None})
    out = tmp_path_factory.mktemp("replay")
    return write_report(res, out, jobs=js, primary="wait", n_resamples=300, dpi=50)


def test_a_whole_replay_is_compared_over_blocks_of_time(report: dict[str, Path]) -> None:
    md = report["md"].read_text(encoding="utf-8")
    assert "3 policies, each replaying the whole log once (" in md
    assert "## Which policy is better over the whole log?" in md
    assert "are cut by arrival into" in md
    assert "blocks of one day" in md
    assert "Holm-adjusted Wilcoxon over days" in md
    for gone in ("Omnibus test", "All pairs", "Critical-difference", "W/T/L | P(better)"):
        assert gone not in md, gone  # tests across one jobset say nothing
    summary = pl.read_csv(report["replay_summary"])
    assert set(summary.get_column("policy")) == set(POLICIES)
    # no interval is a point: "x [x, x]" never appears
    points = re.findall(r"(\d[\d,.]*) \[(\d[\d,.]*), (\d[\d,.]*)\]", md)
    assert points
    assert not [p for p in points if p[0] == p[1] == p[2]]
    # its metadata names the design used, and no table of the jobset design is written
    assert 'interval: "block bootstrap over time' in md
    assert "Friedman" not in md
    assert "percentile bootstrap over jobsets" not in md
    folder = report["md"].parent
    for gone in ("comparison.csv", "ratios.csv", "omnibus.csv", "pairwise.csv"):
        assert not (folder / gone).exists(), gone
        assert gone not in md, gone


def test_users_times_and_views_of_a_whole_replay(report: dict[str, Path]) -> None:
    md = report["md"].read_text(encoding="utf-8")
    assert "## Users over the whole log" in md
    assert "Jain's index" in md
    assert "## The cluster over the whole log" in md
    assert "average job waiting time (h)" in md  # times in a readable unit, named
    assert "(steps)" not in md  # a trace's times are seconds, never steps
    for name in (
        "timeline",
        "queue_heatmap",
        "allocation",
        "schedule_diff",
        "replay_cdf",
        "users",
        "per_user",
        "replay_blocks",
        "timeline_bins",
    ):
        assert name in report, name
    users = pl.read_csv(report["per_user"])
    assert set(users.get_column("policy")) == set(POLICIES)
    bins = pl.read_csv(report["timeline_bins"])
    assert bins.get_column("time").n_unique() > 10  # the log in bins of hours
