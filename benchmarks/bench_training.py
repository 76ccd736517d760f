"""Benchmark: seconds per REINFORCE training iteration of DeepRM and of Chen et al.'s agent.

One iteration = 100 jobsets x 20 rollouts (2000 episodes batched in one engine) of the DeepRM
workload at load 0.7, the returns and per-step baseline, and one RMSProp update: exactly
:func:`schedlab.policies.reinforce.train`'s loop without validation or file output.

* **DeepRM** (issue: learned policies 1): M = 10, T = 20, the 20-unit MLP. Reference: the
  paper's 80 s per iteration on a 24-core server (Mao et al. 2016, §4.3); target: <= 10 s here.
* **Chen et al.** (issue 16): two machines, M = 5, the reshaped image (20 × 144) and the CNN
  input layer of Table I, α = 1, β = 2, γ = 1. Target: the shipped checkpoint trainable in
  well under an hour on 2 cores.

Reported: seconds per iteration (median over the timed iterations; rollout and update
separately) and environment steps (agent decisions) per second.

Run with ``make bench`` (or ``python benchmarks/bench_training.py [--iterations N]``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from timing import reinforce_iteration

from schedlab.policies.networks import Logits, make_network
from schedlab.policies.reinforce import (
    TrainConfig,
)
from schedlab.policies.reinforce_config import make_jobsets
from schedlab.policies.runtime import training_process
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.views.deeprm_image import DeepRMImage

PAPER_S = 80.0
TARGET_S = 10.0


CHEN_ITERATIONS = 500
"""Iterations of the shipped two-machine run (experiments/chen_fig3.toml)."""


def time_iterations(config: TrainConfig, iterations: int) -> tuple[float, list[tuple]]:
    """Median seconds per iteration of ``config``'s training loop, and per-iteration rows
    ``(rollout s, update s, total s, decisions)``."""
    torch.manual_seed(0)
    train_js, _, _ = make_jobsets(config)
    engine = BatchedEngine.from_jobset(
        train_js, config.cluster(), repeats=config.rollouts, rewards=config.rewards()
    )
    geometry = DeepRMImage(layout=config.layout).geometry(engine.snapshot())
    net = make_network(config.network, geometry, **config.network_kwargs())
    logits_fn = Logits(net, geometry)
    opt = torch.optim.RMSprop(net.parameters(), lr=config.lr, alpha=config.rho, eps=config.eps)
    rng = np.random.default_rng(0)
    print(
        f"{config.network} on {config.machines} machine(s): {len(train_js.jobset_ids)} jobsets x "
        f"{config.rollouts} rollouts = {engine.n_envs} episodes per iteration, load "
        f"{config.load}, M = {config.slots}, T = {config.horizon}, input {geometry.shape}"
    )
    rows = []
    for k in range(iterations + 1):  # iteration 0 loads the compiled kernels: not timed
        roll, upd, batch = reinforce_iteration(engine, logits_fn, opt, config, rng)
        if k:
            rows.append((roll, upd, roll + upd, len(batch.actions)))
    return report(rows), rows


def report(rows: list[tuple]) -> float:
    """Print the per-iteration table and the split; return the median seconds per iteration."""
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
    return per_it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations")
    parser.add_argument("--jobsets", type=int, default=100)
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    training_process(args.threads)
    print(f"torch threads {args.threads}")
    size = {"n_jobsets": args.jobsets, "rollouts": args.rollouts}
    per_it, _ = time_iterations(TrainConfig(load=0.7, **size), args.iterations)
    verdict = "PASS" if per_it <= TARGET_S else "FAIL"
    print(
        f"DeepRM: {TARGET_S / per_it:.1f}x faster than the {TARGET_S:.0f} s target ({verdict}); "
        f"{PAPER_S / per_it:.0f}x faster than the paper's {PAPER_S:.0f} s per iteration "
        "(24 cores)"
    )
    chen = TrainConfig(
        load=0.7,
        slots=5,
        machines=2,
        layout="reshaped",
        network="chen-cnn",
        queue_weight=2.0,
        **size,
    )
    per_it, _ = time_iterations(chen, max(2, args.iterations // 2))
    hours = per_it * CHEN_ITERATIONS / 3600
    print(
        f"Chen et al. (2 machines, CNN): {per_it:.1f} s per iteration at 100 x 20; "
        f"{CHEN_ITERATIONS} iterations = {hours:.2f} h at this size (target: well under 1 h)"
    )


if __name__ == "__main__":
    main()
