"""Benchmark: DeepRM_Plus's costs — behaviour cloning and REINFORCE iterations with the CNN.

Measured (issue 11, "Speed"):

* **cloning**: expert demonstrations recorded per second (SJF in the batched engine's agent
  mode, image observations), and cloning throughput in training pairs per second (forward,
  cross-entropy, backward and Adam step of the CNN of Table I on minibatches of 256);
* **one REINFORCE iteration** — rollout of every env, returns and per-step baseline, one RMSProp
  update — exactly :func:`schedlab.policies.reinforce.train`'s loop without validation and
  with its process set-up (:func:`schedlab.policies.runtime.training_process`): the median of
  ``--iterations`` iterations after a first one (printed apart: it also pays one-time costs,
  such as oneDNN's set-up for every new batch size), at the
  paper's size (25 jobsets of the Poisson workload at λ = 0.7, 5–50 jobs each, × 20 rollouts)
  and at DeepRM's size (100 jobsets × 20 rollouts), with the rollout/update split, decisions and
  distinct decisions (the CNN evaluates each distinct state of a batch once). The network starts
  from random weights, or from a cloned checkpoint (``--init``; by default the shipped
  ``deeprm-plus-1.4`` when present), whose near-deterministic rollouts repeat many states;
* the same iteration with DeepRM's 20-unit MLP for comparison (Guo et al. claim 37.5% less
  training time per epoch than DeepRM).

Target: a paper-size iteration in <= 5 s on 2 cores. Run with ``make bench`` or
``python benchmarks/bench_deeprm_plus.py [--iterations N] [--precision bfloat16]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import polars as pl
import torch
from timing import reinforce_iteration

from schedlab.jobset import JobSet
from schedlab.policies.deeprm import load_network, resolve_checkpoint
from schedlab.policies.imitation import clone, deduplicate, demonstrate, split
from schedlab.policies.networks import Logits, make_network, unique_observations
from schedlab.policies.policy_gradient import collect, engine_geometry, image_view
from schedlab.policies.reinforce import TrainConfig
from schedlab.policies.reinforce_config import make_jobsets
from schedlab.policies.runtime import training_process
from schedlab.registry import make_policy
from schedlab.simulator.cluster.batched import BatchedEngine

TARGET_S = 5.0
PAPER = TrainConfig(workload="poisson", load=1.2915, n_jobsets=25, rollouts=20)
"""The paper's iteration: λ = 0.7 ("140%"), 25 jobsets × 20 rollouts."""
DEEPRM = replace(PAPER, n_jobsets=100)
"""DeepRM's iteration size: 100 jobsets × 20 rollouts."""


def bench_cloning(precision: str, pairs: int) -> None:
    """Demonstrations per second and cloning pairs per second."""
    config = replace(PAPER, n_jobsets=200)
    jobsets, _, _ = make_jobsets(config)
    engine = BatchedEngine.from_jobset(jobsets, config.cluster())
    geometry = engine_geometry(engine, config)
    expert = make_policy("sjf")
    demonstrate(engine, expert, image_view(geometry))  # loads the compiled kernels
    t0 = time.perf_counter()
    demos = demonstrate(engine, expert, image_view(geometry))
    t_demo = time.perf_counter() - t0
    distinct, _ = deduplicate(demos)
    rng = np.random.default_rng(0)
    train_part, test_part = split(distinct.take(slice(0, pairs)), rng)
    logits_fn = Logits(make_network("cnn-plus", geometry), geometry, precision=precision)
    result = clone(logits_fn, train_part, test_part, threshold=2.0, max_epochs=1, rng=rng)
    print(
        f"cloning: {len(demos):,} SJF decisions of 200 jobsets recorded in {t_demo:.2f} s "
        f"({len(demos) / t_demo:,.0f} decisions/s); one epoch over {len(train_part):,} pairs "
        f"({precision}): {result.curve['samples_per_s'][0]:,.0f} pairs/s"
    )


def bench_iteration(
    config: TrainConfig, network: str, init: str, precision: str, iterations: int
) -> float:
    """Median seconds per iteration (printed with its split)."""
    jobsets, _, _ = make_jobsets(config)
    engine = BatchedEngine.from_jobset(jobsets, config.cluster(), repeats=config.rollouts)
    geometry = engine_geometry(engine, config)
    torch.manual_seed(0)
    net = make_network(network, geometry, **({"hidden": 20} if network == "mlp" else {}))
    if init:
        net.load_state_dict(load_network(resolve_checkpoint(init))[0].state_dict())
    logits_fn = Logits(net, geometry, precision=precision)
    opt = torch.optim.RMSprop(net.parameters(), lr=config.lr, alpha=config.rho, eps=config.eps)
    rng = np.random.default_rng(0)
    first = JobSet.create(
        jobsets.jobs.filter(pl.col("jobset") == jobsets.jobset_ids[0]), jobsets.meta
    )
    warm = BatchedEngine.from_jobset(first, config.cluster(), repeats=2)
    collect(warm, logits_fn, rng, mask_invalid=True, record=False)  # loads compiled kernels
    first_s = sum(reinforce_iteration(engine, logits_fn, opt, config, rng)[:2])
    rows = []
    for _ in range(iterations):
        roll, upd, batch = reinforce_iteration(engine, logits_fn, opt, config, rng)
        assert batch.obs is not None
        distinct = unique_observations(batch.obs, extra=batch.mask)[0].size
        rows.append((roll, upd, roll + upd, len(batch.actions), distinct))
    roll, upd, total, steps, uniq = (np.median(np.array(c, float)) for c in zip(*rows, strict=True))
    label = f"{network} ({'from ' + init if init else 'random init'}, {precision})"
    print(
        f"  {label:<44s} {total:7.2f} s/it  (rollout {roll:5.2f} s, update {upd:6.2f} s)  "
        f"{steps:8,.0f} decisions, {uniq:8,.0f} distinct ({uniq / steps:4.0%})  "
        f"target/actual {TARGET_S / total:5.2f}  (first iteration {first_s:.2f} s)"
    )
    return float(total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations", type=int, default=3, help="timed iterations per case, after a first"
    )
    parser.add_argument("--precision", default="bfloat16", choices=["float32", "bfloat16"])
    parser.add_argument(
        "--threads", type=int, default=2, help="torch threads (the target: 2 cores)"
    )
    parser.add_argument("--init", default="deeprm-plus-1.4", help="cloned/trained checkpoint")
    parser.add_argument("--pairs", type=int, default=8000, help="cloning pairs timed")
    parser.add_argument("--skip-deeprm-size", action="store_true")
    args = parser.parse_args()
    training_process(args.threads)
    init = args.init if resolve_checkpoint(args.init).is_file() else ""
    print(f"torch threads {args.threads}; target: paper-size iteration <= {TARGET_S:.0f} s")
    bench_cloning(args.precision, args.pairs)
    sizes = [("paper size: 25 jobsets x 20 rollouts, Poisson λ = 0.7", PAPER)]
    if not args.skip_deeprm_size:
        sizes.append(("DeepRM size: 100 jobsets x 20 rollouts, Poisson λ = 0.7", DEEPRM))
    for title, config in sizes:
        print(title)
        mlp = bench_iteration(config, "mlp", "", "float32", args.iterations)
        cases = [("", args.precision)] + ([(init, args.precision)] if init else [])
        if args.precision != "float32":
            cases.append(("", "float32"))
        for start, precision in cases:
            cnn = bench_iteration(config, "cnn-plus", start, precision, args.iterations)
            print(f"    CNN / MLP time per iteration: {cnn / mlp:.1f}x")


if __name__ == "__main__":
    main()
