"""Report rendering end to end on small simulated results, and the figure functions."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.errors import ResultsError
from schedlab.evaluation.metrics import per_jobset, per_length
from schedlab.evaluation.settings import StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.reports.figures import plot_length_boxplot, plot_load_sweep, plot_slowdown_cdf
from schedlab.reports.palette import policy_palette
from schedlab.reports.render import write_report
from schedlab.results import Results
from tests.report_helpers import check_files, check_latex_table, png_size

POLICIES = ["sjf", "fcfs", "packer"]
FIGURES = [
    "ratio_grid.png",
    "load_sweep.png",
    "length_boxplot.png",
    "slowdown_cdf.png",
    "jobset_values.png",
    "cd_diagram.png",
    "pairwise_heatmap.png",
    "ratio_to_reference.png",
    "schedule_diff.png",
    "allocation.png",
    "timeline.png",
    "timeline_mean.png",
]
TABLES = ["summary_table", "pairwise_table", "ratio_table"]
CSVS = {
    "summary.csv": ["policy", "load", "metric", "mean", "ci_low", "ci_high", "median", "q25",
                    "q75", "n_jobsets"],
    "per_jobset.csv": ["policy", "load", "seed", "jobset", "n_jobs", "slowdown", "completion",
                       "wait", "max_slowdown", "bounded_slowdown", "p95_slowdown", "max_wait",
                       "p95_wait", "p99_wait", "killed", "jct", "job_slowdown",
                       "p95_job_slowdown"],
    "per_length.csv": ["policy", "load", "seed", "jobset", "bucket", "n_jobs", "slowdown",
                       "completion"],
    "length_summary.csv": ["policy", "load", "bucket", "metric", "mean", "ci_low", "ci_high",
                           "median", "q25", "q75", "n_jobsets"],
    "comparison.csv": ["policy", "load", "metric", "mean", "ci_low", "ci_high", "median", "q25",
                       "q75", "n_jobsets", "paired_mean", "n_paired", "mean_rank", "ratio",
                       "ratio_low", "ratio_high", "wins", "ties", "losses", "p_improve",
                       "p_improve_low", "p_improve_high"],
    "ratios.csv": ["load", "policy", "mean_rank", "ratio", "ratio_low", "ratio_high", "wins",
                   "ties", "losses", "p_holm", "significant", "ci_excludes_one", "disagree"],
    "omnibus.csv": ["load", "n_jobsets", "k", "chi2", "p_chi2", "f", "df1", "df2", "p",
                    "kendall_w", "nemenyi_cd", "min_jobsets", "p_f", "p_method", "p_reason"],
    "pairwise.csv": ["load", "a", "b", "n", "n_zero", "r_plus", "r_minus", "p", "rank_biserial",
                     "p_holm", "significant"],
    "exploratory.csv": ["load", "family", "metric", "bucket", "policy", "n", "ratio",
                        "ratio_low", "ratio_high", "wins", "ties", "losses", "p_improve",
                        "p_improve_low", "p_improve_high", "p", "rank_biserial", "q"],
    "timeline_jobset.csv": ["policy", "load", "seed", "jobset", "time", "running", "queue",
                            "queued_work", "util_cpu", "util_mem", "frag_cpu", "frag_mem",
                            "fragmentation"],
    "timeline_summary.csv": ["policy", "load", "seed", "jobset", "makespan", "mean_queue",
                             "max_queue", "mean_queued_work", "mean_util_cpu", "mean_util_mem",
                             "mean_fragmentation"],
}  # fmt: skip


@pytest.fixture(scope="module")
def report(
    results: Results, jobs: JobSet, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("report")
    return write_report(results, out, seed=0, n_resamples=500, jobs=jobs, dpi=120)


def test_write_report_writes_every_file(report: dict[str, Path]) -> None:
    assert report["html"].name == "report.html"
    assert report["md"].name == "report.md"
    files = [*CSVS, *FIGURES]
    formatted = [f"{t}.{ext}" for t in TABLES for ext in ("tex", "md")]
    assert set(report) == {"html", "md", *(Path(f).stem for f in files), *formatted}
    for name in files:
        assert report[Path(name).stem].name == name
    check_files(report)
    assert png_size(report["load_sweep"].read_bytes())[0] == 9 * 120  # --dpi
    leftovers = [p.name for p in report["md"].parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert not list(report["md"].parent.glob("*.pdf"))  # screen style: PNG only by default


def test_html_is_self_contained(report: dict[str, Path]) -> None:
    text = report["html"].read_text(encoding="utf-8")
    assert text.count("src='data:image/png;base64,") == len(FIGURES)
    assert text.index("At every offered load: ratio to sjf") < text.index("Which policy is better")
    assert not re.search(r"https?://|<link|<script|src='(?!data:)|href=", text)
    assert "<table>" in text
    assert "percentile bootstrap 95%" in text


def test_markdown_links_the_pngs_beside_it(report: dict[str, Path]) -> None:
    text = report["md"].read_text(encoding="utf-8")
    for name in FIGURES:
        assert f"]({name})" in text
        assert (report["md"].parent / name).is_file()
    assert "| policy | 50% | 150% |" in text
    assert "Statistics are over jobsets" in text


def test_csvs_parse_with_the_right_columns(report: dict[str, Path]) -> None:
    for name, columns in CSVS.items():
        assert pl.read_csv(report[Path(name).stem]).columns == columns, name
    summary = pl.read_csv(report["summary"])
    metrics = {"slowdown", "completion", "bounded_slowdown", "p95_slowdown"}
    assert summary.height == len(POLICIES) * 2 * len(metrics)
    assert summary.get_column("policy").unique(maintain_order=True).to_list() == POLICIES
    assert set(summary.get_column("metric")) == metrics
    assert (summary.get_column("ci_low") <= summary.get_column("mean")).all()
    assert (summary.get_column("mean") <= summary.get_column("ci_high")).all()
    buckets = pl.read_csv(report["length_summary"])
    assert set(buckets.get_column("load")) == {1.5}
    assert set(buckets.get_column("bucket")) == {"short", "long"}


def test_summary_table_cells_match_summary_csv(report: dict[str, Path]) -> None:
    row = (
        pl.read_csv(report["summary"])
        .filter(policy="fcfs", load=1.5, metric="slowdown")
        .row(0, named=True)
    )
    cell = f"{row['mean']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    assert cell in report["md"].read_text(encoding="utf-8")
    html_cell = cell.replace(", ", ",\u00a0")  # an HTML cell wraps before its interval only
    assert html_cell in report["html"].read_text(encoding="utf-8")


def test_report_without_offered_load_skips_the_sweep(results: Results, tmp_path: Path) -> None:
    table = results.table.with_columns(load=pl.lit(None, pl.Float64))
    paths = write_report(Results(table, dict(results.meta, length_buckets={})), tmp_path)
    assert "load_sweep" not in paths
    assert {"length_boxplot", "slowdown_cdf", "html", "md"} <= set(paths)
    assert "load_sweep.png" not in paths["html"].read_text(encoding="utf-8")
    text = paths["md"].read_text(encoding="utf-8")
    assert "duration terciles" in text
    assert "load not recorded" in text


def new_axes() -> Axes:
    return Figure().subplots()


def test_policy_palette_is_consistent_and_distinct() -> None:
    pal = policy_palette(POLICIES)
    assert list(pal) == POLICIES
    assert len(set(pal.values())) == len(POLICIES)
    assert policy_palette(POLICIES) == pal
    assert len(set(policy_palette([f"p{i}" for i in range(12)]).values())) == 12


def test_plot_load_sweep_draws_one_line_per_policy(results: Results) -> None:
    summary = summarize(per_jobset(results), settings=StatsSettings(n_resamples=200))
    ax = plot_load_sweep(summary, palette=policy_palette(POLICIES), ax=new_axes())
    assert isinstance(ax, Axes)
    assert ax.get_xlabel() == "Offered load (%)"
    assert "slowdown" in ax.get_ylabel()
    assert "95% CI" in ax.get_ylabel()
    assert [line.get_label() for line in ax.get_lines()] == POLICIES
    assert list(ax.get_lines()[0].get_xdata()) == pytest.approx([50.0, 150.0])
    assert len(ax.collections) == len(POLICIES)  # one CI band each


def test_plot_load_sweep_needs_a_load() -> None:
    summary = pl.DataFrame(
        {"policy": ["a"], "load": [None], "metric": ["slowdown"], "mean": [1.0],
         "ci_low": [1.0], "ci_high": [1.0]},
        schema_overrides={"load": pl.Float64},
    )  # fmt: skip
    with pytest.raises(ValueError, match="offered load"):
        plot_load_sweep(summary, palette={"a": "red"}, ax=new_axes())


def test_plot_length_boxplot_is_labelled_and_log_scaled(results: Results) -> None:
    ax = plot_length_boxplot(
        per_length(results), palette=policy_palette(POLICIES), buckets={"short": (1, 3),
                                                                         "long": (10, 15)},
        ax=new_axes(),
    )  # fmt: skip
    assert ax.get_yscale() == "log"
    assert "slowdown" in ax.get_ylabel()
    assert ax.get_xlabel()
    assert "150%" in ax.get_title()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["short (1–3 steps)", "long (10–15 steps)"]


def test_plot_slowdown_cdf_defaults_to_the_highest_load(results: Results) -> None:
    ax = plot_slowdown_cdf(results.table, palette=policy_palette(POLICIES), ax=new_axes())
    assert ax.get_xscale() == "log"
    assert "slowdown" in ax.get_xlabel()
    assert "Fraction of jobs" in ax.get_ylabel()
    assert "150%" in ax.get_title()
    n_jobs = results.table.filter(policy="sjf", load=1.5).height
    assert f"{n_jobs} jobs" in ax.get_title()
    with pytest.raises(ValueError, match="no rows at load"):
        plot_slowdown_cdf(results.table, palette=policy_palette(POLICIES), load=0.9, ax=new_axes())


def test_first_screen_tabulates_every_load(report: dict[str, Path]) -> None:
    ratios = pl.read_csv(report["ratios"])
    assert set(ratios.get_column("policy")) == {"fcfs", "packer"}  # reference: sjf (first)
    md = report["md"].read_text(encoding="utf-8")
    assert "| offered load | best (mean rank) | fcfs | packer |" in md
    r = ratios.filter(policy="fcfs", load=1.5).row(0, named=True)
    cell = f"{r['ratio']:.2f} [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}]"
    marks = ("\\*" if r["significant"] else "") + ("†" if r["disagree"] else "")
    assert f"{cell}{marks}" in md
    assert (ratios["disagree"] == (ratios["ci_excludes_one"] != ratios["significant"])).all()


def test_latex_tables_match_the_markdown_tables(report: dict[str, Path]) -> None:
    for name in TABLES:
        rows = check_latex_table(report[f"{name}.tex"].read_text(encoding="utf-8"))
        md = report[f"{name}.md"].read_text(encoding="utf-8")
        md_rows = [line for line in md.splitlines() if line.startswith("| ")]
        assert len(rows) == len(md_rows), name
    summary = check_latex_table(report["summary_table.tex"].read_text(encoding="utf-8"))
    assert summary[0][:2] == ["mean rank", "policy"]
    assert {row[1] for row in summary[1:]} == {"sjf (reference)", "fcfs", "packer"}


def test_schedule_section_shows_the_median_jobset(report: dict[str, Path]) -> None:
    md = report["md"].read_text(encoding="utf-8")
    assert "## The schedule of a representative jobset at offered load 150%" in md
    pj = pl.read_csv(report["per_jobset"]).filter(policy="sjf", load=1.5).sort("slowdown")
    k = pj.get_column("jobset")[(pj.height - 1) // 2]
    assert f"Jobset {k}: the median jobset by sjf's average job slowdown (its average" in md
    timeline = pl.read_csv(report["timeline_jobset"])
    assert set(timeline.get_column("jobset")) == {k}
    summary = pl.read_csv(report["timeline_summary"])
    assert summary.height == len(POLICIES) * pj.height
    assert "| policy | makespan (steps) | cpu in use (%) | mem in use (%) |" in md


@pytest.mark.slow
def test_paper_style_writes_vector_copies(results: Results, tmp_path: Path) -> None:
    paths = write_report(results, tmp_path, n_resamples=200, style="paper", dpi=100)
    check_files(paths)
    assert png_size(paths["slowdown_cdf"].read_bytes())[0] == 330  # one 3.3-inch column
    for stem in ("slowdown_cdf", "schedule_diff", "ratio_grid"):
        assert paths[f"{stem}.pdf"].is_file()
        assert paths[f"{stem}.svg"].is_file()
    md = paths["md"].read_text(encoding="utf-8")
    assert "[PDF](slowdown_cdf.pdf) [SVG](slowdown_cdf.svg) [PNG](slowdown_cdf.png)" in md
    # without the JobSet: the Gantt charts, no views over time
    assert "timeline" not in paths
    assert "need the jobs' demands" in md


def test_a_jobset_that_does_not_match_is_an_error(results: Results, tmp_path: Path) -> None:
    other = DeepRMGenerator().generate_sweep([0.5, 1.5], n_jobsets=8, seed=4)
    with pytest.raises(ResultsError, match="not simulated on it"):
        write_report(results, tmp_path, n_resamples=50, jobs=other)
