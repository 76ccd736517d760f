"""Benchmark: the Figure 4 experiment on the local backend and on a local Ray instance.

``experiments/deeprm_fig4.toml`` (60 runs: 6 policies x 10 loads x 100 jobsets) is run from
scratch twice into temporary directories: by the local backend (this process and its spawned
workers, the default) and by :class:`~schedlab.evaluation.ray_backend.RayBackend` on a local
Ray instance of as many CPUs, then once more on the same instance (its worker processes
started and warm). Prints each wall time (Ray's start and stop apart); the ratios Ray / local;
the **overhead per task**: the CPU time of the experiment that was not spent inside runs,
``(wall x CPUs - sum of the runs' own wall times) / runs`` (a run's own time includes the
imports it pays in a fresh worker); Ray's round trip of an empty task; and whether every
backend wrote identical results (``results.parquet``).

On a small machine Ray is expected to be slower (its start-up, its worker processes' imports,
and the object store); the local backend stays the default.

Run with ``make bench`` (or ``python benchmarks/bench_ray.py [--cpus N] [--keep DIR]``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

SPEC = Path(__file__).resolve().parents[1] / "experiments" / "deeprm_fig4.toml"
EMPTY_TASKS = 200


def run_seconds(out: Path) -> float:
    """Sum of the runs' own wall times (``wall_s`` in each run file's metadata)."""
    from schedlab.evaluation.runs import run_meta

    return sum(float(run_meta(p).get("wall_s", 0.0)) for p in (out / "runs").glob("*.parquet"))


def nothing() -> None:
    """A task that does nothing."""


def empty_round_trip_s(tasks: object) -> float:
    """Seconds per task of :data:`EMPTY_TASKS` tasks that do nothing (submit to result)."""
    t0 = time.perf_counter()
    for k in range(EMPTY_TASKS):
        tasks.submit(k, nothing)  # type: ignore[attr-defined]
    for _ in tasks.completed():  # type: ignore[attr-defined]
        pass
    return (time.perf_counter() - t0) / EMPTY_TASKS


def main() -> None:
    """Run the benchmark and print the timings."""
    import polars as pl

    from schedlab.evaluation.backends import available_cpus
    from schedlab.evaluation.ray_backend import RayBackend, RaySession
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=None, help="CPUs of both backends")
    parser.add_argument("--keep", type=Path, help="write both experiments here")
    args = parser.parse_args()
    cpus = args.cpus or available_cpus()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_ray_"))
    spec = load_spec(SPEC)
    try:
        shutil.rmtree(base / "local", ignore_errors=True)
        t0 = time.perf_counter()
        outcome = run_experiment(spec, base / "local", workers=cpus, progress=False)
        local_s = time.perf_counter() - t0
        n = outcome.n_runs

        session = RaySession(cpus=cpus)
        t0 = time.perf_counter()
        session.start()
        start_s = time.perf_counter() - t0
        try:
            walls = []
            for name in ("ray", "ray-warm"):  # the second run finds Ray's workers started
                shutil.rmtree(base / name, ignore_errors=True)
                t0 = time.perf_counter()
                ray_outcome = run_experiment(
                    spec, base / name, backend=RayBackend(RaySession()), progress=False
                )
                walls.append(time.perf_counter() - t0)
            empty_s = empty_round_trip_s(RayBackend(session))
        finally:
            t0 = time.perf_counter()
            session.stop()
            stop_s = time.perf_counter() - t0

        same = all(
            pl.read_parquet(base / "local" / "results.parquet").equals(
                pl.read_parquet(base / name / "results.parquet")
            )
            for name in ("ray", "ray-warm")
        )
        ray_s, warm_s = walls
        print(
            f"Figure 4 spec: {n} runs ({len(spec.policies)} policies x "
            f"{len(spec.workloads[0].loads)} loads x {spec.workloads[0].jobsets} jobsets), "
            f"{cpus} CPUs"
        )
        print(f"  local backend:      {local_s:6.1f} s  ({len(outcome.failures)} failed runs)")
        print(
            f"  Ray (local):        {ray_s:6.1f} s  ({len(ray_outcome.failures)} failed runs); "
            f"Ray start {start_s:.1f} s and stop {stop_s:.1f} s apart"
        )
        print(f"  Ray, warm workers:  {warm_s:6.1f} s  (the same again on the same instance)")
        whole = (ray_s + start_s + stop_s) / local_s
        print(
            f"  ratio Ray / local: {ray_s / local_s:.2f} ({whole:.2f} with Ray's start and "
            f"stop; {warm_s / local_s:.2f} with warm workers)"
        )
        runs = (
            ("local", local_s, base / "local"),
            ("Ray", ray_s, base / "ray"),
            ("Ray, warm", warm_s, base / "ray-warm"),
        )
        for name, wall, out in runs:
            busy = run_seconds(out)
            print(
                f"  overhead per task, {name:9s}: {(wall * cpus - busy) / n:.3f} CPU-s "
                f"(runs' own time {busy:.1f} s of {wall * cpus:.1f} CPU-s)"
            )
        print(f"  Ray round trip of an empty task: {1000 * empty_s:.2f} ms ({EMPTY_TASKS} tasks)")
        print(f"  identical results.parquet: {'yes' if same else 'NO'}")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
