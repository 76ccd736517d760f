"""Benchmark: loading the full-size Alibaba cluster-trace-v2018 ``batch_task.csv``.

Builds a v2018-format ``batch_task.csv`` with the full trace's 14,295,731 rows (about 770 MB) by
resampling whole jobs of the real 55,874-row sample (``../shared/alibaba2018``) with new job names
``j_<n>``: headerless, integers written as the raw trace writes them (``1``, ``100``), empty cells
kept. The jobs are drawn with replacement (seed 0), so the file has the sample's DAG shapes, status
mix and quirks; the last job may be cut short (its missing parents are counted like any other).

Then it measures, each in its own subprocess so that the peak resident memory (``ru_maxrss`` of
the child) belongs to one measurement:

* ``pandas``: a bare ``pandas.read_csv(path, header=None)``;
* ``polars``: a bare ``pl.scan_csv(path, has_header=False).collect()``;
* ``schedlab``: the full load (parse, clean, DAG edges, JobSet written to Parquet).

Targets (issue "Every workload source"): the full load within 3x the bare pandas read, and its
peak memory under 3 GB. Run ``python benchmarks/bench_alibaba2018_load.py [--rows N] [--keep]``.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

FULL_ROWS = 14_295_731
SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "alibaba2018"
SAMPLE_CSV = SAMPLE / "hliangzhao_selected_DAGs.csv"
MAX_WALL_RATIO = 3.0
MAX_PEAK_GB = 3.0

# Each measurement is a tiny program run with ``python -c``; argv[1] is the CSV, argv[2] a
# scratch directory. Switching the full load to the CLI is the one ``SCHEDLAB`` line below.
PANDAS = "import sys, pandas; pandas.read_csv(sys.argv[1], header=None)"
POLARS = "import sys, polars; polars.scan_csv(sys.argv[1], has_header=False).collect()"
SCHEDLAB = (
    "import sys; from schedlab.loaders.alibaba2018 import read_alibaba2018; "
    "r = read_alibaba2018(sys.argv[1]); r.jobs.write_parquet(sys.argv[2] + '/out.parquet'); "
    "print(r.report.summary())"
)
# With the CLI: SCHEDLAB_CMD = ["schedlab", "load", "alibaba2018", "{csv}", "-o", "{out}/out.parquet"]


def build_big_file(path: Path, rows: int = FULL_ROWS, seed: int = 0) -> Path:
    """Write a headerless v2018 ``batch_task.csv`` of exactly ``rows`` rows to ``path``.

    Whole jobs of the real sample are drawn with replacement (vectorised) and renamed ``j_<n>``
    in draw order; ``instance_num`` and ``plan_cpu`` are written as integers like the raw trace.
    """
    sample = pl.read_csv(
        SAMPLE_CSV,
        schema={
            "task_name": pl.Utf8, "instance_num": pl.Float64, "job_name": pl.Utf8,
            "task_type": pl.Utf8, "status": pl.Utf8, "start_time": pl.Int64,
            "end_time": pl.Int64, "plan_cpu": pl.Float64, "plan_mem": pl.Utf8,
        },
    )  # fmt: skip
    sample = sample.with_columns(
        pl.col("instance_num").cast(pl.Int64), pl.col("plan_cpu").cast(pl.Int64)
    ).sort("job_name", maintain_order=True)
    sizes = sample.group_by("job_name", maintain_order=True).len().get_column("len").to_numpy().astype(np.int64)
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


def measure(code: str, csv: Path, scratch: Path) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (GB) of ``python -c code csv scratch`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(csv), str(scratch)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if proc.returncode:
        msg = f"measurement failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        raise RuntimeError(msg)
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far; run the smaller ones first or
    # compare with the previous maximum (it only grows, so a smaller child reads as the max).
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1e6, proc.stdout
