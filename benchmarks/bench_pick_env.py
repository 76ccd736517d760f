"""Benchmark (issue 37): the pick environment's throughput against RLScheduler's own
environment on the same log, side by side in one run.

Both replay windows of 256 consecutive jobs of KTH-SP2 (``../shared/traces/KTH-SP2-1996-2.swf``,
the file RLScheduler's reader takes; 100 processors, one second per step) drawn at random
starts, with a uniformly random choice among the valid jobs at every decision, for a fixed
time each; reported are decisions per second (``env.step`` calls, resets included) and
simulated jobs per second (windows finished × 256 / time):

* **RLScheduler** (Zhang et al. SC'20, ``HPCSimPickJobs.HPCEnv`` of
  github.com/DIR-LAB/deep-batch-scheduler): every job start is a decision; ``backfil=True``
  (EASY-like backfilling around the picked job) and ``False`` (the pick waits until it fits).
  Its ``reset`` also schedules the window with SJF and F1 (its reward baselines), which is part
  of what its training loop pays per episode.
* **schedlab** ``PickEnv`` (one env, Gymnasium's API) under ``easy`` and ``strict``, with
  ``skip_forced`` (decisions no pick can change are taken without asking) and without it
  (every decision is asked, closer to RLScheduler's count), and ``PickVectorEnv`` (64 envs
  per call).

RLScheduler's environment runs in its own interpreter: clone the repository outside this one
and make a throwaway venv for it (its code is never part of schedlab)::

    git clone https://github.com/DIR-LAB/deep-batch-scheduler /tmp/rlsched/src
    python3 -m venv /tmp/rlsched/venv
    /tmp/rlsched/venv/bin/pip install "numpy<2" scipy "gym==0.25.2"
    RLSCHEDULER_SRC=/tmp/rlsched/src RLSCHEDULER_PYTHON=/tmp/rlsched/venv/bin/python \\
        python benchmarks/bench_pick_env.py

``HPCSimPickJobs.py`` imports TensorFlow 1.x at module level (for its PPO code, not for the
environment), and TensorFlow 1.x has no wheel for Python 3.8 or later, so the driver puts an
empty ``tensorflow`` module first on the path of that interpreter; ``gym`` 0.25 is the last one
whose ``seeding.np_random`` still has the ``randint`` the environment calls. Without those two
variables the benchmark measures schedlab alone and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.options import TraceOptions
from schedlab.simulator.pick.env import PickEnv, PickVectorEnv

LOG = Path(__file__).resolve().parents[2] / "shared" / "traces" / "KTH-SP2-1996-2.swf"
WINDOW = 256

DRIVER = r"""
import json, os, sys, tempfile, time
stub = tempfile.mkdtemp()
open(os.path.join(stub, "tensorflow.py"), "w").write("# HPCEnv never uses TensorFlow\n")
sys.path[:0] = [stub, sys.argv[1]]
import numpy as np
import HPCSimPickJobs as H
seconds, log, out = float(sys.argv[2]), sys.argv[3], {}
for backfil in (True, False):
    env = H.HPCEnv(backfil=backfil)
    env.seed(0)
    env.my_init(workload_file=log)
    rng = np.random.default_rng(0)
    crashed = 0

    def fresh():  # its reset schedules the window with SJF and F1, and may crash doing it
        global crashed
        while True:
            try:
                return env.reset()
            except ValueError:  # its cluster's node count goes negative on some windows
                crashed += 1

    fresh()
    steps = windows = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        valid = [i for i in range(H.MAX_QUEUE_SIZE) if env.pairs[i][0] is not None]
        try:
            done = env.step(valid[rng.integers(len(valid))])[2]
        except ValueError:
            crashed += 1
            fresh()
            continue
        steps += 1
        if done:
            windows += 1
            fresh()
    dt = time.perf_counter() - t0
    key = "easy" if backfil else "strict"
    out[key] = [steps / dt, windows * H.JOB_SEQUENCE_SIZE / dt, crashed]
print(json.dumps(out))
"""
"""Run by RLScheduler's interpreter: ``{backfilling: [decisions/s, jobs/s]}`` as JSON."""


