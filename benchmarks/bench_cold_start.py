"""Benchmark: a newcomer's first replay (issue 33), cold and warm.

For each queue discipline (and a static and a dynamic job order, whose greedy kernels differ):
``schedlab simulate KTH --slots all --policy P`` on the bundled KTH-SP2 log whole (28,475 jobs),
as a whole process, first with an empty compile cache (``NUMBA_CACHE_DIR`` a fresh directory:
numba compiles the kernel the policy needs) and then again with that cache (warm). Target: cold
<= 15 s wall on 2 cores; before issue 33 the first ``fcfs+easy`` took 113 s (a quiet machine)
and its warm run 3.9 s.

Run with ``make bench`` (or ``python benchmarks/bench_cold_start.py [--policy P ...]``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KTH = ROOT / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
POLICIES = (
    "fcfs",
    "wfp3",
    "fcfs+strict",
    "fcfs+easy",
    "sjf+easy",
    "fcfs+conservative",
    "wfp3+conservative",
)
TARGET, BEFORE = 15.0, {"fcfs+easy": (113.0, 3.9)}
SCHEDLAB = [str(Path(sys.executable).with_name("schedlab"))]


def timed(args: list[str], cache: Path) -> float:
    """Wall seconds of one ``schedlab`` process with ``cache`` as numba's cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    subprocess.run([*SCHEDLAB, *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", help="Policies to time (default: a set).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = Path(tmp) / "kth.parquet"
        subprocess.run(
            [*SCHEDLAB, "load", "swf", str(KTH), "-o", str(jobs)], check=True, capture_output=True
        )
        print(
            f"first simulation of the KTH-SP2 log whole, one process each ({os.cpu_count()} "
            f"CPUs); target cold <= {TARGET:.0f} s:"
        )
        for policy in args.policy or POLICIES:
            cache = Path(tmp) / f"cache-{policy}"
            out = Path(tmp) / "r.parquet"
            run = ["simulate", str(jobs), "--slots", "all", "--policy", policy, "-o", str(out)]
            cold, warm = timed(run, cache), timed(run, cache)
            verdict = "PASS" if cold <= TARGET else "FAIL"
            before = BEFORE.get(policy)
            was = f"; before: {before[0]:.0f} s cold, {before[1]:.1f} s warm" if before else ""
            print(
                f"  {policy:18s} cold {cold:5.1f} s ({cold / TARGET:4.2f}x target: {verdict}), "
                f"warm {warm:4.1f} s{was}"
            )


if __name__ == "__main__":
    main()
