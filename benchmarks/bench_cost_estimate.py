"""Benchmark: the up-front cost estimate of long simulations (issue 36) against measured time.

The bundled KTH-SP2 log (28,475 jobs) with its arrivals compressed to offered loads 1.4 and 2.8
(``arrival // k``), its first N jobs as one jobset, simulated under conservative backfilling
with a static and a dynamic order (``fcfs+conservative``, ``wfp3+conservative``) and under EASY:
estimated CPU seconds (:func:`schedlab.simulator.cost.estimate`), measured CPU seconds, and
their ratio (target: within a factor of 4 either way where the measured time exceeds 1 s; the
estimate is an order of magnitude, made to announce long runs). ``--jobs`` sets the prefixes
(the largest take about 15 s each).

Run with ``make bench`` (or ``python benchmarks/bench_cost_estimate.py [--jobs 1000,2000]``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from schedlab.jobset import JobSet
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.cost import estimate
from schedlab.simulator.run import simulate

KTH = Path(__file__).resolve().parents[1] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
SPECS = ("fcfs+conservative", "wfp3+conservative", "fcfs+easy")
SQUEEZE = (2, 4)
"""Arrivals divided by these factors: offered loads about 1.4 and 2.8."""


def squeezed(kth: JobSet, k: int, n: int) -> JobSet:
    """The first ``n`` jobs of ``kth``, arrivals divided by ``k`` (steps only)."""
    jobs = kth.jobs.head(n).with_columns(pl.col("arrival") // k)
    jobs = jobs.drop("arrival_s", "duration_s", "estimate_s")
    return JobSet.create(jobs, replace(kth.meta, time_step_seconds=None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="1000,2000,4000,8000")
    args = parser.parse_args()
    kth = read_swf(KTH).jobs
    config = ClusterConfig()
    for spec in SPECS:  # load or compile the kernels once
        simulate(squeezed(kth, 2, 50), [make_policy(spec)], config)
    print("KTH-SP2 prefixes, arrivals compressed; estimated vs measured CPU seconds:")
    for k in SQUEEZE:
        for n in (int(x) for x in args.jobs.split(",")):
            js = squeezed(kth, k, n)
            for spec in SPECS:
                policy = make_policy(spec)
                cost = estimate(js, policy, config)
                t0 = time.process_time()
                simulate(js, [policy], config)
                took = time.process_time() - t0
                ratio = cost.seconds / took if took > 0 else float("inf")
                verdict = "" if took < 1 else f" ({'PASS' if 0.25 <= ratio <= 4 else 'FAIL'})"
                print(
                    f"  load x{k} {n:6,} jobs {spec:18s} estimated {cost.seconds:9.3f} s, "
                    f"measured {took:9.3f} s, ratio {ratio:6.2f}{verdict}"
                )


if __name__ == "__main__":
    main()
