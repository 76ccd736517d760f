"""Long work with a sign of life (issue 36): a simulation expected to take long is announced
with its estimate (:mod:`schedlab.simulator.cost`) and runs one jobset at a time under a
progress bar, with the same results; an experiment announces its long runs before they start;
``check plugins`` names each plug-in as it imports it and fails one that loops at import."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab.simulator.cost as cost
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.registry import make_policy
from schedlab.results import Results
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.cost import estimate, queue_lengths
from tests.cli_helpers import run_ok
from tests.spec_helpers import spec_toml

SCHEDLAB = Path(sys.executable).with_name("schedlab")


def overloaded(n: int, load: float, *, jobsets: int = 1) -> JobSet:
    """``n`` jobs per jobset of 10 steps and half the machine each, at offered ``load``."""
    gap = 5.0 / load  # 10 steps x 0.5 of the capacity per job
    rows = {
        "jobset": np.repeat(np.arange(jobsets), n),
        "job_id": np.tile(np.arange(n), jobsets),
        "arrival": np.tile(np.floor(np.arange(n) * gap).astype(np.int64), jobsets),
        "duration": np.full(n * jobsets, 10),
        "estimate": np.full(n * jobsets, 20),
        "cpu": np.full(n * jobsets, 5.0),
    }
    return JobSet.create(pl.DataFrame(rows), JobSetMeta(resources=("cpu",), capacity=(10.0,)))


def test_the_fluid_queue_grows_only_past_full_load() -> None:
    arrival = np.arange(1000, dtype=np.float64)
    q, _ = queue_lengths(arrival, np.full(1000, 0.5))  # load 0.5: nothing waits
    assert q.max() == 0
    q, _ = queue_lengths(arrival, np.full(1000, 2.0))  # load 2: half the arrivals wait
    assert q[-1] == pytest.approx(499.5, rel=0.01)


def test_long_paths_are_told_apart_from_short_ones() -> None:
    js = overloaded(30_000, 2.8)
    config = ClusterConfig()
    slow = {
        p: estimate(js, make_policy(p), config) for p in ("wfp3+conservative", "fcfs+conservative")
    }
    assert all(c.long for c in slow.values())
    assert {c.path for c in slow.values()} == {"conservative"}
    assert slow["wfp3+conservative"].queue > 15_000
    assert "conservative backfilling" in slow["wfp3+conservative"].describe()
    for p in ("fcfs+easy", "fcfs", "sjf+strict"):
        assert not estimate(js, make_policy(p), config).long, p
    assert not estimate(overloaded(30_000, 0.5), make_policy("wfp3+conservative"), config).long


def test_a_long_simulation_is_announced_and_runs_per_jobset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    js = overloaded(300, 1.5, jobsets=3)
    js.write_parquet(tmp_path / "jobs.parquet")
    args = ["simulate", str(tmp_path / "jobs.parquet"), "--policy", "wfp3+conservative"]
    run_ok(*args, "-o", str(tmp_path / "whole.parquet"))
    monkeypatch.setattr(cost, "LONG_SECONDS", 0.0)
    out = run_ok(*args, "-o", str(tmp_path / "parts.parquet"))
    assert "note: wfp3+conservative: estimated " in out
    assert "conservative backfilling (a compression of the whole queue" in out
    whole, parts = (Results.read_parquet(tmp_path / f"{n}.parquet") for n in ("whole", "parts"))
    assert whole.table.equals(parts.table)
    assert whole.meta["killed_jobs"] == parts.meta["killed_jobs"]


def test_an_experiment_announces_its_long_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cost, "LONG_SECONDS", 0.0)
    spec = tmp_path / "spec.toml"
    policies = '"sjf", "fcfs+easy"'
    spec.write_text(spec_toml(policies, name="x", reference="sjf", loads="[0.9]", jobsets=2))
    out = run_ok("experiment", "run", str(spec), "-o", str(tmp_path / "e"), "--workers", "1")
    assert "note: deeprm__load90__fcfs-easy" in out
    assert "EASY backfilling" in out
    assert "note: deeprm__load90__sjf" not in out  # a static greedy order costs nothing


def test_check_plugins_names_a_plugin_that_loops_at_import(tmp_path: Path) -> None:
    dist = tmp_path / "loopy_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: loopy-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[schedlab.policies]\nloopy = loopy_mod:Loopy\n")
    (tmp_path / "loopy_mod.py").write_text("while True:\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    t0 = time.perf_counter()
    command = [str(SCHEDLAB), "check", "plugins", "--timeout", "2"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert time.perf_counter() - t0 < 60
    assert done.returncode == 1
    assert "importing policy plug-in 'loopy' (loopy_mod:Loopy) ..." in done.stderr
    assert "FAILED policy 'loopy'" in done.stderr
    assert "did not end within 2 s" in done.stderr
