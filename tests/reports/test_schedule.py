"""Views of a schedule: Gantt charts (rows and lanes), the schedule diff, timelines."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from schedlab.evaluation.schedules import schedules
from schedlab.evaluation.timeline import timeline
from schedlab.jobset import JobSet
from schedlab.reports.palette import policy_palette
from schedlab.reports.schedule import job_colors, plot_gantt, plot_schedule_diff
from schedlab.reports.timeline_figures import plot_timeline, plot_timelines
from schedlab.results import Results

BUCKETS = {"short": (1, 3), "long": (10, 15)}


def one(results: Results, jobs: JobSet, policy: str) -> pl.DataFrame:
    s = schedules(results, jobs)
    k = s.jobs.filter(pl.col("load") == 1.5).get_column("jobset")[0]
    return s.select(jobsets=[k], policies=[policy]).jobs


def bars(ax: matplotlib.axes.Axes) -> list[tuple[float, float, float]]:
    """(left, row, width) of every bar: the rectangles of the Axes' PolyCollections."""
    out = []
    for c in ax.collections:
        if isinstance(c, PolyCollection):
            for path in c.get_paths():
                (x0, y0), (x1, _) = path.vertices[0], path.vertices[1]
                out.append((float(x0), float(y0) + 0.4, float(x1 - x0)))
    return out


def test_gantt_rows_draw_one_bar_per_job_and_the_waits(results: Results, jobs: JobSet) -> None:
    df = one(results, jobs, "fcfs")
    ax = plot_gantt(df, buckets=BUCKETS, ax=Figure().subplots())
    patches = bars(ax)
    assert len(patches) == df.height
    order = df.sort("arrival", "job_id")
    by_row = sorted(patches, key=lambda p: p[1])
    assert [p[1] for p in by_row] == pytest.approx(list(range(df.height)))
    assert [p[0] for p in by_row] == order.get_column("start").to_list()
    assert [p[2] for p in by_row] == order.get_column("duration").to_list()
    (waits,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(waits.get_segments()) == (df["wait"] > 0).sum()
    lo, hi = ax.get_ylim()
    assert lo > hi  # first arrival at the top
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1] == "waiting"
    assert set(labels[:-1]) <= {"short (1–3 steps)", "long (10–15 steps)", "other"}
    with pytest.raises(ValueError, match="draws one schedule; select one policy"):
        plot_gantt(pl.concat([df, df.with_columns(policy=pl.lit("x"))]), ax=Figure().subplots())