def rlscheduler(seconds: float) -> dict[str, list[float]] | str:
    """RLScheduler's figures (decisions/s, jobs/s, windows it crashed on), or why there are
    none."""
    src, python = os.environ.get("RLSCHEDULER_SRC"), os.environ.get("RLSCHEDULER_PYTHON")
    if not src or not python:
        return "RLSCHEDULER_SRC and RLSCHEDULER_PYTHON are not set (module docstring)"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(DRIVER)
    args = [python, f.name, src, str(seconds), str(LOG)]
    done = subprocess.run(args, capture_output=True, text=True, check=False, cwd=src)
    Path(f.name).unlink()
    if done.returncode:
        return f"RLScheduler's environment failed: {done.stderr.strip()[-500:]}"
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def single(env: PickEnv, seconds: float) -> tuple[float, float]:
    """Decisions/s and jobs/s of one env with random valid picks."""
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    steps = windows = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pick = int(rng.choice(np.flatnonzero(env.action_masks())))
        if env.step(pick)[2]:
            windows += 1
            env.reset()
        steps += 1
    dt = time.perf_counter() - t0
    return steps / dt, windows * WINDOW / dt


def vector(env: PickVectorEnv, seconds: float) -> tuple[float, float]:
    """Decisions/s and jobs/s of ``env.num_envs`` envs stepped together, random valid picks."""
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    steps = windows = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        mask = info["action_mask"]
        picks = (rng.random(mask.shape) * mask).argmax(axis=1)
        _, _, ended, _, info = env.step(picks)
        steps += env.num_envs
        windows += int(ended.sum())
    dt = time.perf_counter() - t0
    return steps / dt, windows * WINDOW / dt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="time per measurement")
    args = parser.parse_args()
    if not LOG.is_file():
        sys.exit(f"{LOG} is needed (the plain SWF both environments read)")
    jobs = load_trace("swf", LOG, options=TraceOptions(time_step=1))[0].jobs
    warm = PickVectorEnv(jobs, 2, window=WINDOW)  # compile (or load the cached kernels) first
    vector(warm, 0.5)
    single(PickEnv(jobs, window=WINDOW), 0.5)
    rows: dict[str, tuple[float, float]] = {}
    for queue in ("easy", "strict"):
        for skip in (True, False):
            env = PickEnv(jobs, window=WINDOW, queue=queue, skip_forced=skip)
            rows[f"schedlab PickEnv {queue}{'' if skip else ', every decision'}"] = single(
                env, args.seconds
            )
        venv = PickVectorEnv(jobs, 64, window=WINDOW, queue=queue)
        rows[f"schedlab PickVectorEnv {queue}, 64 envs"] = vector(venv, args.seconds)
    theirs = rlscheduler(args.seconds)
    if isinstance(theirs, dict):
        for queue, (steps, done, _) in theirs.items():
            name = "backfil" if queue == "easy" else "no backfil"
            rows[f"RLScheduler HPCEnv {name}"] = (steps, done)
    print(f"KTH-SP2, windows of {WINDOW} jobs, random valid picks, {args.seconds:.0f} s each")
    print(f"{'environment':46s} {'decisions/s':>12s} {'jobs/s':>10s}")
    for name, (steps, done) in rows.items():
        print(f"{name:46s} {steps:12,.0f} {done:10,.0f}")
    if not isinstance(theirs, dict):
        print(f"no RLScheduler figures: {theirs}")
        return
    for queue, label in (("easy", "backfil"), ("strict", "no backfil")):
        steps, done, crashed = theirs[queue]
        if crashed:
            print(f"RLScheduler {label}: {crashed:.0f} windows ended in its ValueError (skipped)")
        one = rows[f"schedlab PickEnv {queue}, every decision"]
        many = rows[f"schedlab PickVectorEnv {queue}, 64 envs"]
        print(
            f"ratio to RLScheduler ({queue} vs {label}): one env, every decision "
            f"{one[0] / steps:.1f}x decisions/s, {one[1] / done:.1f}x jobs/s; "
            f"64 envs {many[0] / steps:.1f}x decisions/s, {many[1] / done:.1f}x jobs/s"
        )


if __name__ == "__main__":
    main()
