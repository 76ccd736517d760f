"""Benchmark: the Figure 4 experiment end to end (runner + report) against a 1-minute target.

``experiments/deeprm_fig4.toml``: 5 heuristics (Random, FCFS, SJF, Packer, Tetris*) and the
shipped DeepRM policy x 10 offered loads (10%..190%) x 100 jobsets of the DeepRM workload, run
from scratch into a temporary directory with the experiment runner (the default workers unless
``--workers``), then ``schedlab report``'s experiment report. Prints the wall time of each
phase, the total against the 60 s target, the report's headline at the focus load (130%), and
the same experiment with 1 worker against the default (the runner must never be slower with
more workers: ratio default / 1 worker <= 1, up to noise).

Heavy imports stay inside :func:`main`: worker processes (``spawn``) re-import this script.

Run with ``make bench`` (or ``python benchmarks/bench_experiment.py [--workers N] [--keep DIR]``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

TARGET_S = 60.0
RATIO_OK = 1.15
"""Default workers / 1 worker wall time above which more workers count as slower (noise)."""
SPEC = Path(__file__).resolve().parents[1] / "experiments" / "deeprm_fig4.toml"


def headline(out: Path) -> str:
    """Mean rank, mean [CI] and ratio to the reference of each policy at the focus load."""
    import polars as pl

    comp = pl.read_csv(out / "comparison.csv").filter(
        (pl.col("metric") == "slowdown") & (pl.col("load") == 1.3)
    )
    lines = []
    for r in comp.sort("mean_rank").iter_rows(named=True):
        ratio = (
            "reference"
            if r["ratio"] is None
            else (
                f"ratio {r['ratio']:.3f} [{r['ratio_low']:.3f}, {r['ratio_high']:.3f}], "
                f"W/T/L {r['wins']}/{r['ties']}/{r['losses']}"
            )
        )
        lines.append(
            f"  {r['policy']:7s} rank {r['mean_rank']:.2f}  slowdown {r['mean']:.2f} "
            f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]  {ratio}"
        )
    omni = pl.read_csv(out / "omnibus.csv").filter(pl.col("load") == 1.3).row(0, named=True)
    lines.append(
        f"  Friedman chi2 {omni['chi2']:.1f}, Iman-Davenport F({omni['df1']}, {omni['df2']}) = "
        f"{omni['f']:.1f}, p = {omni['p']:.2g}, Kendall's W = {omni['kendall_w']:.2f}"
    )
    pairs = pl.read_csv(out / "pairwise.csv").filter(pl.col("load") == 1.3)
    sig = pairs.filter(pl.col("significant"))
    lines.append(f"  {sig.height} of {pairs.height} pairs significant (Wilcoxon, Holm, 0.05)")
    return "\n".join(lines)


def timed_run(spec_path: Path, out: Path, workers: int | None) -> tuple[float, object]:
    """Seconds to run the spec from scratch into ``out`` with ``workers``, and the outcome."""
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    outcome = run_experiment(load_spec(spec_path), out, workers=workers, progress=False)
    return time.perf_counter() - t0, outcome


def main() -> None:
    """Run the benchmark and print the timings."""
    import polars as pl

    from schedlab.evaluation.backends import available_cpus
    from schedlab.evaluation.spec import load_spec
    from schedlab.reports.experiment import write_experiment_report

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="worker processes")
    parser.add_argument("--keep", type=Path, help="write the experiment and report here")
    parser.add_argument("--no-compare", action="store_true", help="skip the 1-worker run")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_experiment_"))
    exp, out = base / "experiment", base / "report"
    try:
        spec = load_spec(SPEC)
        run_s, outcome = timed_run(SPEC, exp, args.workers)
        t1 = time.perf_counter()
        write_experiment_report(exp, out)
        report_s = time.perf_counter() - t1
        n_jobs = pl.scan_parquet(exp / "results.parquet").select(pl.len()).collect().item()
        total = run_s + report_s
        workers = args.workers or available_cpus()
        print(
            f"Figure 4 spec: {outcome.n_runs} runs ({len(spec.policies)} policies x "
            f"{len(spec.workloads[0].loads)} loads x {spec.workloads[0].jobsets} jobsets), "
            f"{n_jobs:,} job results, {workers} workers"
        )
        print(f"  experiment run: {run_s:6.1f} s  ({len(outcome.failures)} failed runs)")
        print(f"  report:         {report_s:6.1f} s")
        verdict = "OK" if total < TARGET_S else "TOO SLOW"
        print(f"  total:          {total:6.1f} s  (target < {TARGET_S:.0f} s: {verdict})")
        if not args.no_compare:  # both warm (imports and compiled code loaded above)
            one_s, _ = timed_run(SPEC, base / "one-worker", 1)
            again_s, _ = timed_run(SPEC, base / "default-again", args.workers)
            ratio = again_s / one_s
            verdict = "OK" if ratio <= RATIO_OK else "MORE WORKERS ARE SLOWER"
            print(
                f"  1 worker vs default ({workers} workers), warm: experiment run {one_s:.1f} s "
                f"vs {again_s:.1f} s, ratio default/1 = {ratio:.2f} (<= {RATIO_OK}: {verdict})"
            )
        print("Headline at 130% load (average job slowdown, reference tetris):")
        print(headline(out))
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
