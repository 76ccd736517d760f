"""Training sweeps: seeds and a grid, one run directory per run, a summary over seeds, the same
runs on the local backend and on Ray, failures recorded, resume after an interruption."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest

from schedlab.errors import Interrupted, OutputError, ParameterError
from schedlab.evaluation.sweep_runs import DONE, SweepRun, parse_grid, parse_seeds, plan_sweep
from schedlab.evaluation.train_sweep import run_sweep
from schedlab.policies.reinforce import TrainConfig
from tests.cli_helpers import options, run_fail, run_ok

TINY = {
    "n_jobsets": 3,
    "rollouts": 4,
    "iterations": 3,
    "eval_jobsets": 2,
    "eval_every": 2,
    "checkpoint_every": 1,
    "slots": 5,
    "horizon": 10,
    "backlog": 20,
    "load": 0.9,
}
TIMING = ("rollout_s", "update_s", "eval_s")
OWNER = "trainer 'deeprm'"


def base() -> dict[str, Any]:
    return dataclasses.asdict(TrainConfig(**TINY))  # type: ignore[arg-type]


def plan(seeds: list[int], grid: dict[str, list[Any]] | None = None) -> list[SweepRun]:
    return plan_sweep(TrainConfig, base(), seeds, grid or {}, owner=OWNER)


def sweep(runs: list[SweepRun], out: Path, **kwargs: Any) -> Any:
    return run_sweep("deeprm", runs, out, base=base(), progress=False, **kwargs)


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("0-4", [0, 1, 2, 3, 4]), ("3", [3]), ("0,3,7", [0, 3, 7]), ("1-3, 8", [1, 2, 3, 8])],
)
def test_seeds_are_ranges_and_lists(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("4-2", "A <= B"),
        ("a", "expected N, A-B"),
        ("0-2,1", r"seeds \[1\] are given twice"),
        ("", "expected N"),
    ],
)
def test_bad_seeds_say_what_is_expected(text: str, error: str) -> None:
    with pytest.raises(ParameterError, match=error):
        parse_seeds(text)


def test_the_grid_reads_values_and_refuses_seed_and_repeats() -> None:
    assert parse_grid(["lr=0.001,0.0003", "network=mlp"]) == {
        "lr": [0.001, 0.0003],
        "network": ["mlp"],
    }
    with pytest.raises(ParameterError, match="with --seeds"):
        parse_grid(["seed=1,2"])
    with pytest.raises(ParameterError, match="'lr' is given twice"):
        parse_grid(["lr=1", "lr=2"])
    with pytest.raises(ParameterError, match="expected FIELD=V1,V2"):
        parse_grid(["lr"])


def test_the_plan_is_the_grid_product_with_seeds_inside() -> None:
    runs = plan([0, 1], {"lr": [0.001, 0.01], "hidden": [20]})
    assert [r.name for r in runs] == [
        "lr0.001_hidden20_seed0",
        "lr0.001_hidden20_seed1",
        "lr0.01_hidden20_seed0",
        "lr0.01_hidden20_seed1",
    ]
    assert [(r.config.lr, r.config.seed) for r in runs] == [
        (0.001, 0),
        (0.001, 1),
        (0.01, 0),
        (0.01, 1),
    ]
    with pytest.raises(ParameterError, match="lrr"):
        plan([0], {"lrr": [0.1]})
    with pytest.raises(ParameterError, match="network"):
        plan([0], {"network": [3]})


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeds 0 and 1 of the tiny config trained serially by the local backend."""
    out = tmp_path_factory.mktemp("sweep") / "local"
    outcome = sweep(plan([0, 1]), out, workers=1)
    assert (outcome.ran, outcome.skipped, outcome.failures) == (2, 0, {})
    return out


def test_one_run_directory_per_seed_and_a_summary_over_seeds(local: Path) -> None:
    for name in ("seed0", "seed1"):
        run = local / name
        assert {"config.json", "curve.csv", "best.pt", "final.pt", DONE} <= {
            p.name for p in run.iterdir()
        }
        saved = json.loads((run / "config.json").read_text())["train_config"]
        assert saved["seed"] == int(name[-1])
    runs = pl.read_csv(local / "runs.csv")
    assert runs["status"].to_list() == ["done", "done"]
    for k, name in enumerate(("seed0", "seed1")):
        curve = pl.read_csv(local / name / "curve.csv").filter(pl.col("val_slowdown").is_not_null())
        assert runs["last"][k] == curve["val_slowdown"][-1]
        assert runs["final"][k] == curve["val_slowdown"].min()  # the best.pt policy's value
        done = json.loads((local / name / DONE).read_text())
        assert runs["final"][k] == pytest.approx(done["best_value"])
    summary = pl.read_csv(local / "summary.csv").row(0, named=True)
    assert summary["seeds"] == 2
    assert summary["final"] == pytest.approx(runs["final"].mean())
    # Student t over 2 seeds: mean +- t(0.975, 1) * s / sqrt(2)
    half = 12.706204736174707 * runs["final"].std() / 2**0.5
    assert summary["final_low"] == pytest.approx(summary["final"] - half)
    assert summary["final_high"] == pytest.approx(summary["final"] + half)
    assert summary["last"] == pytest.approx(runs["last"].mean())
    sweep_config = json.loads((local / "config.json").read_text())
    assert sweep_config["sweep"]["seeds"] == [0, 1]
    assert sweep_config["train_config"]["n_jobsets"] == 3


