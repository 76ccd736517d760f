"""Benchmark: loading the full-size Alibaba cluster-trace-v2018 ``batch_task.csv``.

Builds a v2018-format ``batch_task.csv`` with the full trace's 14,295,731 rows (about 770 MB) by
resampling whole jobs of the real 55,874-row sample (``../shared/alibaba2018``) with new job names
``j_<n>``: headerless, integers written as the raw trace writes them (``1``, ``100``), empty cells
kept. The jobs are drawn with replacement (seed 0), so the file has the sample's DAG shapes, status
mix and quirks; the last job may be cut short (its missing parents are counted like any other).

Then it measures, each in its own subprocess so that the peak resident memory (``ru_maxrss`` of
that child, from ``os.wait4``) belongs to one measurement, interleaved and repeated; the wall
ratio judged is the median of each round's ratio to that round's pandas read (robust on a
shared machine), and the largest peak is judged:

* ``pandas``: a bare ``pandas.read_csv(path, header=None)``;
* ``polars``: a bare ``pl.scan_csv(path, has_header=False).collect()``;
* ``schedlab``: the full load, ``schedlab load alibaba2018 FILE -o jobs.parquet --no-cache``
  (parse, clean, DAG edges, JobSet written to Parquet; ``--api``: the Python API instead).

Targets (issue "Every workload source"): the full load within 3x the bare pandas read, and its
peak memory under 3 GB. Run ``python benchmarks/bench_alibaba2018_load.py [--rows N] [--keep]``
(``--keep`` keeps the built file in schedlab's cache and reuses it next time).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from schedlab.loaders.traces.cache import cache_dir

FULL_ROWS = 14_295_731
SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "alibaba2018"
SAMPLE_CSV = SAMPLE / "hliangzhao_selected_DAGs.csv"
MAX_WALL_RATIO = 3.0
MAX_PEAK_GB = 3.0

# Each measurement runs in a fresh interpreter; argv after the code: the CSV, a scratch folder.
PANDAS = ["-c", "import sys, pandas; pandas.read_csv(sys.argv[1], header=None)", "{csv}"]
POLARS = [
    "-c",
    "import sys, polars; polars.scan_csv(sys.argv[1], has_header=False).collect()",
    "{csv}",
]
SCHEDLAB = [
    "-c",
    "from schedlab.cli import main; main()",
    "load",
    "alibaba2018",
    "{csv}",
    "-o",
    "{out}/jobs.parquet",
    "--no-cache",
]
"""The full load through the CLI (``--no-cache``: parse, never read a cached conversion)."""
SCHEDLAB_API = [
    "-c",
    "import sys; from schedlab.loaders.traces.alibaba2018 import "
    "read_alibaba2018; "
    "r = read_alibaba2018(sys.argv[1]); r.jobs.write_parquet(sys.argv[2]); "
    "print(r.report.summary())",
    "{csv}",
    "{out}/jobs.parquet",
]
"""The same through the Python API (``--api``)."""


def build_big_file(path: Path, rows: int = FULL_ROWS, seed: int = 0) -> Path:
    """Write a headerless v2018 ``batch_task.csv`` of exactly ``rows`` rows to ``path``.

    Whole jobs of the real sample are drawn with replacement (vectorised) and renamed ``j_<n>``
    in draw order; ``instance_num`` and ``plan_cpu`` are written as integers like the raw trace.
    """
    sample = pl.read_csv(
        SAMPLE_CSV,
        schema={
            "task_name": pl.Utf8,
            "instance_num": pl.Float64,
            "job_name": pl.Utf8,
            "task_type": pl.Utf8,
            "status": pl.Utf8,
            "start_time": pl.Int64,
            "end_time": pl.Int64,
            "plan_cpu": pl.Float64,
            "plan_mem": pl.Utf8,
        },
    )
    sample = sample.with_columns(
        pl.col("instance_num").cast(pl.Int64), pl.col("plan_cpu").cast(pl.Int64)
    ).sort("job_name", maintain_order=True)
    sizes = (
        sample.group_by("job_name", maintain_order=True)
        .len()
        .get_column("len")
        .to_numpy()
        .astype(np.int64)
    )
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, sizes.size, size=int(rows / sizes.mean() * 1.1) + 10)
    while sizes[draws].sum() < rows:  # never in practice: 10% margin
        draws = np.concatenate([draws, rng.integers(0, sizes.size, size=draws.size)])
    counts = sizes[draws]
    total = np.cumsum(counts)
    n_jobs = int(np.searchsorted(total, rows)) + 1
    draws, counts = draws[:n_jobs], counts[:n_jobs]
    copy = np.repeat(np.arange(n_jobs), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    take = np.repeat(starts[draws], counts) + (np.arange(copy.size) - first)
    big = sample[take[:rows]].with_columns(
        pl.format("j_{}", pl.Series(copy[:rows] + 1)).alias("job_name")
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    big.write_csv(path, include_header=False)
    return path


def measure(args: list[str], csv: Path, scratch: Path) -> tuple[float, float, str]:
    """Wall seconds, peak resident memory (GB) and output of ``python *args`` in a new process.

    The peak is that child's own ``ru_maxrss`` (``os.wait4``), so each measurement is separate
    (Linux starts a child's maximum from its parent's RSS: this process stays small).
    """
    argv = [sys.executable, *(a.format(csv=csv, out=scratch) for a in args)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        msg = f"{' '.join(argv[:3])}... failed ({proc.returncode}):\n{output[-3000:]}"
        raise RuntimeError(msg)
    return wall, usage.ru_maxrss * 1024 / 1e9, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=FULL_ROWS, help="rows of the built file")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per method")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the built file")
    parser.add_argument("--api", action="store_true", help="time the Python API, not the CLI")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # internal: build only
    args = parser.parse_args()
    if args.build is not None:
        build_big_file(args.build, args.rows)
        return
    if not SAMPLE_CSV.is_file():
        sys.exit(f"the real sample {SAMPLE_CSV} is needed to build the file")
    keep_dir = cache_dir() / "bench"
    with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
        folder = keep_dir if args.keep else Path(tmp)
        csv = folder / f"alibaba2018_batch_task_{args.rows}.csv"
        if not csv.is_file():  # in a child: a child's ru_maxrss starts from its parent's RSS
            t0 = time.perf_counter()
            cmd = [sys.executable, __file__, "--build", str(csv), "--rows", str(args.rows)]
            subprocess.run(cmd, check=True)
            print(f"built {csv} in {time.perf_counter() - t0:.1f} s")
        print(f"file: {csv} ({csv.stat().st_size / 1e6:,.0f} MB, {args.rows:,} rows)")
        methods = {
            "pandas.read_csv": PANDAS,
            "polars scan+collect": POLARS,
            "schedlab load": SCHEDLAB_API if args.api else SCHEDLAB,
        }
        walls: dict[str, list[float]] = {m: [] for m in methods}
        peaks: dict[str, list[float]] = {m: [] for m in methods}
        for r in range(args.repeats):
            for name, cmd in methods.items():  # interleaved, so load on the machine is shared
                wall, peak, out = measure(cmd, csv, Path(tmp))
                walls[name].append(wall)
                peaks[name].append(peak)
                print(f"  run {r + 1} {name:20s} {wall:6.2f} s  {peak:5.2f} GB", flush=True)
                if name == "schedlab load" and r == 0:
                    print("    " + out.strip().replace("\n", "\n    "))
        report(walls, peaks)


def report(walls: dict[str, list[float]], peaks: dict[str, list[float]]) -> None:
    """Best wall and largest peak per method; ratios to pandas; PASS/FAIL against the targets.

    The wall ratio judged is the median over runs of each run's ratio to the pandas read of the
    same round (the methods are interleaved, so a round shares the machine's load); the ratio
    of the best walls is shown beside it.
    """
    base = walls["pandas.read_csv"]
    print(f"{'method':20s} {'best s':>7s} {'median s':>9s} {'x pandas':>9s} {'peak GB':>8s}")
    for name, w in walls.items():
        paired = float(np.median([a / b for a, b in zip(w, base, strict=True)]))
        print(
            f"{name:20s} {min(w):7.2f} {float(np.median(w)):9.2f} {paired:9.2f} "
            f"{max(peaks[name]):8.2f}"
        )
    load = walls["schedlab load"]
    ratio = float(np.median([a / b for a, b in zip(load, base, strict=True)]))
    best = min(load) / min(base)
    peak = max(peaks["schedlab load"])
    ok_wall, ok_peak = ratio <= MAX_WALL_RATIO, peak < MAX_PEAK_GB
    print(
        f"wall: {ratio:.2f}x pandas (median of paired runs; best/best {best:.2f}x; target <= "
        f"{MAX_WALL_RATIO:g}x): {'PASS' if ok_wall else 'FAIL'}"
    )
    print(f"peak: {peak:.2f} GB (target < {MAX_PEAK_GB:g} GB): {'PASS' if ok_peak else 'FAIL'}")


if __name__ == "__main__":
    main()
