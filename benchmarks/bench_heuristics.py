"""Benchmark: simulated jobs per second per heuristic on the DeepRM workload (issue 2).

Workload: 100 jobsets x 9 load levels (30%..190%) of the DeepRM preset (arrival window 50,
M = 10, T = 20). The process is pinned to one core, so the figures are per core. Reported per
policy: the scheduling kernel alone (``schedule``) and end to end (``simulate``: the per-job
results table included). Reference: the DeepRM reference code simulates about 4,000 jobs/s for
SJF on one core of this machine (design.md §8); target: >= 200,000 jobs/s per core for SJF.

Run with ``make bench`` (or ``python benchmarks/bench_heuristics.py [--repeats N]``).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from timing import best_of

from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.policies.heuristics import SJF
from schedlab.registry import policies
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate

REFERENCE_JOBS_PER_S = 4_000.0
TARGET_JOBS_PER_S = 200_000.0
LOADS = [round(0.3 + 0.2 * i, 1) for i in range(9)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobsets", type=int, default=100)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    config = ClusterConfig(slots=10, horizon=20)
    js = DeepRMGenerator().generate_sweep(LOADS, n_jobsets=args.jobsets, seed=0)
    n = len(js)
    schedule(js, SJF(), config)  # load or compile the kernel once
    print(f"workload: {args.jobsets} jobsets x {len(LOADS)} loads {LOADS} = {n} jobs; 1 core")
    print(f"{'policy':8s} {'kernel jobs/s':>14s} {'end-to-end jobs/s':>18s} {'x reference':>12s}")
    sjf_rate = 0.0
    for name in policies.names(tag="heuristic"):
        policy = policies.make(name)
        kernel = n / best_of(lambda p=policy: schedule(js, p, config), args.repeats)
        full = n / best_of(lambda p=policy: simulate(js, [p], config), args.repeats)
        sjf_rate = kernel if isinstance(policy, SJF) else sjf_rate
        print(
            f"{policy.name:8s} {kernel:14,.0f} {full:18,.0f} {kernel / REFERENCE_JOBS_PER_S:11.0f}x"
        )
    small = type(js)(js.jobs.filter(js.jobs["jobset"] % 10 == 0), js.meta)
    step = len(small) / best_of(lambda: schedule(small, SJF(), config, engine="step"), 1)
    print(f"step engine (Python, same semantics), SJF: {step:,.0f} jobs/s on {len(small)} jobs")
    verdict = "PASS" if sjf_rate >= TARGET_JOBS_PER_S else "FAIL"
    print(
        f"SJF kernel: {sjf_rate:,.0f} jobs/s per core = {sjf_rate / TARGET_JOBS_PER_S:.1f}x the "
        f"{TARGET_JOBS_PER_S:,.0f} target, {sjf_rate / REFERENCE_JOBS_PER_S:.0f}x the DeepRM "
        f"reference (~{REFERENCE_JOBS_PER_S:,.0f} jobs/s): {verdict}"
    )
    np.testing.assert_equal(
        schedule(small, SJF(), config), schedule(small, SJF(), config, engine="step")
    )


if __name__ == "__main__":
    main()
