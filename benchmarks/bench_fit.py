"""Benchmark: fitting a workload model to a JobSet of the full Alibaba v2018 size (14.3M jobs).

The JobSet is built once and kept in schedlab's cache (``bench/``):

* if the full-size ``batch_task.csv`` of ``bench_alibaba2018_load.py --keep`` is in the cache
  (``bench/alibaba2018_batch_task_14295731.csv``), it is loaded with the ``alibaba2018`` loader
  (1-s steps, task granularity, Terminated tasks);
* otherwise the bundled real sample (54,994 tasks) is **resampled** to 14,295,731 rows with
  polars/numpy (rows drawn with replacement, seed 0). So that the table has as many distinct
  arrival seconds and durations as a real trace of that size (rather than 14.3M copies of the
  sample's 8,002 arrival seconds and 1,643 durations), each drawn arrival is moved by
  ``U{0..599}`` s (clipped to the sample's span) and each duration multiplied by
  ``exp(N(0, 0.1²))`` (rounded, >= 1 s). Demands are the sample's.

With ``--alibaba2017 PATH`` the JobSet is instead the real Alibaba cluster-trace-v2017
``batch_task`` table (e.g. ``../shared/traces/alibaba-v2017-batch_task.csv``, 67,003 tasks)
loaded with the ``alibaba2017`` loader at its default options.

Then ``schedlab.fit`` runs in a fresh interpreter (so its peak resident memory, ``ru_maxrss``
from ``os.wait4``, is its own) with the default ``subsample=200_000`` jobs for the KS/AD
distances; everything else (likelihoods over distinct durations, counts, demand tables) uses
every job. Prints the table size, the wall time of reading the Parquet file and of the fit,
the peak memory, and for the lognormal mixtures their log-likelihood and how many EM starts
reached it. Target: minutes and bounded memory.

Run ``python benchmarks/bench_fit.py [--rows N] [--rebuild] [--alibaba2017 PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.traces.alibaba2017 import read_alibaba2017
from schedlab.loaders.traces.cache import cache_dir
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.traces import bundled

FULL_ROWS = 14_295_731
TARGET_S = 600.0

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from schedlab.jobset import JobSet
js = JobSet.read_parquet(sys.argv[1])
t1 = time.perf_counter()
import schedlab
result = schedlab.fit(js, seed=0)
t2 = time.perf_counter()
result.save(sys.argv[2])
m = result.model
mixtures = {name: [f.loglik, f.starts_at_optimum, len(f.starts)]
            for name, f in result.fits.items() if f.starts}
print(json.dumps({"read_s": t1 - t0, "fit_s": t2 - t1, "jobs": len(js),
                  "family": m.durations.family, "arrivals": m.arrivals.kind,
                  "batched": bool(m.arrivals.batch_sizes), "notes": list(result.notes),
                  "mixtures": mixtures}))
"""


def resampled(rows: int, seed: int = 0) -> JobSet:
    """The bundled v2018 sample resampled to ``rows`` jobs (see the module docstring)."""
    sample = load_trace("alibaba2018", bundled("alibaba2018"), options=TraceOptions())[0].jobs
    src = sample.jobs
    rng = np.random.default_rng(seed)
    take = rng.integers(0, src.height, size=rows)
    arrival = src["arrival"].to_numpy()[take] + rng.integers(0, 600, size=rows)
    arrival = np.minimum(arrival, int(src["arrival"].max()))  # type: ignore[arg-type]
    duration = np.rint(src["duration"].to_numpy()[take] * np.exp(rng.normal(0, 0.1, rows)))
    jobs = pl.DataFrame(
        {
            "jobset": np.zeros(rows, dtype=np.int32),
            "job_id": np.arange(rows, dtype=np.int64),
            "arrival": arrival.astype(np.int64),
            "duration": np.maximum(duration, 1).astype(np.int64),
            **{r: src[r].to_numpy()[take] for r in sample.resources},
        }
    )
    prov = {**sample.meta.provenance, "bench": f"bundled sample resampled to {rows} rows"}
    fields = {k: getattr(sample.meta, k) for k in JobSetMeta.__dataclass_fields__}
    return JobSet.create(jobs, JobSetMeta(**{**fields, "provenance": prov}))


def build(rows: int, rebuild: bool) -> Path:
    """The benchmark's JobSet Parquet file (built once, then reused)."""
    folder = cache_dir() / "bench"
    big_csv = folder / f"alibaba2018_batch_task_{FULL_ROWS}.csv"
    how = "loaded" if rows == FULL_ROWS and big_csv.is_file() else "resampled"
    path = folder / f"fit_jobs_{how}_{rows}.parquet"
    if path.is_file() and not rebuild:
        print(f"reusing {path}")
        return path
    t0 = time.perf_counter()
    if how == "loaded":
        js = load_trace("alibaba2018", big_csv, options=TraceOptions())[0].jobs
        js = JobSet(
            js.jobs.select("jobset", "job_id", "arrival", "duration", *js.resources), js.meta
        )
    else:
        js = resampled(rows)
    js.write_parquet(path)
    print(f"built {path} ({how}, {len(js):,} jobs) in {time.perf_counter() - t0:.1f} s")
    return path


def build_v2017(source: Path, rebuild: bool) -> Path:
    """The v2017 table at the loader's default options, as a JobSet Parquet file (cached)."""
    path = cache_dir() / "bench" / "fit_jobs_alibaba2017.parquet"
    if path.is_file() and not rebuild:
        print(f"reusing {path}")
        return path
    read_alibaba2017(source).jobs.write_parquet(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=FULL_ROWS, help="jobs in the JobSet")
    parser.add_argument("--rebuild", action="store_true", help="build the JobSet again")
    parser.add_argument(
        "--alibaba2017", type=Path, help="fit this v2017 batch_task table instead (real rows)"
    )
    args = parser.parse_args()
    path = (
        build_v2017(args.alibaba2017, args.rebuild)
        if args.alibaba2017
        else build(args.rows, args.rebuild)
    )
    model = path.with_suffix(".model.json")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(model)], stdout=subprocess.PIPE, text=True
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"the fit failed:\n{out}")
    info = json.loads(out.strip().splitlines()[-1])
    peak = usage.ru_maxrss * 1024 / 1e9
    print(f"JobSet: {info['jobs']:,} jobs, {path.stat().st_size / 1e6:,.0f} MB of Parquet")
    print(
        f"read {info['read_s']:.1f} s, fit {info['fit_s']:.1f} s, process {wall:.1f} s, "
        f"peak RSS {peak:.2f} GB"
    )
    print(
        f"model: durations {info['family']}, arrivals {info['arrivals']}"
        f"{' with batches' if info['batched'] else ''} -> {model}"
    )
    for name, (loglik, at_optimum, starts) in info["mixtures"].items():
        print(f"  {name}: log L {loglik:,.1f}, {at_optimum} of {starts} EM starts at the optimum")
    for note in info["notes"]:
        print(f"  {note}")
    print(f"fit within {TARGET_S:.0f} s: {'PASS' if info['fit_s'] <= TARGET_S else 'FAIL'}")


if __name__ == "__main__":
    main()