def test_gantt_lanes_stack_jobs_within_capacity(results: Results, jobs: JobSet) -> None:
    df = one(results, jobs, "sjf")
    ax = plot_gantt(
        df, layout="lanes", resource="cpu", capacity=10, buckets=BUCKETS, ax=Figure().subplots()
    )
    (polys,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    outlines = polys.get_paths()
    assert len(outlines) == df.height
    top = max(p.vertices[:, 1].max() for p in outlines)
    assert top <= 0.9 + 1e-9  # the lane is 0.9 tall: the stack never exceeds the capacity
    # at every start time, the running jobs tile the lane from 0 up to the share of cpu in use
    order = df.sort("arrival", "job_id")
    heights = 0.9 * order["cpu"].to_numpy() / 10
    for t in order["start"].unique().to_list():
        spans = []
        for path, h in zip(outlines, heights, strict=True):
            n = len(path.vertices) // 4  # top edge: two points per segment, then the bottom
            top = path.vertices[: 2 * n]
            for i in range(n):
                if top[2 * i, 0] <= t < top[2 * i + 1, 0]:
                    spans.append((top[2 * i, 1] - h, top[2 * i, 1]))
        spans.sort()
        assert spans[0][0] == pytest.approx(0.0)
        for (_, hi), (lo, _) in itertools.pairwise(spans):
            assert lo == pytest.approx(hi)  # no gap, no overlap
        running = order.filter((pl.col("start") <= t) & (pl.col("finish") > t))
        assert spans[-1][1] == pytest.approx(0.9 * running["cpu"].sum() / 10)
    assert "cpu in use" in ax.get_ylabel()


THREE_JOBS = {
    "job_id": [0, 1, 2],
    "arrival": [0, 0, 1],
    "start": [0, 0, 2],
    "finish": [2, 3, 4],
    "duration": [2, 3, 2],
    "slowdown": [1.0, 1.0, 1.5],
}
"""Three jobs on two machines: 0 and 2 share one, 2 waits a step."""


def test_gantt_draws_one_lane_per_machine() -> None:
    df = pl.DataFrame(
        {
            **THREE_JOBS,
            "cpu": [4.0, 8.0, 6.0],
            "machine": ["m0", "m1", "m0"],
        }
    )
    ax = plot_gantt(df, resource="cpu", capacity=8, ax=Figure().subplots())
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m0", "m1"]
    (polys,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    bottoms = [p.vertices[:, 1].min() for p in polys.get_paths()]
    assert bottoms == pytest.approx([0.0, 1.0, 0.0])


def test_job_colors_by_length_and_by_category() -> None:
    df = pl.DataFrame({"duration": [1, 12, 5], "category": ["a", "b", None]})
    groups, colors = job_colors(df, buckets=BUCKETS)
    assert groups == ["short (1–3 steps)", "long (10–15 steps)", "other"]
    assert list(colors) == ["short (1–3 steps)", "long (10–15 steps)", "other"]
    groups, colors = job_colors(df, color_by="category")
    assert groups == ["a", "b", "none"]
    with pytest.raises(ValueError, match="no 'category' column"):
        job_colors(df.drop("category"), color_by="category")


def test_schedule_diff_compares_job_by_job(results: Results, jobs: JobSet) -> None:
    a, b = one(results, jobs, "sjf"), one(results, jobs, "fcfs")
    axes = Figure(layout="constrained").subplots(1, 3, sharey=True)
    plot_schedule_diff(a, b, palette=policy_palette(["sjf", "fcfs"]), buckets=BUCKETS, axes=axes)
    assert axes[0].get_title().startswith("sjf (average slowdown")
    assert axes[1].get_title().startswith("fcfs (average slowdown")
    delta = bars(axes[2])
    assert len(delta) == a.height
    expected = b.sort("arrival", "job_id")["finish"] - a.sort("arrival", "job_id")["finish"]
    assert [p[2] for p in sorted(delta, key=lambda p: p[1])] == pytest.approx(
        expected.abs().to_list()
    )
    sooner, later = (expected < 0).sum(), (expected > 0).sum()
    assert axes[2].get_title() == f"{sooner} sooner, {later} later"
    assert axes[0].get_xlim() == axes[1].get_xlim()
    with pytest.raises(ValueError, match="different jobs"):
        plot_schedule_diff(a, b.head(3), palette={}, axes=axes)


def test_timelines_draw_each_quantity_per_policy(results: Results, jobs: JobSet) -> None:
    s = schedules(results, jobs)
    k = s.jobs.get_column("jobset")[0]
    tl = timeline(s.select(jobsets=[k]))
    pal = policy_palette(["sjf", "fcfs", "packer"])
    ax = plot_timeline(tl, quantity="util_cpu", palette=pal, ax=Figure().subplots())
    assert [line.get_label() for line in ax.get_lines()] == ["sjf", "fcfs", "packer"]
    assert ax.get_ylim() == (-0.02, 1.02)
    assert ax.yaxis.get_major_formatter()(0.5, 0) == "50%"
    first = tl.filter(pl.col("policy") == "sjf").sort("time")
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), first["util_cpu"].to_numpy())
    axes = Figure().subplots(5, 1, sharex=True)
    plot_timelines(tl, resources=("cpu", "mem"), palette=pal, axes=axes)
    assert [a.get_ylabel() for a in axes] == [
        "cpu in use",
        "mem in use",
        "Waiting jobs",
        "Queued work\n(cluster steps)",
        "Fragmented",
    ]
    (legend,) = axes[0].figure.legends  # one legend for the panels, beside them
    assert [t.get_text() for t in legend.get_texts()] == ["sjf", "fcfs", "packer"]
    dashes = {line.get_linestyle() for line in axes[2].get_lines()}
    assert len(dashes) == 3  # one dash pattern per policy, so equal lines stay visible


def test_schedule_diff_on_machines_keeps_one_row_per_job() -> None:
    """On several machines the diff still compares job by job: rows, not machine lanes."""
    a = pl.DataFrame(
        {
            "policy": ["p"] * 3,
            **THREE_JOBS,
            "machine": [0, 1, 0],
        }
    )
    b = a.with_columns(policy=pl.lit("q"), start=pl.Series([0, 1, 1]), finish=pl.Series([2, 4, 3]))
    axes = Figure(layout="constrained").subplots(1, 3, sharey=True)
    plot_schedule_diff(a, b, palette=policy_palette(["p", "q"]), buckets=BUCKETS, axes=axes)
    assert axes[0].get_ylabel() == "Job (in order of arrival)"
    assert len(bars(axes[0])) == 3
    assert axes[0].get_ylim() == pytest.approx((2.6, -0.6))
