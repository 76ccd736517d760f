"""References that end cleanly and messages that say where (issue 36): a callable of the wrong
signature or one that raises is one line naming it; a policy, generator or loader that exits
the process is a failure (exit status 1, one line naming the function), also as one failed run
of an experiment; a garbage ``spec.json``, a null ``dag`` without ``parents``, fractional parent
ids, a NaN knob and a repeated queue discipline each name their file, column or parameter."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from schedlab import io
from schedlab.cli import main
from schedlab.errors import ParameterError
from schedlab.exits import ExitCalledError, foreign_exit, guarded
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.policies.heuristics import WFP3, TetrisStar
from schedlab.registry import parse_policy
from schedlab.simulator.run import simulate
from tests.cli_helpers import run_fail, run_ok
from tests.spec_helpers import spec_toml

MODULE = '''
import sys

def act(obs, mask):
    sys.exit(0)

def one(obs):
    return 0

def raises(obs, mask):
    return len(3)

def generate(*args, **kwargs):
    sys.exit(0)

class Exiting:
    """A policy that exits when made."""

    def __init__(self, **kwargs):
        raise SystemExit(3)
'''


@pytest.fixture
def mods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module ``hostile_refs_<n>`` of functions that exit, raise or take the wrong arguments."""
    name = f"hostile_refs_{tmp_path.name}".replace("-", "_")
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def error_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, out
    return lines[0]


# -- references ------------------------------------------------------------------------------


def test_a_callable_of_the_wrong_signature_is_named(small_jobs: Path, mods: str) -> None:
    for ref, sig in (("os:system", "(command)"), (f"{mods}:one", "(obs)")):
        out = run_fail(
            "simulate", str(small_jobs), "--policy", f"callable:{ref}", "-o", "x.parquet"
        )
        assert f"'{ref}' cannot be called as fn(obs, mask) -> action" in error_line(out)
        assert sig in error_line(out)


def test_what_a_callable_raises_is_one_line_naming_it(small_jobs: Path, mods: str) -> None:
    out = run_fail(
        "simulate", str(small_jobs), "--policy", f"callable:{mods}:raises", "-o", "x.parquet"
    )
    assert f"'{mods}:raises' raised TypeError at " in error_line(out)
    assert "object of type 'int' has no len()" in error_line(out)


@pytest.mark.parametrize(
    ("args", "function"),
    [
        (["simulate", "JOBS", "--policy", "callable:MOD:act"], "act"),
        (["simulate", "JOBS", "--policy", "MOD:Exiting"], "Exiting.__init__"),
        (["generate", "MOD:generate", "--load", "0.5"], "generate"),
        (["load", "MOD:generate", "JOBS"], "generate"),
    ],
)
def test_an_exit_inside_is_a_failure_naming_it(
    args: list[str], function: str, small_jobs: Path, mods: str, tmp_path: Path
) -> None:
    args = [a.replace("JOBS", str(small_jobs)).replace("MOD", mods) for a in args]
    result = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "out.parquet")])
    assert result.exit_code == 1
    line = error_line(result.output)
    assert f"{mods}:{function} (" in line
    assert "called sys.exit(" in line
    assert "counted as a failure" in line
    assert not (tmp_path / "out.parquet").exists()


def test_an_exit_in_a_run_is_a_failed_run(mods: str, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        spec_toml(
            f'"sjf", "callable:{mods}:act"', name="x", reference="sjf", loads="[0.7]", jobsets=2
        )
    )
    result = CliRunner().invoke(main, ["experiment", "run", str(spec), "-o", str(tmp_path / "e")])
    assert result.exit_code == 1
    assert "1 runs failed" in result.output
    assert f"ExitCalledError: {mods}:act (" in result.output
    assert len(list((tmp_path / "e" / "runs").glob("*.parquet"))) == 1  # sjf's run is kept


