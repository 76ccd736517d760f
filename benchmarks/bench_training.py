"""Benchmark: seconds per DeepRM training iteration at the paper's size (issue: learned policies 1).

One iteration = 100 jobsets x 20 rollouts (2000 episodes batched in one engine) of the DeepRM
workload at load 0.7 (M = 10, T = 20, backlog 60, window 50), the returns and per-step baseline,
and one RMSProp update of the 20-unit MLP: exactly :func:`schedlab.policies.reinforce.train`'s
loop without validation or file output. Reported: seconds per iteration (median over the timed
iterations; rollout and update separately) and environment steps (agent decisions) per second.
Reference: the paper's 80 s per iteration on a 24-core server (seed 000 §4.3); target: <= 10 s
on this 2-core machine.

Run with ``make bench`` (or ``python benchmarks/bench_training.py [--iterations N]``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from schedlab.policies.networks import Logits, make_network
from schedlab.policies.reinforce import (
    TrainConfig,
    advantages,
    collect,
    make_jobsets,
    policy_gradient_step,
)
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.views.deeprm_image import DeepRMImage

PAPER_S = 80.0
TARGET_S = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations")
    parser.add_argument("--load", type=float, default=0.7)
    parser.add_argument("--jobsets", type=int, default=100)
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    config = TrainConfig(load=args.load, n_jobsets=args.jobsets, rollouts=args.rollouts)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    train_js, _, _ = make_jobsets(config)
    engine = BatchedEngine.from_jobset(train_js, config.cluster(), repeats=config.rollouts)
    geometry = DeepRMImage().geometry(engine.snapshot())
    net = make_network("mlp", geometry, hidden=config.hidden)
    logits_fn = Logits(net, geometry)
    opt = torch.optim.RMSprop(net.parameters(), lr=config.lr, alpha=config.rho, eps=config.eps)
    rng = np.random.default_rng(0)
    print(
        f"workload: {len(train_js.jobset_ids)} jobsets x {config.rollouts} rollouts = "
        f"{engine.n_envs} episodes per iteration, load {config.load}, M = {config.slots}, "
        f"T = {config.horizon}, input {geometry.shape}; torch threads {args.threads}"
    )
    rows = []
    for k in range(args.iterations + 1):  # iteration 0 loads the compiled kernels: not timed
        t0 = time.perf_counter()
        batch = collect(engine, logits_fn, rng, mask_invalid=True, record=True)
        t1 = time.perf_counter()
        adv = advantages(batch, config.gamma, config.rollouts)
        policy_gradient_step(logits_fn, opt, batch, adv, mask_invalid=True)
        t2 = time.perf_counter()
        if k:
            rows.append((t1 - t0, t2 - t1, t2 - t0, len(batch.actions)))
    roll, upd, total, steps = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    per_it = float(np.median(total))
    print(
        f"{'iteration':>9s} {'rollout s':>10s} {'update s':>9s} {'total s':>8s} {'env steps':>10s}"
    )
    for i, r in enumerate(rows, 1):
        print(f"{i:9d} {r[0]:10.2f} {r[1]:9.2f} {r[2]:8.2f} {r[3]:10,d}")
    print(
        f"median {per_it:.2f} s per iteration (rollout {np.median(roll):.2f} s, update "
        f"{np.median(upd):.2f} s); {np.sum(steps) / np.sum(roll):,.0f} env steps/s in rollouts, "
        f"{np.sum(steps) / np.sum(total):,.0f} env steps/s end to end"
    )
    verdict = "PASS" if per_it <= TARGET_S else "FAIL"
    print(
        f"{TARGET_S / per_it:.1f}x faster than the {TARGET_S:.0f} s target ({verdict}); "
        f"{PAPER_S / per_it:.0f}x faster than the paper's {PAPER_S:.0f} s per iteration "
        "(24 cores)"
    )


if __name__ == "__main__":
    main()
