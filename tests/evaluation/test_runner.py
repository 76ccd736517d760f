"""The experiment runner: same jobsets for every policy, atomic runs, resume, failures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import OutputError
from schedlab.evaluation.collect import merge_agent_stats, read_experiment
from schedlab.evaluation.runner import run_experiment
from schedlab.evaluation.runs import plan
from schedlab.evaluation.spec import load_spec
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.results import Results
from tests.spec_helpers import spec_toml, write_spec

SPEC = spec_toml('"sjf", "fcfs", "tetris"', name="tiny", seed=3, reference="tetris",
                 loads="[0.5, 1.3]", jobsets=5, workload_seed=11)  # fmt: skip


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("exp")
    outcome = run_experiment(
        load_spec(write_spec(tmp, SPEC)), tmp / "out", workers=1, progress=False
    )
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
    spec = load_spec(write_spec(tmp_path, SPEC))
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


def test_a_changed_spec_is_refused_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_experiment(load_spec(write_spec(tmp_path, SPEC)), out, workers=1, progress=False)
    results = (out / "results.parquet").read_bytes()
    text = SPEC.replace("jobsets = 5", "jobsets = 6").replace('"fcfs", ', "")
    bigger = load_spec(write_spec(tmp_path, text))
    change = r"\(workloads\['deeprm'\]\.jobsets: 5 -> 6; policies: 'fcfs' removed\)"
    with pytest.raises(OutputError, match=r"holds experiment 'tiny' of a different spec " + change):
        run_experiment(bigger, out, workers=1, progress=False)
    assert (out / "results.parquet").read_bytes() == results  # nothing touched
    # presentation-only changes are no different spec
    titled = load_spec(write_spec(tmp_path, SPEC + '[report]\ntitle = "T"\n'))
    assert run_experiment(titled, out, workers=1, progress=False).ran == 0
    forced = run_experiment(bigger, out, workers=1, progress=False, force=True)
    assert (forced.ran, forced.skipped) == (4, 0)
    assert forced.replaced is not None
    moved = sorted(p.name for p in (forced.replaced / "runs").iterdir())
    assert len(moved) == 6
    assert (forced.replaced / "spec.json").is_file()
    assert (forced.replaced / "jobsets" / "deeprm.parquet").is_file()
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(
        f"deeprm__load{x}__{p}.parquet" for x in (50, 130) for p in ("sjf", "tetris")
    )
    assert Results.read_parquet(out / "results.parquet").table.height > 0
    again = run_experiment(bigger, out, workers=1, progress=False)  # same spec: resumes
    assert (again.ran, again.skipped) == (0, 4)


def test_forcing_keeps_the_runs_the_new_spec_reproduces(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_experiment(load_spec(write_spec(tmp_path, SPEC)), out, workers=1, progress=False)
    fewer = load_spec(write_spec(tmp_path, SPEC.replace('"fcfs", ', "")))
    forced = run_experiment(fewer, out, workers=1, progress=False, force=True)
    assert (forced.ran, forced.skipped) == (0, 4)
    assert forced.replaced is not None
    assert sorted(p.name for p in (forced.replaced / "runs").iterdir()) == [
        "deeprm__load130__fcfs.parquet",
        "deeprm__load50__fcfs.parquet",
    ]
    assert not (forced.replaced / "jobsets").exists()  # the same jobsets are kept


FAILING = '"sjf", "tetris", { spec = "deeprm:checkpoint=bad.pt", name = "bad" }'


def test_a_failing_run_is_recorded_and_the_others_finish(tmp_path: Path) -> None:
    (tmp_path / "bad.pt").write_text("not a checkpoint")
    text = SPEC.replace('"sjf", "fcfs", "tetris"', FAILING)
    spec = load_spec(write_spec(tmp_path, text))
    out = tmp_path / "out"
    outcome = run_experiment(spec, out, workers=1, progress=False)
    assert outcome.ran == 4
    assert len(outcome.failures) == 2
    errors = sorted((out / "errors").iterdir())
    assert len(errors) == 2
    info = json.loads(errors[0].read_text())
    assert info["error"] == "CheckpointError"
    assert "Traceback" in info["traceback"]
    exp = read_experiment(out)
    assert len(exp.failures) == 2
    assert set(exp.results["deeprm"].policies) == {"sjf", "tetris"}
    runs = pl.read_csv(out / "runs.csv")
    assert sorted(runs["status"].to_list()).count("failed") == 2


def test_parallel_workers_give_the_same_results_as_serial(
    done: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schedlab.evaluation import local_backend

    monkeypatch.setattr(local_backend, "WORKER_START_S", 0.0)  # start workers even for tiny runs
    spec = load_spec(done / "spec.toml")
    ex = local_backend.LocalBackend(1, here=True)
    outcome = run_experiment(spec, tmp_path / "par", backend=ex, progress=False)
    assert outcome.ran == 6
    assert ex.workers_started
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
    outcome = run_experiment(load_spec(write_spec(tmp_path, text)), out, workers=1, progress=False)
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


def test_run_warnings_are_one_line_each_in_the_outcome_and_the_run_file(
    tmp_path: Path, warn_in_simulate: Callable[[str], None]
) -> None:
    warn_in_simulate("policy 'x': 2 jobs were placed\n  by the fallback")
    text = SPEC.replace('"sjf", "fcfs", "tetris"', '"sjf"').replace('= "tetris"', '= "sjf"')
    spec = load_spec(write_spec(tmp_path, text))
    outcome = run_experiment(spec, tmp_path / "out", workers=1, progress=False)
    assert outcome.warnings == (
        "deeprm__load50__sjf: policy 'x': 2 jobs were placed by the fallback",
        "deeprm__load130__sjf: policy 'x': 2 jobs were placed by the fallback",
    )
    meta = Results.read_parquet(tmp_path / "out" / "runs" / "deeprm__load50__sjf.parquet").meta
    assert meta["run"]["warnings"] == ["policy 'x': 2 jobs were placed by the fallback"]


def test_the_backend_is_injected(tmp_path: Path) -> None:
    from schedlab.evaluation.backends import SerialBackend

    class Counting(SerialBackend):
        def __init__(self) -> None:
            super().__init__()
            self.submitted = 0
            self.closed = False

        def submit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.submitted += 1
            super().submit(*args, **kwargs)

        def close(self) -> None:
            self.closed = True

    ex = Counting()
    outcome = run_experiment(load_spec(write_spec(tmp_path, SPEC)), tmp_path / "o", backend=ex,
                             progress=False)  # fmt: skip
    assert (outcome.ran, ex.submitted, ex.closed) == (6, 6, True)


def test_a_replaced_checkpoint_makes_its_runs_stale(tmp_path: Path) -> None:
    """Runs of a learned policy are tied to the checkpoint's bytes, not to its name or path."""
    from schedlab.policies.shipped import shipped

    ckpt = tmp_path / "agent.pt"
    ckpt.write_bytes(shipped("deeprm-0.7").read_bytes())
    text = SPEC.replace(
        '"sjf", "fcfs", "tetris"', '"tetris", { spec = "deeprm:agent.pt", name = "rl" }'
    )
    spec = load_spec(write_spec(tmp_path, text))
    out = tmp_path / "out"
    assert run_experiment(spec, out, workers=1, progress=False).ran == 4
    assert run_experiment(spec, out, workers=1, progress=False).ran == 0
    ckpt.write_bytes(shipped("deeprm-1.3").read_bytes())  # same name, other weights
    again = run_experiment(spec, out, workers=1, progress=False)
    assert again.ran == 2  # the two loads of "rl"; tetris's runs are kept
    assert again.skipped == 2
