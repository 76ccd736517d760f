"""Without the ``learned`` extra (``pip install .``: no torch), trace replay with backfilling,
reports and statistics work, and asking for a learned policy or trainer is one line naming the
extra to install.

schedlab runs in a subprocess where torch, Stable-Baselines3 and sb3-contrib cannot be imported:
a ``sitecustomize`` on ``PYTHONPATH`` (inherited by the processes schedlab starts) puts a finder
first on ``sys.meta_path`` that refuses them as if absent, and logs every attempt, so the core
commands are checked to never even try.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_ok
from tests.spec_helpers import spec_toml, write_spec

BLOCKER = '''
import os, sys

class _Absent:
    """Refuses the optional packages of the learned and rl extras, as if not installed; logs
    each import of one (not the probes of importlib.util.find_spec, e.g. polars' own)."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"torch", "stable_baselines3", "sb3_contrib"}:
            caller = sys._getframe(2).f_code
            if not (caller.co_name == "find_spec" and "util" in caller.co_filename):
                with open(os.environ["SCHEDLAB_BLOCKED_LOG"], "a") as log:
                    log.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Absent())
'''
EXTRA_HINT = "pip install '.[learned]'"


@pytest.fixture
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process without torch (its blocked imports logged)."""
    folder = tmp_path_factory.mktemp("no-torch")
    (folder / "sitecustomize.py").write_text(BLOCKER)
    log = folder / "blocked.log"
    log.touch()
    path = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "SCHEDLAB_BLOCKED_LOG": str(log)}


def blocked(env: dict[str, str]) -> list[str]:
    """The imports of torch & co. tried so far (probes of their presence are not imports)."""
    return Path(env["SCHEDLAB_BLOCKED_LOG"]).read_text().split()


def schedlab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``schedlab ARGS`` in a process of ``env``."""
    code = "from schedlab.cli import main; main(prog_name='schedlab')"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def test_the_blocker_hides_torch(env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert "ModuleNotFoundError: No module named 'torch'" in proc.stderr
    assert blocked(env) == ["torch"]


def test_replay_with_backfilling_and_its_report_need_no_torch(
    env: dict[str, str], small_jobs: Path, tmp_path: Path
) -> None:
    results, out = tmp_path / "r.parquet", tmp_path / "report"
    proc = schedlab(env, "simulate", str(small_jobs), "--policy", "fcfs+easy", "-o", str(results))
    assert proc.returncode == 0, proc.stderr
    proc = schedlab(env, "report", str(results), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.html").is_file()
    assert blocked(env) == []  # not even tried


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["simulate", "{jobs}", "--policy", "deeprm:deeprm-0.7", "-o", "{tmp}/r.parquet"],
         f"Error: policy 'deeprm' needs torch, which is not installed: install schedlab's "
         f"'learned' extra from its source tree: {EXTRA_HINT} (make venv installs every extra)"),
        (["train", "deeprm", "-o", "{tmp}/run"], f"Error: trainer 'deeprm' needs torch, which is "
         f"not installed: install schedlab's 'learned' extra from its source tree: {EXTRA_HINT}"),
        (["simulate", "{jobs}", "--policy", "sb3:model.zip", "-o", "{tmp}/r.parquet"],
         "Error: policy 'sb3' needs torch and Stable-Baselines3 and sb3-contrib, which are not "
         "installed: install schedlab's 'rl' extra from its source tree: pip install '.[rl]'"),
    ],
)  # fmt: skip
def test_a_learned_policy_or_trainer_is_one_line_naming_the_extra(
    env: dict[str, str], small_jobs: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    words = [a.format(jobs=small_jobs, tmp=tmp_path) for a in args]
    proc = schedlab(env, *words)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr  # one line
    assert proc.stderr.startswith(said), proc.stderr


def test_listing_says_why_learned_parameters_are_not_shown(env: dict[str, str]) -> None:
    proc = schedlab(env, "list", "policies", "--params")
    assert proc.returncode == 0, proc.stderr
    assert "    (parameters not shown: policy 'deeprm' needs torch" in proc.stdout
    assert "    knob = " in proc.stdout  # the heuristics' parameters are


def test_an_experiment_with_a_learned_policy_is_reported_without_torch(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Run where torch is (here), report where it is not: the report needs no torch."""
    learned = '"sjf", { spec = "deeprm:checkpoint=deeprm-0.7", name = "deeprm-0.7" }'
    spec = write_spec(tmp_path, spec_toml(learned, name="light", reference="sjf",
                                          loads="[0.5]", jobsets=3))  # fmt: skip
    exp = tmp_path / "exp"
    run_ok("experiment", "run", str(spec), "-o", str(exp), "--workers", "1")
    proc = schedlab(env, "report", str(exp), "-o", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    assert "deeprm-0.7" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert blocked(env) == []