def test_schedlabs_own_exits_pass_through() -> None:
    def ours() -> None:
        raise SystemExit(143)  # raised here: a test module is not schedlab's

    with pytest.raises(ExitCalledError, match=r"test_hostile_refs:.*ours .*sys.exit\(143\)"):
        guarded(ours)
    from schedlab import interrupts

    with interrupts.working(), pytest.raises(SystemExit) as info:  # within a unit of work
        interrupts._exit(15, None)
    assert foreign_exit(info.value) is None  # SIGTERM in a worker: schedlab's own exit


# -- messages that say where -----------------------------------------------------------------


def test_a_garbage_spec_json_names_the_file(small_jobs: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_toml('"sjf", "fcfs"', name="x", reference="sjf", loads="[0.7]", jobsets=2))
    run_ok("experiment", "run", str(spec), "-o", str(tmp_path / "e"))
    for garbage in ("garbage{", "[1, 2]", json.dumps({"name": "x"})):
        (tmp_path / "e" / "spec.json").write_text(garbage)
        out = run_fail("report", str(tmp_path / "e"), "-o", str(tmp_path / "r"))
        assert f"{tmp_path / 'e' / 'spec.json'}: " in error_line(out)


def _jobs(**extra: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "jobset": [0, 0, 0],
            "job_id": [1, 2, 3],
            "arrival": [0, 1, 2],
            "duration": [3, 3, 3],
            "cpu": [1.0, 2.0, 3.0],
        }
    ).with_columns(**extra)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            pl.Series("dag", [1, None, 3], dtype=pl.Int64),
            "column 'dag' has a missing value at row 1",
        ),
        (
            pl.Series("parents", [[], [1.5], [1.0]], dtype=pl.List(pl.Float64)),
            r"column 'parents' value \[1.5\] at row 1 \(jobset 0, job_id 2\) is not a valid",
        ),
        (
            pl.Series("parents", [[], [float("nan")], [1.0]], dtype=pl.List(pl.Float64)),
            r"column 'parents' value \[nan\] at row 1",
        ),
    ],
)
def test_dag_columns_name_the_file(column: pl.Series, message: str, tmp_path: Path) -> None:
    path = tmp_path / "dags.parquet"
    meta = JobSetMeta(resources=("cpu",), capacity=(10.0,))
    io.write_parquet(_jobs(**{column.name: column}), path, meta.to_json())
    out = run_fail("simulate", str(path), "--policy", "fcfs", "-o", str(tmp_path / "r.parquet"))
    assert f"{path}: " in error_line(out)
    assert re.search(message, error_line(out))
    whole = _jobs(parents=pl.Series([[], [1.0], [1.0, 2.0]], dtype=pl.List(pl.Float64)))
    assert JobSet.create(whole, meta).jobs.get_column("parents").to_list() == [[], [1], [1, 2]]


@pytest.mark.parametrize("queue", ["greedy", "easy", "conservative"])
def test_a_nan_knob_names_the_parameter(small_jobs: Path, queue: str) -> None:
    js = JobSet.read_parquet(small_jobs)
    for policy in (TetrisStar(knob=float("nan"), queue=queue), WFP3(queue=queue)):
        if isinstance(policy, WFP3):
            policy.knob = float("inf")
        with pytest.raises(ParameterError, match=r"policy '.*': parameter 'knob' is (nan|inf)"):
            simulate(js, [policy])
    slowdown = simulate(js, [TetrisStar(knob=0.3, queue=queue)]).table["slowdown"].to_numpy()
    assert np.isfinite(slowdown).all()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fcfs+easy+easy+easy", "queue discipline 'easy' is repeated; name one"),
        ("fcfs+easy:queue=easy", "queue discipline 'easy' is repeated; name one"),
        ("fcfs+easy+conservative", "two queue disciplines, 'easy' and 'conservative'; name one"),
        ("sjf+bestfit+bestfit", "placement rule 'bestfit' is repeated; name one"),
    ],
)
def test_a_repeated_discipline_is_called_a_repeat(
    spec: str, message: str, small_jobs: Path
) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_policy(spec)
    out = run_fail("simulate", str(small_jobs), "--policy", spec, "-o", "x.parquet")
    assert message in error_line(out)
