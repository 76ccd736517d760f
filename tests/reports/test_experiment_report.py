"""The report of an experiment directory, and the figures of the statistical comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import polars as pl
import pytest
from matplotlib.figure import Figure

from schedlab.errors import SpecError
from schedlab.evaluation.analysis import AnalysisConfig
from schedlab.evaluation.runner import run_experiment
from schedlab.evaluation.spec import load_spec
from schedlab.reports.comparison import headline, power_warnings
from schedlab.reports.comparison_data import compare_policies
from schedlab.reports.experiment import across_headline, write_experiment_report
from schedlab.reports.learning import (
    learning_figures,
    plot_learning_curve,
    spec_queue,
    training_curve,
    write_training_report,
)
from schedlab.reports.palette import policy_palette
from schedlab.reports.ratio_figures import plot_ratio_to_reference
from schedlab.reports.stats_figures import plot_cd_diagram, plot_pairwise_heatmap
from tests.report_helpers import check_latex_table
from tests.spec_helpers import spec_toml

SPEC = (
    spec_toml(
        '"fcfs", "sjf", "tetris"',
        name="small",
        seed=1,
        reference="tetris",
        loads="[0.5, 1.3]",
        jobsets="{jobsets}",
        workload_seed=2,
    )
    + """[metrics]
