"""SIGINT/SIGTERM to ``schedlab experiment run``: prompt stop, complete run files only, a one-line
message, a non-zero exit, and a clean resume (a real subprocess, as a scheduler would send)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from schedlab.registry import policies
from schedlab.results import Results

HEURISTICS = policies.names(tag="heuristic")
SPEC = f"""
policies = {json.dumps(HEURISTICS)}
[experiment]
name = "interrupted"
reference = "sjf"
[[workloads]]
name = "w"
generator = "deeprm"
loads = [0.5, 0.9, 1.3, 1.7]
jobsets = 300
"""
N_RUNS = len(HEURISTICS) * 4  # policies × loads
PROMPT_S = 4.0
"""Seconds allowed from the signal to the exit (the target is ~1 s; the machine is shared)."""


def schedlab(*args: str) -> list[str]:
    return [sys.executable, "-c", "from schedlab.cli import main; main()", *args]


def wait_for_a_run(out: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not list((out / "runs").glob("*.parquet")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no run finished in time"
        time.sleep(0.05)


@pytest.mark.parametrize(("sig", "workers"), [(signal.SIGINT, "2"), (signal.SIGTERM, "1")])
def test_a_signal_stops_promptly_and_the_rerun_resumes(
    tmp_path: Path, sig: signal.Signals, workers: str
) -> None:
    spec, out = tmp_path / "spec.toml", tmp_path / "out"
    spec.write_text(SPEC)
    cmd = schedlab("experiment", "run", str(spec), "-o", str(out), "--workers", workers)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_a_run(out, proc)
    t0 = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 128 + sig.value, err
    assert elapsed < PROMPT_S, elapsed
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("Error:")]
    assert f"interrupted by {sig.name} after " in line
    assert "run the same command again to resume" in line
    assert not list((out / "errors").glob("*")) if (out / "errors").exists() else True
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    done = sorted((out / "runs").glob("*.parquet"))
    assert 1 <= len(done) < N_RUNS
    for path in done:  # only complete run files
        assert Results.read_parquet(path).meta["run"]["complete"] is True
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    summary = f"{N_RUNS} runs: {N_RUNS - len(done)} run now, {len(done)} already done, 0 failed"
    assert summary in again.stdout
    runs = pl.read_csv(out / "runs.csv")
    assert set(runs["status"]) == {"done"}
    assert json.loads((out / "spec.json").read_text())["name"] == "interrupted"


def test_ctrl_c_in_a_terminal_reaches_the_workers_too(tmp_path: Path) -> None:
    """Ctrl-C signals the whole process group: workers ignore it, the parent stops them."""
    spec, out = tmp_path / "spec.toml", tmp_path / "out"
    spec.write_text(SPEC.replace("jobsets = 300", "jobsets = 1500"))  # still running at Ctrl-C
    cmd = schedlab("experiment", "run", str(spec), "-o", str(out), "--workers", "2")
    env = {**os.environ, "SCHEDLAB_WORKER_START_S": "0"}  # start the worker after two runs
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)  # fmt: skip
    wait_for_a_run(out, proc)
    deadline = time.monotonic() + 60
    while not children(proc.pid):  # the worker process exists
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not (out / "errors").exists() or not list((out / "errors").iterdir())
    assert not children(proc.pid)


def children(pid: int) -> list[int]:
    """Process ids of the live children of ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
