"""The notebook API: ``schedlab.compare``, and Results / JobSet in Jupyter and pandas."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import schedlab
from schedlab.errors import ResultsError
from schedlab.jobset import JobSet
from schedlab.reports.notebook import ComparisonResult
from schedlab.results import Results


@pytest.fixture(scope="module")
def cmp(results: Results, jobs: JobSet) -> ComparisonResult:
    return schedlab.compare(results, reference="fcfs", jobs=jobs, n_resamples=200)


def new_axes() -> Axes:
    return Figure().subplots()


def test_compare_is_in_the_lazy_public_api(cmp: ComparisonResult) -> None:
    assert "compare" in schedlab.__all__
    assert isinstance(cmp, ComparisonResult)
    assert cmp.reference == "fcfs"
    assert cmp.policies == ["sjf", "fcfs", "packer"]
    assert cmp.focus_load == 1.5


def test_attributes_are_tidy_frames(cmp: ComparisonResult) -> None:
    assert {"policy", "load", "metric", "mean", "ratio", "mean_rank"} <= set(cmp.summary.columns)
    assert set(cmp.ratios.get_column("policy")) == {"sjf", "packer"}
    assert cmp.ratios.select("load").n_unique() == 2
    assert {"a", "b", "p_holm", "significant"} <= set(cmp.pairwise.columns)
    assert cmp.omnibus.height == 2  # one Friedman test per load
    assert set(cmp.per_length.get_column("bucket")) == {"short", "long"}
    assert cmp.per_length.get_column("metric").unique().to_list() == ["slowdown"]
    assert cmp.per_jobset.select(pl.struct("policy", "jobset").n_unique()).item() == (
        cmp.per_jobset.height
    )
    assert {"family", "q"} <= set(cmp.exploratory.columns)


def test_plot_methods_draw_on_the_given_axes(cmp: ComparisonResult) -> None:
    ax = cmp.plot_load_sweep(ax=new_axes())
    assert [line.get_label() for line in ax.get_lines()] == ["sjf", "fcfs", "packer"]
    assert ax.get_yscale() == "log"
    ax = cmp.plot_ratio_sweep(ax=new_axes())
    assert "fcfs (reference)" in ax.get_legend_handles_labels()[1]
    ax = cmp.plot_ratios(ax=new_axes())
    assert len(ax.texts) == 4  # 2 policies × 2 loads
    ax = cmp.plot_cd_diagram(load=0.5, ax=new_axes())
    assert any(t.get_text().startswith("CD = ") for t in ax.texts)
    ax = cmp.plot_pairwise(ax=new_axes())
    assert len(ax.texts) == 6  # 3 pairs, both triangles
    ax = cmp.plot_jobset_values(load=0.5, ax=new_axes())
    assert "50%" in ax.get_title()
    assert cmp.plot_length(ax=new_axes()).get_yscale() == "log"
    assert "150%" in cmp.plot_slowdown_cdf(ax=new_axes()).get_title()


def test_views_of_the_schedule(cmp: ComparisonResult) -> None:
    k = cmp.representative_jobset()
    ax = cmp.plot_gantt(policy="sjf", ax=new_axes())
    assert "Job (in order of arrival)" in ax.get_ylabel()
    ax = cmp.plot_gantt(jobset=k, layout="lanes", resource="mem", capacity=10, ax=new_axes())
    assert "mem in use" in ax.get_ylabel()
    fig = cmp.plot_schedule_diff(fig=Figure(layout="constrained"))
    assert len(fig.axes) == 3
    assert fig.axes[0].get_title().startswith("fcfs")  # the reference first
    one = cmp.timeline(jobset=k)
    assert set(one.get_column("jobset")) == {k}
    mean = cmp.timeline()
    assert set(mean.get_column("load")) == {1.5}
    ax = cmp.plot_timeline("fragmentation", ax=new_axes())
    assert len(ax.get_lines()) == 3
    with pytest.raises(ResultsError, match=r"no results of policy \['hrrn'\]"):
        cmp.plot_gantt(policy="hrrn", ax=new_axes())
    with pytest.raises(ValueError, match="two policies"):
        cmp.plot_schedule_diff(policies=["sjf"], fig=Figure())


def test_repr_html_shows_the_first_screen(cmp: ComparisonResult) -> None:
    text = cmp._repr_html_()
    assert text.startswith("<h3>Comparison of 3 policies, reference fcfs</h3>")
    assert text.count("<table>") == 2
    assert "best (mean rank)</th>" in text


def test_compare_reads_files_and_experiment_directories(
    results: Results, jobs: JobSet, tmp_path: Path
) -> None:
    results.write_parquet(tmp_path / "res.parquet")
    jobs.write_parquet(tmp_path / "jobs.parquet")
    c = schedlab.compare(tmp_path / "res.parquet", jobs=tmp_path / "jobs.parquet", n_resamples=50)
    assert c.reference == "sjf"
    assert c.jobs is not None
    assert c.computed.views is not None
    assert c.computed.views.timeline is not None
    paths = c.write_report(tmp_path / "out", dpi=60)
    assert paths["html"].is_file()
    assert "timeline" in paths


def test_results_and_jobsets_render_in_notebooks(results: Results, jobs: JobSet) -> None:
    html = results._repr_html_()
    assert "<strong>Results</strong>" in html
    assert "policies: sjf, fcfs, packer" in html
    assert "offered loads: 0.5, 1.5" in html
    assert "<table" in html
    df = results.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == results.table.columns
    assert len(df) == results.table.height
    assert df["slowdown"].dtype == "float64"
    assert df["jobset"].dtype == "int32"
    assert df["policy"].tolist() == results.table["policy"].to_list()
    jhtml = jobs._repr_html_()
    assert "<strong>JobSet</strong>" in jhtml
    assert "resources (capacity): cpu (10), mem (10)" in jhtml
    jdf = jobs.to_pandas()
    assert jdf["cpu"].tolist() == jobs.jobs["cpu"].to_list()


def test_load_results_picks_a_workload_of_an_experiment(tmp_path: Path) -> None:
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec
    from schedlab.reports.experiment import load_results

    spec = (
        'policies = ["fcfs", "sjf"]\n[experiment]\nname = "two"\nseed = 1\nreference = "sjf"\n'
        + "".join(
            f'[[workloads]]\nname = "{w}"\ngenerator = "deeprm"\nloads = [0.7]\njobsets = 3\n'
            f"seed = {k}\n"
            for k, w in enumerate(("a", "b"))
        )
    )
    (tmp_path / "spec.toml").write_text(spec)
    run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "exp", workers=1, progress=False)
    res, js = load_results(tmp_path / "exp", workload="b")
    assert set(res.table.get_column("workload")) == {"b"}
    assert js is not None
    assert set(js.jobs.get_column("jobset")) <= set(range(3))
    with pytest.raises(ResultsError, match=r"name a workload .* holds \['a', 'b'\]"):
        load_results(tmp_path / "exp")
    c = schedlab.compare(tmp_path / "exp", workload="a", n_resamples=50)
    assert c.jobs is not None
    assert set(c.per_jobset.get_column("workload")) == {"a"}
