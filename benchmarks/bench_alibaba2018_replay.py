"""Benchmark: replaying the full-size Alibaba v2018 trace whole, with DAG precedence (issue 26).

The file is the full-size ``batch_task.csv`` of :mod:`bench_alibaba2018_load` (14,295,731 rows
resampled from the real sample; ``--keep`` reuses it). One child process loads it at task
granularity and replays it **whole**: the ``dag`` release rule, the trace's own 4,000
machines, the whole queue, under SJF and critical-path first (CPF); its peak resident memory is
the replay's. A second child loads it again and replays SJF on the same tasks with the
``parents`` column dropped (today's DAG-blind replay), for the jobs/s ratio.

Targets: load < 60 s, each DAG simulation < 60 s, peak < 4 GB, and DAG-aware jobs/s within 2x
of the DAG-blind replay's. Run ``python benchmarks/bench_alibaba2018_replay.py [--rows N]
[--keep]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_alibaba2018_load import FULL_ROWS, SAMPLE_CSV, measure

from schedlab.loaders.traces.cache import cache_dir

TARGETS = {"load_s": 60.0, "simulate_s": 60.0, "peak_gb": 4.0, "blind_ratio": 2.0}

CHILD = r"""
import json, sys, time
from schedlab.jobset import JobSet
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy

t0 = time.perf_counter()
js = read_alibaba2018(sys.argv[1]).jobs
out = {"load_s": time.perf_counter() - t0, "tasks": len(js), "machines": js.meta.machines,
       "edges": int(js.jobs["parents"].list.len().sum())}
if sys.argv[2] == "blind":
    js = JobSet.create(js.jobs.drop("parents", "dag"), js.meta)
for name in sys.argv[3:]:
    t0 = time.perf_counter()
    run_policy(js, make_policy(name), ClusterConfig(slots=None))
    out[name + "_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def child(csv: Path, scratch: Path, *args: str) -> tuple[float, float, dict]:
    """Wall seconds, peak GB and figures of :data:`CHILD` run on ``csv`` with ``args``."""
    code = CHILD.replace("{", "{{").replace("}", "}}")  # measure() formats its arguments
    wall, peak, output = measure(["-c", code, "{csv}", *args], csv, scratch)
    return wall, peak, json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=FULL_ROWS, help="rows of the built file")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the built file")
    args = parser.parse_args()
    if not SAMPLE_CSV.is_file():
        sys.exit(f"the real sample {SAMPLE_CSV} is needed to build the file")
    with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
        folder = cache_dir() / "bench" if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        csv = folder / f"alibaba2018_batch_task_{args.rows}.csv"
        if not csv.is_file():
            t0 = time.perf_counter()
            build = [
                sys.executable,
                str(Path(__file__).with_name("bench_alibaba2018_load.py")),
                "--build",
                str(csv),
                "--rows",
                str(args.rows),
            ]
            subprocess.run(build, check=True)
            print(f"built {csv} in {time.perf_counter() - t0:.1f} s")
        print(f"file: {csv} ({csv.stat().st_size / 1e6:,.0f} MB, {args.rows:,} rows)")
        wall, peak, fig = child(csv, Path(tmp), "dag", "sjf", "cpf")
        _, _, blind = child(csv, Path(tmp), "blind", "sjf")
    n = fig["tasks"]
    print(
        f"{n:,} tasks, {fig['edges']:,} parent entries, {fig['machines']:,} machines, "
        f"whole queue, dag release; load and replays {wall:.1f} s"
    )
    fig["blind_sjf_s"] = blind["sjf_s"]
    rate = {k: n / fig[k] for k in ("sjf_s", "cpf_s", "blind_sjf_s")}
    ratio = fig["sjf_s"] / fig["blind_sjf_s"]
    rows = [
        ("load", fig["load_s"], "s", TARGETS["load_s"]),
        ("simulate sjf (DAG)", fig["sjf_s"], "s", TARGETS["simulate_s"]),
        ("simulate cpf (DAG)", fig["cpf_s"], "s", TARGETS["simulate_s"]),
        ("peak memory", peak, "GB", TARGETS["peak_gb"]),
        ("sjf time / DAG-blind sjf time", ratio, "x", TARGETS["blind_ratio"]),
    ]
    for name, value, unit, target in rows:
        verdict = "PASS" if value < target else "FAIL"
        print(
            f"  {name:32s} {value:8.2f} {unit:2s} (target < {target:g}: {verdict}; "
            f"{value / target:.2f} of it)"
        )
    print(
        f"  jobs/s: sjf {rate['sjf_s']:,.0f}, cpf {rate['cpf_s']:,.0f}, DAG-blind sjf "
        f"{rate['blind_sjf_s']:,.0f}"
    )


if __name__ == "__main__":
    main()
