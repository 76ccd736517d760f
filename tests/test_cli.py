"""The command line, end to end on small seeded workloads."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from schedlab import io
from schedlab.cli import main
from schedlab.jobset import JobSet
from schedlab.registry import policies
from schedlab.results import Results
from tests.cli_helpers import run_fail, run_ok
from tests.spec_helpers import spec_toml

DATA = Path(__file__).parent / "data"


def test_help_lists_subcommands() -> None:
    out = run_ok("--help")
    for cmd in ("generate", "simulate", "report", "demo", "list", "experiment"):
        assert cmd in out


def test_generate_simulate_report(tmp_path: Path) -> None:
    jobs, results, out = tmp_path / "jobs.parquet", tmp_path / "results.parquet", tmp_path / "out"
    run_ok("generate", "deeprm", "--load", "0.7", "--load", "130%", "--jobsets", "8",
         "--seed", "1", "-o", str(jobs))  # fmt: skip
    js = JobSet.read_parquet(jobs)
    assert sorted(js.jobs["load"].unique().to_list()) == [0.7, 1.3]
    assert js.meta.provenance["seed"] == 1
    run_ok("simulate", str(jobs), "--policy", "sjf", "--policy", "tetris:knob=0.3",
         "-o", str(results))  # fmt: skip
    res = Results.read_parquet(results)
    assert res.policies == ["sjf", "tetris:knob=0.3"]
    assert res.table.height == 2 * len(js)
    assert res.meta["policies"]["tetris:knob=0.3"] == {
        "knob": 0.3,
        "placement": "firstfit",
        "queue": "greedy",
        "clairvoyant": False,
    }
    out_text = run_ok("report", str(results), "-o", str(out))
    assert str(out / "report.html") in out_text
    assert (out / "report.md").is_file()


def test_same_seed_same_file_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for path in (a, b):
        run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "5", "--seed", "3",
             "-o", str(path))  # fmt: skip
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.slow
def test_demo_writes_report(tmp_path: Path) -> None:
    from schedlab.evaluation.demo import shipped_checkpoints

    shipped = shipped_checkpoints()  # shipped DeepRM policies join the heuristics
    assert shipped == ["deeprm-0.7", "deeprm-1.3"]  # not Chen's, DeepRM_Plus's or Liu's
    dag_only = set(policies.names(tag="dag"))  # the DeepRM workload has no DAGs
    heuristics = [h for h in policies.names(tag="heuristic") if h not in dag_only]
    n = 2 * (len(heuristics) + len(shipped))
    out = run_ok("demo", "--jobsets", "4", "--load", "0.5,1.5", "-o", str(tmp_path))
    assert "report.html" in out
    assert f"{n} runs: {n} run now" in out
    assert "average job slowdown at offered load 150%" in out  # a readable summary ...
    assert "{" not in out  # ... not a raw JSON dict
    assert "  tetris " in out
    for name in ("spec.toml", "jobsets/deeprm.parquet", "results.parquet", "runs.csv",
                 "report.html", "report.md", "summary.csv", "pairwise.csv"):  # fmt: skip
        assert (tmp_path / name).is_file(), name
    res = Results.read_parquet(tmp_path / "results.parquet")
    assert set(res.policies) == {*heuristics, *shipped}
    assert "4 jobsets are too few" in (tmp_path / "report.md").read_text(encoding="utf-8")
    again = run_ok("demo", "--jobsets", "4", "--load", "0.5,1.5", "-o", str(tmp_path))
    assert f"0 run now, {n} already done" in again
    # another study into the same directory is refused (nothing touched) unless --force
    runs = sorted((tmp_path / "runs").iterdir())
    other = run_fail("demo", "--jobsets", "3", "--load", "0.5,1.5", "-o", str(tmp_path))
    assert "holds experiment 'deeprm_study' of a different spec" in other
    assert "workloads['deeprm'].jobsets: 4 -> 3" in other
    assert "--force" in other
    assert sorted((tmp_path / "runs").iterdir()) == runs
    forced = run_ok("demo", "--jobsets", "3", "--load", "0.5,1.5", "-o", str(tmp_path), "--force")
    assert f"{n} runs: {n} run now" in forced
    assert "moved the previous study's files to" in forced
    (moved,) = (tmp_path / "replaced").iterdir()
    assert len(list((moved / "runs").iterdir())) == n
    assert "jobsets = 3" in (tmp_path / "spec.toml").read_text()


def test_experiment_run_then_report_a_directory(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(EXPERIMENT)
    out = run_ok("experiment", "run", str(spec), "-o", str(tmp_path / "x"), "--workers", "1")
    assert "4 runs: 4 run now, 0 already done, 0 failed" in out
    text = run_ok("report", str(tmp_path / "x"), "-o", str(tmp_path / "r"))
    assert str(tmp_path / "r" / "report.html") in text
    assert "reference policy: sjf" in (tmp_path / "r" / "report.md").read_text(encoding="utf-8")


def test_experiment_failures_exit_non_zero_listing_them(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    (tmp_path / "bad.pt").write_text("not a checkpoint")
    spec.write_text(EXPERIMENT.replace('"fcfs"', '{ spec = "deeprm:bad.pt", name = "bad" }'))
    result = CliRunner().invoke(main, ["experiment", "run", str(spec), "-o", str(tmp_path / "x"),
                                       "--workers", "1"])  # fmt: skip
    assert result.exit_code == 1
    assert "2 runs failed" in result.output
    assert "deeprm__load50__bad: CheckpointError" in result.output
    assert "Traceback" not in result.output
    assert "unknown key" in run_fail("experiment", "run", str(_bad_spec(tmp_path)), "-o", "x")


EXPERIMENT = spec_toml('"sjf", "fcfs"', name="cli", reference="sjf", loads="[0.5, 1.5]", jobsets=3)


def _bad_spec(tmp_path: Path) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(EXPERIMENT.replace("jobsets = 3", "jobset = 3"))
    return path


def test_bad_inputs_give_one_line_errors(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.parquet"
    run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "2", "-o", str(jobs))
    assert "did you mean 'sjf'" in run_fail("simulate", str(jobs), "--policy", "sjff",
                                         "-o", str(tmp_path / "r.parquet"))  # fmt: skip
    assert "is not a load" in run_fail("generate", "deeprm", "--load", "x", "-o", str(jobs))
    assert "policy 'sjf' has no parameter 'knob'" in run_fail(
        "simulate", str(jobs), "--policy", "sjf:knob=1", "-o", str(tmp_path / "r.parquet")
    )
    not_parquet = tmp_path / "text.parquet"
    not_parquet.write_text("hello")
    assert "not a readable Parquet file" in run_fail("simulate", str(not_parquet), "-o", "r.pq")


def test_job_larger_than_cluster_is_rejected_at_load(tmp_path: Path) -> None:
    js = JobSet.read_parquet(_write_small(tmp_path))
    big = js.jobs.with_columns(pl.when(pl.col("job_id") == 0).then(11.0).otherwise(pl.col("cpu"))
                               .alias("cpu"))  # fmt: skip
    path = tmp_path / "big.parquet"
    io.write_parquet(big, path, js.meta.to_json())
    out = run_fail("simulate", str(path), "--policy", "sjf", "-o", str(tmp_path / "r.parquet"))
    assert "demands cpu=11.0" in out
    assert "could never run" in out
    assert str(path) in out


def _write_small(tmp_path: Path) -> Path:
    path = tmp_path / "small.parquet"
    run_ok("generate", "deeprm", "--load", "0.9", "--jobsets", "2", "-o", str(path))
    return path


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("policies", "sjf"), ("generators", "deeprm"), ("loaders", "swf"), ("trainers", "deeprm")],
)
def test_list(kind: str, expected: str) -> None:
    assert expected in run_ok("list", kind)


def test_list_shows_tags_in_registration_order_and_parameters() -> None:
    out = run_ok("list", "policies")
    names = [line.split()[0] for line in out.splitlines() if line]
    heuristics = policies.names(tag="heuristic")
    assert names[: len(heuristics)] == heuristics
    assert "[baseline, heuristic, model:cluster]" in out
    assert "Queues: greedy (the default" in out  # the queue disciplines, greedy the default
    params = run_ok("list", "generators", "--params")
    assert "variant = one of 'code', 'paper' (default 'code')" in params
    assert "short_prob = a number (default 0.8): Probability that a job is short." in params
    # in the command line's words (-p KEY=VALUE: None is null), whole, without reST markup
    said = "res_slot = an integer or null (default null): Slots per resource (the reference code's "
    assert said + "res_slot), replacing the variant's. Demands keep their ranges" in params
    assert "``" not in params
    assert "None" not in params
    assert "window = an integer (default 50)" in run_ok("list", "trainers", "--params")


def test_train_help_lists_trainers_and_derives_options_from_the_config() -> None:
    listing = run_ok("train", "--help")
    assert re.search(r"deeprm +DeepRM \(Mao et al. 2016\)", listing)
    assert re.search(r"deeprm-plus +DeepRM_Plus \(Guo et al. 2021\)", listing)
    text = run_ok("train", "deeprm", "--help")
    options = ("--jobsets", "--rollouts", "--objective [slowdown|completion]", "-p, --param",
               "--mask-invalid / --no-mask-invalid", "--eval-greedy", "--resume", "-o")  # fmt: skip
    for option in options:
        assert option in text, option
    assert "RMSProp learning rate." in text  # the field's docstring
    assert "did you mean 'deeprm'" in run_fail("train", "deepr", "-o", "x")


def test_greedy_heuristics_on_a_log_are_told_they_see_only_the_default_slots(tmp_path) -> None:
    """A log in real time with the default --slots 10: SJF sees 10 waiting jobs, not the
    queue (on KTH-SP2 its mean wait is 3.6 times the whole queue's), so simulate says so."""
    jobs = tmp_path / "kth.parquet"
    run_ok("load", "swf", str(DATA / "swf_small.swf"), "--time-step", "1", "-o", str(jobs))
    sims = ("simulate", str(jobs), "--policy", "sjf")
    out = run_ok(*sims, "--policy", "sjf+easy", "-o", str(tmp_path / "r.parquet"))
    assert "note: sjf sees only the first 10 waiting jobs (--slots 10" in out
    assert "sjf, sjf+easy" not in out  # a discipline sees the whole queue
    quiet = run_ok(*sims, "--slots", "all", "-o", str(tmp_path / "q.parquet"))
    assert "note:" not in quiet


def test_a_reference_that_ran_nowhere_is_refused_with_the_closest(tmp_path) -> None:
    jobs, res = tmp_path / "jobs.parquet", tmp_path / "r.parquet"
    run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "2", "-o", str(jobs))
    run_ok("simulate", str(jobs), "--policy", "fcfs+easy", "--policy", "sjf", "-o", str(res))
    out = run_fail("report", str(res), "--reference", "fcfs+eazy", "-o", str(tmp_path / "rep"))
    assert "'fcfs+eazy' is not a policy of" in out
    assert "did you mean 'fcfs+easy'?" in out
    assert not (tmp_path / "rep").exists()