n_resamples = 300
bounded_slowdown_threshold = 8
[report]
title = "Small experiment"
focus_load = 0.5
"""
)


def experiment(tmp: Path, jobsets: int, extra: str = "", loads: str = "[0.5, 1.3]") -> Path:
    """Run the small spec (plus ``extra`` TOML) in ``tmp/exp``."""
    text = SPEC.format(jobsets=jobsets).replace("[0.5, 1.3]", loads) + extra
    (tmp / "spec.toml").write_text(text)
    run_experiment(load_spec(tmp / "spec.toml"), tmp / "exp", workers=1, progress=False)
    return tmp / "exp"


FAILING = (
    ', { spec = "deeprm:bad.pt", name = "bad" }'
    ', { spec = "deeprm:gone/a.pt", name = "rl-a", optional = true }'
    ', { spec = "deeprm:gone/b.pt", name = "rl-b", optional = true }]'
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("rep")
    (tmp / "bad.pt").write_text("not a checkpoint")  # the run fails when it loads it
    (tmp / "spec.toml").write_text(SPEC.format(jobsets=12).replace("]", FAILING, 1))
    run_experiment(load_spec(tmp / "spec.toml"), tmp / "exp", workers=1, progress=False)
    return write_experiment_report(tmp / "exp", tmp / "out")


def test_experiment_report_has_every_section(report: dict[str, Path]) -> None:
    text = report["md"].read_text(encoding="utf-8")
    assert text.startswith("# Small experiment")
    for needle in (
        "Which policy is better at offered load 50%?",
        "Omnibus test at every load",
        "Iman–Davenport",
        "Kendall's W",
        "Holm",
        "Benjamini–Hochberg",
        "(exploratory)",
        "τ = 8 steps",
        "At every offered load: ratio to tetris",
        "The schedule of a representative jobset at offered load 50%",
        "zero_method=pratt",
        "Environment:",
        "Experiment spec (resolved):",
    ):
        assert needle in text, needle
    assert "too few" not in text  # 12 jobsets suffice for 3 policies (7 needed)
    assert text.count("failed (CheckpointError") == 2  # the failing policy, at both loads
    html = report["html"].read_text(encoding="utf-8")
    assert html.count("src='data:image/png;base64,") == 12
    for name in ("schedule_diff.png", "timeline.png", "timeline_mean.png", "ratio_grid.png"):
        assert f"]({name})" in text, name
    assert not re.search(r"https?://|<link|<script|src='(?!data:)", html)


def test_skipped_optional_policies_are_one_line_at_the_end(report: dict[str, Path]) -> None:
    text = report["md"].read_text(encoding="utf-8")
    line = "Optional policies not run: rl-a, rl-b (checkpoint not found)."
    assert text.count("not run:") == 1
    assert text.rstrip().splitlines()[-1].endswith(line)


def test_focus_load_and_reference_come_from_the_spec(report: dict[str, Path]) -> None:
    lengths = pl.read_csv(report["length_summary"])
    assert set(lengths.get_column("load")) == {0.5}
    comp = pl.read_csv(report["comparison"])
    assert set(comp.get_column("policy")) == {"fcfs", "sjf", "tetris"}
    ref_rows = comp.filter(pl.col("policy") == "tetris")
    assert ref_rows.get_column("ratio").null_count() == ref_rows.height


def test_too_few_jobsets_give_a_warning() -> None:
    rows = [
        {"policy": p, "load": 1.0, "seed": 0, "jobset": j, "slowdown": 1.0 + j + k}
        for k, p in enumerate(["a", "b", "c"])
        for j in range(4)
    ]
    cfg = AnalysisConfig(reference="a", secondary=(), n_resamples=100)
    pj = pl.DataFrame(rows)
    comp = compare_policies(pj, pl.DataFrame(), cfg, ["a", "b", "c"], 1.0)
    (warning,) = power_warnings(comp)
    assert "4 jobsets are too few" in warning
    assert "At least 7 jobsets are needed" in warning
    seven = pl.DataFrame([{**r, "jobset": r["jobset"] + 4 * i} for i in (0, 1) for r in rows])
    assert power_warnings(compare_policies(seven, pl.DataFrame(), cfg, ["a", "b", "c"], 1.0)) == []


def test_one_policy_in_every_condition_is_no_ranking() -> None:
    """A spec whose policies each run under one discipline (the reference in all) has no
    ranking across conditions: the headline says so instead of crowning the only one."""
    cfg = AnalysisConfig(reference="fcfs+easy", secondary=(), n_resamples=100)
    ranks = pl.DataFrame(
        {"workload": ["all"], "policy": ["fcfs+easy"], "n_conditions": [4], "mean_rank": [1.0]}
    )
    across = SimpleNamespace(ranks=ranks, omnibus=pl.DataFrame())
    text = across_headline(across, cfg)  # type: ignore[arg-type]
    assert text.startswith("No ranking across conditions: only fcfs+easy ran in every condition")
    assert "best average rank" not in text


def test_not_an_experiment_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not an experiment directory"):
        write_experiment_report(tmp_path, tmp_path / "out")


@pytest.mark.slow
def test_several_workloads_give_one_report_each_and_an_index(tmp_path: Path) -> None:
    extra = '[[workloads]]\nname = "other"\ngenerator = "deeprm"\nloads = [0.9]\njobsets = 3\n'
    exp = experiment(tmp_path, 3, extra, loads="[0.5]")  # one load per workload: quicker
    paths = write_experiment_report(exp, tmp_path / "out")
    assert (tmp_path / "out" / "deeprm" / "report.html").is_file()
    assert (tmp_path / "out" / "other" / "report.html").is_file()
    md = paths["md"].read_text(encoding="utf-8")
    assert "- [other](other/report.html)" in md
    assert "<a href='deeprm/report.html'>deeprm</a>" in paths["html"].read_text(encoding="utf-8")
    assert "## Across workloads and loads" in md
    assert "| policy | deeprm | other | all conditions |" in md
    assert "Over the 2 conditions, " in md
    assert "Friedman" not in md.split("## Across")[1].split("No test")[0]  # no test without power
    assert "No test over conditions: with 2 conditions" in md  # 3 policies need 7 for any pair
    ranks = pl.read_csv(paths["across_ranks"])
    assert set(ranks.get_column("workload")) == {"deeprm", "other", "all"}
    assert ranks.filter(pl.col("workload") == "all").get_column("mean_rank").sum() == 6.0
    assert "cd_diagram" not in paths
    check_latex_table(paths["ranks_table.tex"].read_text(encoding="utf-8"))
    means = pl.read_csv(paths["across_means"])  # every policy's mean in every condition
    assert means.height == 3 * 2
    assert "| policy | deeprm, 50% | other, 90% |" in md
    sjf = means.filter((pl.col("policy") == "sjf") & (pl.col("workload") == "other")).row(
        0, named=True
    )
    assert f"{sjf['mean']:.2f} [{sjf['ci_low']:.2f}, {sjf['ci_high']:.2f}]" in md
    check_latex_table(paths["means_table.tex"].read_text(encoding="utf-8"))


PAL = policy_palette(["fcfs", "sjf", "tetris"])


def test_cd_diagram_draws_ranks_groups_and_cd() -> None:
    ax = plot_cd_diagram(
        {"tetris": 1.4, "sjf": 1.6, "fcfs": 3.0},
        [["tetris", "sjf"]],
        palette=PAL,
        cd=0.5,
        ax=Figure().subplots(),
    )
    texts = [t.get_text() for t in ax.texts]
    assert "tetris (1.40)" in texts
    assert "(3.00) fcfs" in texts  # the worse half is labelled on the right
    assert "CD = 0.50" in texts
    assert "average rank (1 = best)" in texts


def test_pairwise_heatmap_is_antisymmetric_with_p_values() -> None:
    pairs = pl.DataFrame(
        {
            "a": ["tetris"],
            "b": ["fcfs"],
            "rank_biserial": [0.8],
            "p_holm": [0.004],
            "significant": [True],
        }
    )
    ax = plot_pairwise_heatmap(pairs, ["tetris", "fcfs"], ax=Figure().subplots())
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["+0.80\np0.004*", "-0.80\np0.004*"]
    assert ax.get_xlabel() == "Column policy"


def test_ratio_plot_has_log_axis_and_reference_line() -> None:
    summ = pl.DataFrame(
        {
            "policy": ["fcfs", "fcfs", "sjf"],
            "metric": ["slowdown", "completion", "slowdown"],
            "ratio": [2.0, 1.5, 1.05],
            "ratio_low": [1.8, 1.4, 1.0],
            "ratio_high": [2.2, 1.6, 1.1],
        }
    )
    ax = plot_ratio_to_reference(
        summ,
        reference="tetris",
        metrics=["slowdown", "completion"],
        palette=PAL,
        ax=Figure().subplots(),
    )
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "1" in labels
    assert "tetris (reference)" in ax.get_legend_handles_labels()[1]


def test_learning_curve_uses_the_report_colours() -> None:
    curve = pl.DataFrame(
        {
            "iteration": [1, 2, 3],
            "val_slowdown": [5.0, None, 3.0],
            "train_slowdown": [6.0, 5.0, 4.0],
        }
    )
    pal = {**PAL, "rl": (1.0, 0.0, 0.0)}
    ax = plot_learning_curve(
        curve, {"sjf": 3.5, "initial": 9.0}, policy="rl", palette=pal, ax=Figure().subplots()
    )
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "rl (sampled, training jobsets)",
        "rl (sampled, validation jobsets)",
        "sjf (3.50)",
    ]
    assert ax.lines[1].get_color() == (1.0, 0.0, 0.0)
    assert ax.lines[2].get_color() == PAL["sjf"]


def test_learning_curve_names_how_the_policy_was_validated() -> None:
    n = 200
    curve = pl.DataFrame(
        {
            "iteration": list(range(1, n + 1)),
            "val_slowdown": [5.0 - i / n for i in range(n)],
            "val_greedy_slowdown": [5.5 - i / n for i in range(n)],
        }
    )
    base = {"sjf": 4.5, "tetris": 4.5}  # equal values: both must stay visible
    ax = plot_learning_curve(curve, base, policy="rl", palette=PAL, ax=Figure().subplots())
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:2] == ["rl (sampled, validation jobsets)", "rl (argmax, validation jobsets)"]
    baselines = ax.lines[2:]
    assert {line.get_color() for line in baselines} == {PAL["sjf"], PAL["tetris"]}
    assert len({str(line.get_linestyle()) for line in baselines}) == 2
    assert len(range(0, n, ax.lines[0].get_markevery())) <= 25  # markers on a long curve
    greedy = plot_learning_curve(
        curve, base, policy="rl", palette=PAL, sampled=False, ax=Figure().subplots()
    )
    assert greedy.get_legend_handles_labels()[1][0] == "rl (argmax, validation jobsets)"
    assert ax.get_yscale() == "linear"
    wide = plot_learning_curve(
        curve.with_columns(pl.col("val_slowdown") * 100),
        base,
        policy="rl",
        palette=PAL,
        ax=Figure().subplots(),
    )
    assert wide.get_yscale() == "log"  # 500 and 4.5 on one axis: every curve readable


def test_a_completion_objective_run_is_drawn_and_reported_in_completion_time(tmp_path) -> None:
    """Its baselines are completion times, so its curve must be too (not its slowdown)."""
    curve = pl.DataFrame(
        {
            "iteration": [1, 2, 3],
            "train_slowdown": [6.0, 5.0, 4.0],
            "val_slowdown": [5.0, None, 3.0],
            "val_completion": [20.0, None, 18.0],
            "mean_reward": [-9.0, -8.0, -7.0],
            "max_reward": [-5.0, -4.0, -3.0],
            "rollout_s": [1.0, 1.0, 1.0],
            "update_s": [1.0, 1.0, 1.0],
            "eval_s": [0.0, 0.0, 0.0],
        }
    )
    base = {"sjf": 17.5, "initial": 22.0}
    ax = plot_learning_curve(
        curve, base, policy="rl", palette=PAL, metric="completion", ax=Figure().subplots()
    )
    assert ax.lines[0].get_ydata().tolist() == [20.0, 18.0]  # no training-jobsets completion
    assert ax.get_ylabel() == "Average job completion time (steps)"
    config = {"objective": "completion", "workload": "poisson", "load": 1.29}
    write_training_report(tmp_path, curve, base, {}, config)
    text = (tmp_path / "report.md").read_text()
    assert "| policy (validation jobsets) | average completion time (steps) |" in text
    assert "| deeprm best (iteration 3) | 18.000 |" in text
    assert "3.000" not in text  # the slowdown column is not reported as the objective


def test_headline_says_so_when_every_policy_ties_on_every_jobset() -> None:
    rows = [
        {"policy": p, "load": None, "seed": 0, "jobset": j, "slowdown": 1.0 + j}
        for p in ("a", "b")
        for j in range(8)
    ]
    pj = pl.DataFrame(rows, schema_overrides={"load": pl.Float64})
    cfg = AnalysisConfig(reference="a", secondary=(), n_resamples=100)
    comp = compare_policies(pj, pl.DataFrame(), cfg, ["a", "b"], None)
    assert "there is no difference to report" in headline(comp)
    other = pj.with_columns(
        pl.when(pl.col("policy") == "b")
        .then(pl.col("slowdown") * 2)
        .otherwise(pl.col("slowdown"))
        .alias("slowdown")
    )
    text = headline(compare_policies(other, pl.DataFrame(), cfg, ["a", "b"], None))
    assert text.startswith("Over all jobsets, a has the best mean rank (1.00)")
    assert "b versus a: geometric-mean ratio 2.00 [2.00, 2.00], wins/ties/losses 0/0/8" in text


def test_a_run_validated_under_several_disciplines_shows_each_policy_its_own(tmp_path) -> None:
    """jobscore+easy's figure is the EASY curve against the heuristics under EASY, not the
    mean over the run's disciplines (which is what selected best.pt)."""
    pl.DataFrame(
        {
            "iteration": [1, 2],
            "val_bounded_slowdown": [30.0, 20.0],
            "val_bounded_slowdown_greedy": [40.0, 25.0],
            "val_bounded_slowdown_easy": [20.0, 15.0],
        }
    ).write_csv(tmp_path / "curve.csv")
    (tmp_path / "config.json").write_text(json.dumps({"objective": "bounded_slowdown"}))
    (tmp_path / "baselines.json").write_text(json.dumps({"sjf": 26.0}))
    by_queue = {"greedy": {"sjf": 30.0}, "easy": {"sjf": 22.0}}
    (tmp_path / "baselines_by_queue.json").write_text(json.dumps(by_queue))
    curve, base, _, metric = training_curve(tmp_path, "easy")
    assert curve.get_column(f"val_{metric}").to_list() == [20.0, 15.0]
    assert base == {"sjf": 22.0}
    assert training_curve(tmp_path)[1] == {"sjf": 26.0}  # no discipline: the run's mean
    assert spec_queue("jobscore+easy:checkpoint=x", tmp_path) == "easy"
    assert spec_queue("jobscore:checkpoint=x,queue=easy", tmp_path) == "easy"
    assert spec_queue("jobscore:checkpoint=x", tmp_path) == "greedy"  # the policies' default
    assert spec_queue("jobscore+easy:checkpoint=x", tmp_path / "elsewhere") is None
    figs = learning_figures({"jobscore+easy": (str(tmp_path), "easy")}, PAL)
    assert next(iter(figs.values()))[1].endswith("both under easy.")
