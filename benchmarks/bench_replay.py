"""Benchmark: whole-queue trace replay on a cluster of machines, and the multi-machine fast path.

1. **Replay** (issue 16): 1,000,000 jobs on 1,000 machines of 96 cores (Alibaba 2018's machine),
   saturated (offered load 1.2), SJF over the whole queue, first fit; end to end = read the
   JobSet Parquet, simulate, write the per-job results (target: < 10 s); and linear in jobs
   (250k, 500k, 1M). Then the visible-queue sweep M = 10, 100, 1000 and the whole queue on the
   first 100,000 jobs (M slots are scanned per start; the whole queue uses the ordered trees).
2. **Machines** (issue 16): the DeepRM workload at load 0.7 with m = 2 machines vs one pool,
   SJF kernel jobs/s (target: within 2× of the single pool).

The workload of (1) is synthetic but trace-shaped: Poisson arrivals (one step = 1 s), lognormal
durations (median 60 s, σ = 1.5, at least 1 s), demands of 0.5–8 cores and 0.1–2 % of a
machine's memory, rate set for the target offered load.

Run with ``make bench`` (or ``python benchmarks/bench_replay.py [--jobs N]``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from timing import best_of

from schedlab.jobset import JobSet, JobSetMeta, offered_load
from schedlab.policies.heuristics import SJF
from schedlab.registry import generators
from schedlab.results import Results
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate

MACHINES, CORES, MEM = 1000, 96.0, 100.0
TARGET_REPLAY_S = 10.0


def trace_like(n: int, *, load: float = 1.2, seed: int = 0) -> JobSet:
    """``n`` trace-shaped jobs in one jobset for a cluster of :data:`MACHINES` machines."""
    rng = np.random.default_rng(seed)
    duration = np.maximum(1, np.round(rng.lognormal(np.log(60), 1.5, n))).astype(np.int64)
    cpu = rng.choice([0.5, 1.0, 2.0, 4.0, 8.0], n, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    mem = rng.uniform(0.1, 2.0, n)
    work = (duration * cpu).sum() / (MACHINES * CORES)  # core-steps over the cluster
    span = work / load
    arrival = np.sort(rng.uniform(0, span, n)).astype(np.int64)
    jobs = pl.DataFrame(
        {
            "jobset": np.zeros(n, np.int32),
            "job_id": np.arange(n, dtype=np.int64),
            "arrival": arrival,
            "duration": duration,
            "cpu": cpu,
            "mem": mem,
        }
    )
    meta = JobSetMeta(
        resources=("cpu", "mem"),
        capacity=(MACHINES * CORES, MACHINES * MEM),
        machines=MACHINES,
        units=("core", "percent"),
        time_step_seconds=1.0,
    )
    return JobSet.create(jobs, meta)


def replay(path: Path, out: Path, config: ClusterConfig) -> tuple[float, int]:
    """Read, simulate SJF on the whole queue, write; (seconds, jobs)."""
    t0 = time.perf_counter()
    js = JobSet.read_parquet(path)
    res = simulate(js, [SJF()], config)
    res.write_parquet(out)
    return time.perf_counter() - t0, len(js)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    whole = ClusterConfig(slots=None)
    with tempfile.TemporaryDirectory() as tmp:
        small = trace_like(1000)
        simulate(small, [SJF()], whole)  # load or compile the kernels once
        print(f"replay: SJF, whole queue, first fit, {MACHINES} machines x {CORES:g} cores")
        rates = []
        for n in (args.jobs // 4, args.jobs // 2, args.jobs):
            js = trace_like(n)
            path, out = Path(tmp) / f"jobs{n}.parquet", Path(tmp) / f"res{n}.parquet"
            js.write_parquet(path)
            load = offered_load(js)["load"].item()
            seconds, jobs = min((replay(path, out, whole) for _ in range(2)), key=lambda r: r[0])
            res = Results.read_parquet(out)
            wait = res.table["wait"].mean()
            rates.append(jobs / seconds)
            print(
                f"  {jobs:>9,} jobs (load {load:.2f}, mean wait {wait:,.0f} s): end to end "
                f"{seconds:5.2f} s = {jobs / seconds:,.0f} jobs/s"
            )
        verdict = "PASS" if args.jobs / rates[-1] < TARGET_REPLAY_S else "FAIL"
        print(
            f"  1M-job replay {args.jobs / rates[-1]:.2f} s vs target {TARGET_REPLAY_S:g} s "
            f"({TARGET_REPLAY_S / (args.jobs / rates[-1]):.1f}x under): {verdict}; "
            f"linearity: jobs/s at {args.jobs:,} / at {args.jobs // 4:,} = "
            f"{rates[-1] / rates[0]:.2f}"
        )
        js = trace_like(100_000)
        print("visible queue sweep on 100,000 jobs (kernel only):")
        for slots in (10, 100, 1000, None):
            config = ClusterConfig(slots=slots)
            seconds = best_of(lambda c=config: schedule(js, SJF(), c), 1)
            label = "whole" if slots is None else f"M = {slots}"
            print(f"  {label:>8}: {seconds:7.2f} s = {len(js) / seconds:>12,.0f} jobs/s")
    deeprm = generators.make("deeprm").generate(0.7, n_jobsets=1000, seed=0)
    two = generators.make("deeprm", machines=2).generate(0.7, n_jobsets=500, seed=0)
    schedule(deeprm, SJF(), ClusterConfig())
    schedule(two, SJF(), ClusterConfig())
    one_rate = len(deeprm) / best_of(lambda: schedule(deeprm, SJF(), ClusterConfig()), 5)
    two_rate = len(two) / best_of(lambda: schedule(two, SJF(), ClusterConfig()), 5)
    verdict = "PASS" if two_rate * 2 >= one_rate else "FAIL"
    print(
        f"machines: DeepRM load 0.7, SJF kernel: one pool {one_rate:,.0f} jobs/s, two machines "
        f"{two_rate:,.0f} jobs/s = {one_rate / two_rate:.2f}x slower (target <= 2x): {verdict}"
    )


if __name__ == "__main__":
    main()
