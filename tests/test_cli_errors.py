"""Every user mistake is one line (what was expected, what was given, the option's CLI name,
"did you mean" where close); implausible values warn in one line; nothing is overwritten."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_helpers import run_fail, run_ok


@pytest.fixture(scope="module")
def jobs(small_jobs: Path) -> Path:
    return small_jobs


@pytest.fixture
def swf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.swf"
    path.write_text("; MaxProcs: 4\n1 0 0 10 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    return path


def one_error_line(out: str) -> str:
    """The ``Error:`` line of a failed command (exactly one)."""
    lines = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-p", "variant=papr"], r"-p: parameter 'variant' of generator 'deeprm' expects one of "
         r"'code', 'paper', got 'papr'; did you mean 'paper'?"),
        (["-p", "arrivals=poison"], r"got 'poison'; did you mean 'poisson'?"),
        (["-p", "windw=5"], "generator 'deeprm' has no parameter 'windw'; did you mean 'window'?"),
        (["-p", "short_prob=2"], "'short_prob' of generator 'deeprm' must be >= 0 and <= 1, got 2"),
        (["-p", "window=ten"], "'window' of generator 'deeprm' expects an integer, got 'ten'"),
        (["-p", "variant"], "Invalid value for '-p' / '--param': expected KEY=VALUE, got 'var"),
        (["--jobsets", "0"], r"Invalid value for '--jobsets': 0 is not in the range x>=1"),
        (["--load", "-1"], r"--load -1: an offered load must be a number > 0"),
    ],
)  # fmt: skip
def test_generate_mistakes(tmp_path: Path, args: list[str], expected: str) -> None:
    base = ["generate", "deeprm", "--jobsets", "2", "-o", str(tmp_path / "j.parquet")]
    if "--load" not in args:
        base += ["--load", "0.5"]
    assert expected in one_error_line(run_fail(*base, *args))
    assert not (tmp_path / "j.parquet").exists()


def test_every_poisson_parameter_is_checked(tmp_path: Path) -> None:
    out = run_fail("generate", "poisson", "--load", "0.5", "-p", "arrivals=poisson", "-o",
                   str(tmp_path / "j.parquet"))  # fmt: skip
    assert "generator 'poisson' has no parameter 'arrivals'" in one_error_line(out)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-p", "granularity=job"], "-p: loader 'swf' has no parameter 'granularity' (its "
         "parameters: max_procs, procs, memory, max_memory, statuses)"),
        (["-p", "memory=usd"], "'memory' of loader 'swf' expects one of 'auto', 'used', "
         "'requested', 'none', got 'usd'; did you mean 'used'?"),
        (["--jobset-size", "0"], "Invalid value for '--jobset-size': 0 is not in the range x>=1"),
        (["--time-step", "0"], "Invalid value for '--time-step': 0.0 is not in the range x>0"),
        (["--jobset-size", "2", "--jobset-window", "60"],
         "give --jobset-window or --jobset-size, not both"),
    ],
)  # fmt: skip
def test_load_mistakes(swf: Path, tmp_path: Path, args: list[str], expected: str) -> None:
    out = run_fail("load", "swf", str(swf), "--no-cache", *args, "-o", str(tmp_path / "o.pq"))
    assert expected in one_error_line(out)


def test_a_parquet_file_given_to_a_trace_loader(jobs: Path, tmp_path: Path) -> None:
    out = run_fail("load", "swf", str(jobs), "--no-cache", "-o", str(tmp_path / "o.parquet"))
    assert str(jobs) in one_error_line(out)


def test_policy_mistakes(jobs: Path, tmp_path: Path) -> None:
    res = str(tmp_path / "r.parquet")
    cases = {
        ("--policy", "sjff"): "unknown policy 'sjff'; did you mean 'sjf'",
        ("--policy", "tetris:knob=x"): "--policy tetris:knob=x: parameter 'knob' of policy "
        "'tetris' expects a number, got 'x'",
        ("--policy", "random:sed=1"): "'random' has no parameter 'sed'; did you mean 'seed'?",
        ("--policy", "sjf", "--policy", "sjf"): "--policy sjf is given twice",
        ("--policy", "tetris", "--policy", "tetris:knob=0.5"): "--policy tetris:knob=0.5 is "
        "given twice (same policy or name as --policy tetris)",
    }  # fmt: skip
    for args, expected in cases.items():
        assert expected in one_error_line(run_fail("simulate", str(jobs), *args, "-o", res)), args
    assert not Path(res).exists()


def test_implausible_values_warn_in_one_line(jobs: Path, tmp_path: Path) -> None:
    out = run_ok("generate", "deeprm", "--load", "70", "--jobsets", "1", "-o",
                 str(tmp_path / "j.parquet"))  # fmt: skip
    (line,) = [x for x in out.splitlines() if x.startswith("warning:")]
    assert "--load 70: offered load 70 is 7000% of capacity" in line
    assert "did you mean 70% = 0.7?" in line
    out = run_ok("simulate", str(jobs), "--policy", "tetris:knob=7", "-o", str(tmp_path / "r.pq"))
    (line,) = [x for x in out.splitlines() if x.startswith("warning:")]
    assert "'knob' of policy 'tetris' is usually >= 0 and <= 1, got 7" in line
    assert ".py" not in out  # no source file and code line


def test_a_warning_from_deep_inside_prints_as_one_line(
    jobs: Path, tmp_path: Path, warn_in_simulate: Callable[[str], None]
) -> None:
    warn_in_simulate("policy 'x': 3 jobs were placed\n by the fallback")
    out = run_ok("simulate", str(jobs), "--policy", "sjf", "-o", str(tmp_path / "r.parquet"))
    assert "warning: policy 'x': 3 jobs were placed by the fallback\n" in out
    assert "RuntimeWarning" not in out
    assert ".py:" not in out


def test_outputs_that_cannot_be_written_fail_before_any_work(jobs: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", str(blocked / "r.parquet"))
    expected = (
        f"Invalid value for '-o' / '--output': {blocked / 'r.parquet'}: cannot write there "
        f"({blocked} is a file, not a directory)"
    )
    assert expected in one_error_line(out)
    assert "jobs in" not in out  # nothing was simulated
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", str(tmp_path))
    assert "is a directory; expected a file" in one_error_line(out)
    out = run_fail("experiment", "run", str(jobs), "-o", str(blocked))
    assert f"Directory {str(blocked)!r} is a file" in one_error_line(out)


def test_unknown_policy_in_an_experiment_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'policies = ["sjf", "tetriz"]\n[experiment]\nname = "x"\nreference = "sjf"\n'
        '[[workloads]]\nname = "w"\ngenerator = "deeprm"\nloads = [0.5]\njobsets = 2\n'
    )
    out = run_fail("experiment", "run", str(spec), "-o", str(tmp_path / "x"))
    assert "policies[1].spec: unknown policy 'tetriz'; did you mean 'tetris'?" in one_error_line(
        out
    )


def test_train_resume_without_a_run_fails_clearly(tmp_path: Path) -> None:
    out = run_fail("train", "deeprm", "--resume", "-o", str(tmp_path / "empty"))
    assert "--resume: " in one_error_line(out)
    assert "holds no training run" in out
    assert not (tmp_path / "empty" / "config.json").exists()


def test_train_options_are_checked(tmp_path: Path) -> None:
    out = run_fail("train", "deeprm", "--objective", "slowdwn", "-o", str(tmp_path / "r"))
    assert "Invalid value for '--objective': 'slowdwn' is not one of" in one_error_line(out)
    out = run_fail("train", "deeprm", "--load", "0", "-o", str(tmp_path / "r"))
    assert "--load 0: an offered load must be a number > 0" in one_error_line(out)


def test_train_resume_without_a_checkpoint_fails_clearly(tmp_path: Path) -> None:
    import dataclasses
    import json

    from schedlab.registry import trainers

    run = tmp_path / "run"
    run.mkdir()
    config = dataclasses.asdict(trainers.load("deeprm").config())
    (run / "config.json").write_text(json.dumps({"train_config": config}))
    out = run_fail("train", "deeprm", "--resume", "-o", str(run))
    assert "holds no training state to continue (no last.pt)" in one_error_line(out)
    assert sorted(p.name for p in run.iterdir()) == ["config.json"]  # nothing started


def test_load_keeps_the_traces_own_cluster_unless_told(tmp_path: Path) -> None:
    from schedlab.jobset import JobSet
    from schedlab.traces import bundled

    own, two = tmp_path / "own.parquet", tmp_path / "two.parquet"
    out = run_ok("load", "alibaba2018", str(bundled("alibaba2018")), "--no-cache", "-o", str(own))
    assert "on 4,000 machines" in out
    assert "(the trace's own cluster)" in out
    run_ok("load", "alibaba2018", str(bundled("alibaba2018")), "--no-cache", "--machines", "2",
           "-o", str(two))  # fmt: skip
    assert JobSet.read_parquet(own).meta.machines == 4000
    assert JobSet.read_parquet(two).meta.machines == 2
