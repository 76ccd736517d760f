"""Benchmark: Liu et al.'s multi-cluster (ICPP'20) — simulated jobs/s and s per training episode.

1. **Heuristics**: RAN, RR and MAF on ``--episodes`` episodes of 1000 jobs (Uniform b = 33, the
   pattern's own rate), all episodes batched in one model (:func:`simulate`: model build, every
   decision through ``act_batch``, the per-job results table). Reported: simulated jobs/s.
2. **Greedy RL-LSFC** (the shipped ``liu-lsfc`` checkpoint, when present) on the same episodes:
   jobs/s. (An untrained network is no measure: it sends most jobs to one cluster, and the long
   queues make its episodes many times longer.)
3. **Training** at the paper's size (:func:`schedlab.policies.liu_value.train`'s loop: 4 episodes
   per round, ε-greedy rollout with values of every (buffered job, cluster) pair batched, action
   values, knowledge buffer, 2 Adam steps of batch 2000 per episode): seconds per episode, split
   into rollout and update, and the extrapolation to Liu's 1500 episodes (+ validation of 50
   episodes every 50).

Run with ``make bench`` (or ``python benchmarks/bench_liu.py [--episodes N --rounds R]``).
Timings on the shared 2-core machine are disturbed by other jobs: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.liu_baselines import MAF, RAN, RR
from schedlab.policies.liu_knowledge import KnowledgeBuffer, collect, update
from schedlab.policies.liu_networks import LSFC, LiuValuePolicy
from schedlab.policies.liu_value import in_memory_policy
from schedlab.policies.liu_value_config import LiuTrainConfig
from schedlab.policies.runtime import training_process
from schedlab.policies.shipped import shipped
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.run import simulate

TARGET_HOURS = 8.0
"""One working session: the 1500-episode training must fit in it (issue 12)."""


def heuristics(episodes: int) -> None:
    gen = LiuMultiClusterGenerator()
    js = gen.generate_rates([gen.natural_rate()], n_jobsets=episodes, seed=0)
    simulate(js, [MAF()])  # compiles or loads the kernels: not timed
    policies = [RAN(), RR(), MAF()]
    if shipped("liu-lsfc") is not None:
        policies.append(LiuValuePolicy(checkpoint="liu-lsfc"))
    for policy in policies:
        t0 = time.perf_counter()
        simulate(js, [policy])
        dt = time.perf_counter() - t0
        print(f"{policy.name:>22s}: {len(js) / dt:>10,.0f} simulated jobs/s ({dt:.2f} s)")


def training(rounds: int) -> None:
    config = LiuTrainConfig()
    torch.manual_seed(0)
    training_process(config.threads)
    gen = config.generator()
    net = LSFC()
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    weights = torch.tensor(config.weights)
    rng = np.random.default_rng(0)
    buffer = KnowledgeBuffer(config.buffer, 5, 105, 64)
    rows = []
    for r in range(rounds + 1):  # round 0 warms up (kernels, allocator): not timed
        js = gen.generate_rates([gen.natural_rate()], n_jobsets=config.envs, seed=r)
        t0 = time.perf_counter()
        model = MultiClusterModel.from_jobset(js)
        d = collect(model, net, weights, epsilon=0.3, guide=0.5, rng=rng, params=config.values)
        buffer.add(d)
        t1 = time.perf_counter()
        for _ in range(config.updates_per_episode * config.envs):
            update(net, opt, buffer.sample(config.batch, rng), config.weights)
        t2 = time.perf_counter()
        if r:
            rows.append(((t1 - t0) / config.envs, (t2 - t1) / config.envs))
    roll, upd = (float(np.median(c)) for c in zip(*rows, strict=True))
    t0 = time.perf_counter()
    val = gen.generate_rates([gen.natural_rate()], n_jobsets=config.eval_episodes, seed=99)
    spec = {
        "label": "val",
        "network": "lsfc",
        "weights": list(config.weights),
        "n_clusters": 5,
        "history": 105,
    }
    simulate(val, [in_memory_policy(net, spec)])
    val_s = time.perf_counter() - t0
    per_episode = roll + upd
    total = config.episodes * per_episode + config.episodes / config.eval_every * val_s
    print(
        f"training (paper size, {config.envs} episodes per round, batch {config.batch}, "
        f"{config.updates_per_episode} updates per episode, LSTM {config.lstm}, 1 thread): "
        f"{per_episode:.2f} s per episode (rollout {roll:.2f} s, updates {upd:.2f} s); "
        f"validation on {config.eval_episodes} episodes {val_s:.1f} s"
    )
    print(
        f"extrapolated 1500 episodes + validation every {config.eval_every}: "
        f"{total / 3600:.2f} h (target <= {TARGET_HOURS:.0f} h, one working session)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="episodes of the heuristics")
    parser.add_argument("--rounds", type=int, default=3, help="timed training rounds")
    args = parser.parse_args()
    heuristics(args.episodes)
    training(args.rounds)


if __name__ == "__main__":
    main()
