"""Benchmark: queue disciplines (strict, EASY, conservative backfilling) replaying whole logs.

1. **KTH-SP2** (issue 25), the bundled log whole (28,475 jobs, 100 processors, requests as
   estimates): simulation time and jobs/s of each discipline next to greedy FCFS in the same
   run, and the ratio to greedy (target: EASY within 2x of greedy's simulation time).
2. **1M-job replay** (the :mod:`bench_replay` workload: 1,000 machines of 96 cores, offered load
   1.2, whole queue), ``fcfs+easy`` and ``fcfs+conservative`` end to end (read, simulate, write;
   targets: EASY < 10 s, conservative < 30 s). ``--jobs`` sets its size.

Run with ``make bench`` (or ``python benchmarks/bench_backfill.py [--jobs N]``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_replay import trace_like
from timing import best_of

from schedlab.jobset import JobSet
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate

KTH = Path(__file__).resolve().parents[1] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
WHOLE = ClusterConfig(slots=None)
SPECS = ("fcfs", "fcfs+strict", "fcfs+easy", "fcfs+conservative", "sjf+easy")
TARGETS = {"fcfs+easy": 10.0, "fcfs+conservative": 30.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    kth = read_swf(KTH).jobs
    for spec in SPECS:  # load or compile the kernels once
        schedule(
            kth.jobs.head(50).pipe(lambda j: JobSet.create(j, kth.meta)), make_policy(spec), WHOLE
        )
    print(f"KTH-SP2 whole ({len(kth):,} jobs, one machine of 100 processors), simulation only:")
    greedy = best_of(lambda: schedule(kth, make_policy("fcfs"), WHOLE), 5)
    for spec in SPECS:
        seconds = best_of(lambda s=spec: schedule(kth, make_policy(s), WHOLE), 3)
        verdict = ""
        if spec == "fcfs+easy":
            verdict = f" (target <= 2x: {'PASS' if seconds <= 2 * greedy else 'FAIL'})"
        print(
            f"  {spec:18s} {seconds:7.3f} s = {len(kth) / seconds:>10,.0f} jobs/s, "
            f"{seconds / greedy:5.2f}x greedy fcfs{verdict}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.parquet"  # read back as the timed replays are: the arrays
        trace_like(1000).write_parquet(warm)  # numba compiles for (read-only) are the same
        for spec in TARGETS:  # the replay's path too (results, metrics), compiled before timing
            simulate(JobSet.read_parquet(warm), [make_policy(spec)], WHOLE)
        for spec, target in TARGETS.items():
            n = args.jobs
            path = Path(tmp) / f"jobs{n}.parquet"
            if not path.exists():
                trace_like(n).write_parquet(path)
            t0 = time.perf_counter()
            res = simulate(JobSet.read_parquet(path), [make_policy(spec)], WHOLE)
            res.write_parquet(Path(tmp) / "res.parquet")
            seconds = time.perf_counter() - t0
            verdict = "PASS" if seconds < target else "FAIL"
            print(
                f"replay of {n:,} trace-shaped jobs on 1,000 machines, {spec}, end to end: "
                f"{seconds:.2f} s = {n / seconds:,.0f} jobs/s (target < {target:g} s at "
                f"{args.jobs:,}: {verdict})"
            )


if __name__ == "__main__":
    main()
