"""Benchmark: how long a report takes (issue 34).

1. **KTH replay report**: ``schedlab report`` of ``experiments/kth_replay.toml`` (9 policies,
   the whole log as one jobset and 50 windows of 500 jobs), as a user runs it: a fresh process,
   imports included. Target: <= 30 s on 2 cores. Before issue 34: 163 s of CPU as the issue
   measured it; 82 s of CPU (240 s wall, a shared machine at load 10) by this script on the code
   before issue 34.
2. **write_report**: :func:`schedlab.write_report` of 2 policies (SJF, Tetris*) x 2 offered
   loads (70%, 130%) x 100 jobsets of the DeepRM generator, the first call in a fresh process
   (the imports it triggers included: ``import schedlab`` is lazy). Target: <= 5 s. Before
   issue 34: 37 s as the issue measured it; 4.5 s of CPU (12.3 s wall at load 10) by this
   script on the code before issue 34.

Each is timed in a subprocess; the figures are wall seconds and CPU seconds (user + system of
that process), since the machine may be shared. The experiment and the simulation are not
timed (``--runs DIR`` reuses a KTH experiment directory already run).

Run with ``make bench`` (or ``python benchmarks/bench_report.py [--runs DIR] [--skip-kth]``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEDLAB = Path(sys.executable).with_name("schedlab")
TARGET_KTH_S, BEFORE_KTH_S, BEFORE_KTH_CPU_S = 30.0, 163.0, 82.3
TARGET_WRITE_S, BEFORE_WRITE_S, BEFORE_WRITE_CPU_S = 5.0, 37.0, 4.5

WRITE_SCRIPT = """
import sys, time, resource
import schedlab
from schedlab.jobset import JobSet
from schedlab.results import Results
res = Results.read_parquet(sys.argv[1])
js = JobSet.read_parquet(sys.argv[2])
t0, c0 = time.perf_counter(), time.process_time()
schedlab.write_report(res, sys.argv[3], jobs=js)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``cmd`` run to completion, and its standard output."""
    c0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - t0, _children_cpu() - c0, done.stdout


def kth(runs: Path | None, tmp: Path) -> None:
    """Time ``schedlab report`` of the KTH replay experiment."""
    if runs is None:
        runs = tmp / "kth_runs"
        print("running experiments/kth_replay.toml (not timed) ...", flush=True)
        subprocess.run(
            [str(SCHEDLAB), "experiment", "run", "experiments/kth_replay.toml", "-o", str(runs)],
            check=True,
            cwd=ROOT,
            capture_output=True,
        )
    wall, cpu, _ = timed([str(SCHEDLAB), "report", str(runs), "-o", str(tmp / "kth_report")])
    print(
        f"KTH replay report (fresh process): {wall:.1f} s wall, {cpu:.1f} s CPU; "
        f"target <= {TARGET_KTH_S:g} s ({wall / TARGET_KTH_S:.2f}x of it); before issue 34: "
        f"{BEFORE_KTH_S:g} s CPU (the issue), {BEFORE_KTH_CPU_S:g} s CPU (this script): "
        f"{BEFORE_KTH_CPU_S / cpu:.1f}x less CPU now"
    )


def write_report(tmp: Path) -> None:
    """Time the first ``write_report`` of a fresh process on the DeepRM sweep."""
    import schedlab

    js = schedlab.generators.make("deeprm").generate_sweep([0.7, 1.3], n_jobsets=100, seed=1)
    res = schedlab.simulate(js, [schedlab.policies.make("sjf"), schedlab.policies.make("tetris")])
    res.write_parquet(tmp / "results.parquet")
    js.write_parquet(tmp / "jobs.parquet")
    args = [str(tmp / "results.parquet"), str(tmp / "jobs.parquet"), str(tmp / "deeprm_report")]
    _, _, out = timed([sys.executable, "-c", WRITE_SCRIPT, *args])
    wall, cpu = (float(x) for x in out.split())
    print(
        f"write_report, 2 policies x 2 loads x 100 jobsets (first call of a process): "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU; target <= {TARGET_WRITE_S:g} s "
        f"({wall / TARGET_WRITE_S:.2f}x of it); before issue 34: {BEFORE_WRITE_S:g} s (the "
        f"issue), {BEFORE_WRITE_CPU_S:g} s CPU (this script): "
        f"{BEFORE_WRITE_CPU_S / cpu:.1f}x less CPU now"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="a KTH replay experiment directory already run")
    parser.add_argument("--skip-kth", action="store_true", help="time write_report only")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        write_report(tmp)
        if not args.skip_kth:
            kth(args.runs, tmp)


if __name__ == "__main__":
    main()
