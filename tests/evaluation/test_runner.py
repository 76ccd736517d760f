"""The experiment runner: same jobsets for every policy, atomic runs, resume, failures."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from schedlab.evaluation.collect import merge_agent_stats, read_experiment
from schedlab.evaluation.runner import plan, run_experiment
from schedlab.evaluation.spec import load_spec
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.results import Results

SPEC = """
policies = ["sjf", "fcfs", "tetris"]
[experiment]
name = "tiny"
seed = 3
reference = "tetris"
[[workloads]]
name = "deeprm"
generator = "deeprm"
loads = [0.5, 1.3]
jobsets = 5
seed = 11
"""


def spec_at(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("exp")
    outcome = run_experiment(load_spec(spec_at(tmp)), tmp / "out", workers=1, progress=False)
    assert (outcome.n_runs, outcome.ran, outcome.skipped, outcome.failures) == (6, 6, 0, {})
    return tmp / "out"


def test_layout_and_every_policy_sees_the_same_jobsets(done: Path) -> None:
    for name in ("spec.toml", "spec.json", "environment.json", "results.parquet", "runs.csv"):
        assert (done / name).is_file(), name
    assert sorted(p.name for p in (done / "runs").iterdir()) == sorted(
        f"deeprm__load{x}__{p}.parquet" for x in (50, 130) for p in ("sjf", "fcfs", "tetris")
    )
    res = Results.read_parquet(done / "results.parquet")
    jobs = {
        p: res.table.filter(pl.col("policy") == p)
        .sort("load", "jobset", "job_id")
        .select("load", "jobset", "job_id", "arrival", "duration")
        for p in ("sjf", "fcfs", "tetris")
    }
    assert jobs["sjf"].equals(jobs["fcfs"])
    assert jobs["sjf"].equals(jobs["tetris"])
    # the jobsets are exactly the generator's, seeded by the workload seed
    js = DeepRMGenerator().generate_sweep([0.5, 1.3], n_jobsets=5, seed=11)
    assert jobs["sjf"].height == len(js)
    env = json.loads((done / "environment.json").read_text())
    assert {"numpy", "scipy", "polars"} <= set(env["packages"])
    runs = pl.read_csv(done / "runs.csv")
    assert runs.height == 6
    assert set(runs["status"]) == {"done"}


def test_rerun_skips_done_runs_and_resumes_an_interrupted_one(tmp_path: Path) -> None:
    spec = load_spec(spec_at(tmp_path))
    out = tmp_path / "out"
    run_experiment(spec, out, workers=1, progress=False)
    before = (out / "runs" / "deeprm__load50__sjf.parquet").stat().st_mtime_ns
    again = run_experiment(spec, out, workers=1, progress=False)
    assert (again.ran, again.skipped) == (0, 6)
    (out / "runs" / "deeprm__load130__fcfs.parquet").unlink()  # as if interrupted
    (out / "runs" / ".deeprm__load130__fcfs.parquet.x.tmp").write_bytes(b"partial")
    resumed = run_experiment(spec, out, workers=1, progress=False)
    assert (resumed.ran, resumed.skipped) == (1, 5)
    assert (out / "runs" / "deeprm__load50__sjf.parquet").stat().st_mtime_ns == before
    # a changed spec re-runs what it changes (more jobsets -> new jobsets -> every run)
    bigger = load_spec(spec_at(tmp_path, SPEC.replace("jobsets = 5", "jobsets = 6")))
    assert run_experiment(bigger, out, workers=1, progress=False).ran == 6


def test_a_failing_run_is_recorded_and_the_others_finish(tmp_path: Path) -> None:
    text = SPEC.replace('"sjf", "fcfs", "tetris"', '"sjf", "tetris", "tetris:knob=\\"x\\""')
    spec = load_spec(spec_at(tmp_path, text))
    out = tmp_path / "out"
    outcome = run_experiment(spec, out, workers=1, progress=False)
    assert outcome.ran == 4
    assert len(outcome.failures) == 2
    errors = sorted((out / "errors").iterdir())
    assert len(errors) == 2
    info = json.loads(errors[0].read_text())
    assert info["error"] == "ValueError"
    assert "Traceback" in info["traceback"]
    exp = read_experiment(out)
    assert len(exp.failures) == 2
    assert set(exp.results["deeprm"].policies) == {"sjf", "tetris"}
    runs = pl.read_csv(out / "runs.csv")
    assert sorted(runs["status"].to_list()).count("failed") == 2


def test_parallel_workers_give_the_same_results_as_serial(done: Path, tmp_path: Path) -> None:
    spec = load_spec(done / "spec.toml")
    outcome = run_experiment(spec, tmp_path / "par", workers=2, progress=False)
    assert outcome.ran == 6
    for task in plan(spec, done):
        a = Results.read_parquet(task.out_path).table
        b = Results.read_parquet(tmp_path / "par" / "runs" / Path(task.out_path).name).table
        assert a.equals(b)


def test_trace_workload_from_a_jobset_file(tmp_path: Path) -> None:
    js = DeepRMGenerator().generate(0.9, n_jobsets=3, seed=2)
    jobs = JobSet(js.jobs.drop("load"), js.meta)
    jobs.write_parquet(tmp_path / "trace.parquet")
    text = SPEC.replace(
        'generator = "deeprm"\nloads = [0.5, 1.3]\njobsets = 5',
        'loader = "jobset"\npath = "trace.parquet"',
    )
    out = tmp_path / "out"
    outcome = run_experiment(load_spec(spec_at(tmp_path, text)), out, workers=1, progress=False)
    assert outcome.ran == 3
    assert (out / "runs" / "deeprm__all__sjf.parquet").is_file()
    res = read_experiment(out).results["deeprm"]
    assert res.table.get_column("load").null_count() == res.table.height


def test_learned_policy_statistics_of_one_load_runs_are_merged() -> None:
    def part(load: float, steps: int, lengths: dict[int, int]) -> Results:
        stats = {
            "time_steps": steps,
            "withholding_steps": 1,
            "withheld_lengths": lengths,
            "forced_jobs": 0,
        }
        return Results(pl.DataFrame(), {"run": {"load": load}, "agent_stats": {"rl": stats}})

    merged = merge_agent_stats([part(0.5, 10, {1: 2}), part(1.3, 30, {1: 1, 12: 4})])["rl"]
    assert merged["time_steps"] == 40
    assert merged["withholding_steps"] == 2
    assert merged["withheld_lengths"] == {"1": 3, "12": 4}
    assert merged["by_load"]["1.3"]["withheld_lengths"] == {"1": 1, "12": 4}
    assert merged["by_load"]["0.5"]["time_steps"] == 10