def test_a_sweep_directory_needs_resume_and_skips_complete_runs(local: Path) -> None:
    with pytest.raises(OutputError, match="already holds a training sweep; pass --resume"):
        sweep(plan([0, 1]), local)
    with pytest.raises(OutputError, match="holds another sweep"):
        sweep(plan([0, 1, 2]), local, resume=True)
    again = sweep(plan([0, 1]), local, resume=True)
    assert (again.ran, again.skipped) == (0, 2)


@pytest.mark.slow
def test_ray_trains_the_same_runs_and_brings_their_files_back(
    ray_instance: ModuleType, local: Path, tmp_path: Path
) -> None:
    outcome = sweep(plan([0, 1]), tmp_path / "ray", backend="ray")
    assert (outcome.ran, outcome.failures) == (2, {})
    for name in ("seed0", "seed1"):
        a = pl.read_csv(local / name / "curve.csv").drop(TIMING)
        b = pl.read_csv(tmp_path / "ray" / name / "curve.csv").drop(TIMING)
        assert a.equals(b), name
        assert (tmp_path / "ray" / name / "best.pt").is_file()
    assert ray_instance.is_initialized()


def test_a_failing_run_is_recorded_and_the_others_finish(tmp_path: Path) -> None:
    runs = plan([0], {"workload": ["deeprm", "no-such-generator"]})
    outcome = sweep(runs, tmp_path / "out", workers=1)
    assert outcome.ran == 1
    assert list(outcome.failures) == ["workloadno-such-generator_seed0"]
    assert "UnknownNameError" in outcome.failures["workloadno-such-generator_seed0"]
    info = json.loads(
        (tmp_path / "out" / "errors" / "workloadno-such-generator_seed0.json").read_text()
    )
    assert "Traceback" in info["traceback"]
    table = pl.read_csv(tmp_path / "out" / "runs.csv")
    assert table["status"].to_list() == ["done", "failed"]
    summary = pl.read_csv(tmp_path / "out" / "summary.csv")
    assert summary["seeds"].to_list() == [1, 0]


def test_an_interrupted_sweep_resumes_where_it_stopped(local: Path, tmp_path: Path) -> None:
    def stop(_run_dir: Path, run: SweepRun, _result: object) -> None:
        raise KeyboardInterrupt  # as if Ctrl-C came once the first run was complete

    out = tmp_path / "out"
    with pytest.raises(Interrupted, match=r"after 1 of 2 training runs \(1 now\).*with --resume"):
        sweep(plan([0, 1]), out, workers=1, on_done=stop)
    assert (out / "seed0" / DONE).is_file()  # complete: written before the callback
    resumed = sweep(plan([0, 1]), out, workers=1, resume=True)
    assert (resumed.ran, resumed.skipped) == (1, 1)
    for name in ("seed0", "seed1"):
        a = pl.read_csv(local / name / "curve.csv").drop(TIMING)
        assert a.equals(pl.read_csv(out / name / "curve.csv").drop(TIMING))


def tiny_options() -> list[str]:
    return options(
        jobsets=3, rollouts=4, iterations=2, eval_jobsets=2, slots=5, horizon=10, backlog=20
    )


def test_the_command_line_trains_a_sweep_with_its_report(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    text = run_ok(
        "train", "deeprm", *tiny_options(), "--seeds", "0-1", "--workers", "1", "-o", str(out)
    )
    assert "2 runs: 2 trained now, 0 already done, 0 failed" in text
    assert "deeprm: final" in text
    assert (out / "report.html").is_file()
    assert (out / "learning_curves.png").is_file()
    assert (out / "seed0" / "report.html").is_file()  # each run has its learning report
    text = run_ok("train", "deeprm", "-o", str(out), "--resume")
    assert "2 runs: 0 trained now, 2 already done" in text


def test_sweep_options_that_mean_nothing_are_refused(tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    text = run_fail("train", "deeprm", *tiny_options(), "--backend", "ray", "-o", out)
    assert "--backend, --address and --workers apply to sweeps" in text
    text = run_fail("train", "deeprm", *tiny_options(), "--seed", "3", "--seeds", "0-1", "-o", out)
    assert "either --seed (one run) or --seeds (a sweep)" in text
    text = run_fail("train", "deeprm", *tiny_options(), "--seeds", "2-1", "-o", out)
    assert "--seeds: expected N, A-B (A <= B)" in text


def test_without_ray_a_sweep_says_how_to_get_it_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    out = tmp_path / "o"
    text = run_fail(
        "train", "deeprm", *tiny_options(), "--seeds", "0-1", "--backend", "ray", "-o", str(out)
    )
    assert text.strip().splitlines()[-1] == (
        "Error: the ray backend needs Ray, which is not installed: install schedlab's 'ray' extra "
        "from its source tree: pip install '.[ray]' (make venv installs every extra)"
    )
    assert not (out / "config.json").exists()  # the same command runs once Ray is installed
