"""Train sb3-contrib's MaskablePPO on schedlab/DeepRM-v0, then compare it with SJF in schedlab.

    pip install '.[rl]'                     # in schedlab's source tree: SB3, sb3-contrib
    python examples/train_maskable_ppo.py               # 5,000 steps -> runs/maskable_ppo/model.zip
    schedlab experiment run examples/maskable_ppo.toml -o runs/ppo
    schedlab report runs/ppo -o out/ppo                 # the agent beside SJF, paired statistics

One file, top to bottom (CleanRL style): the arguments, the environment, the agent, training,
saving. The agent sees what every schedlab agent sees (docs/environments.md): the DeepRM image
(float32, 20 x 224), 11 actions (0 = let time pass, 1 + q = start the job of slot q at its
earliest fit) and their mask, which MaskablePPO reads from ``env.action_masks()``. The reward is
``-sum(1 / duration)`` over the jobs in the system per time step, so an episode's return is minus
the total slowdown of its jobs. The saved model runs in schedlab as the policy
``sb3:runs/maskable_ppo/model.zip`` (``schedlab simulate``, experiment specs,
``schedlab.simulate``); ``examples/maskable_ppo.toml`` names it beside SJF, FCFS and Tetris* on
held-out jobsets.

A few thousand steps are a smoke run, not a trained scheduler: expect the agent to stay behind
SJF (the shipped ``deeprm-0.7`` policy took 1000 REINFORCE iterations of 2,000 episodes).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO

import schedlab  # registers the schedlab/... environment ids


@dataclass(frozen=True, kw_only=True, slots=True)
class Args:
    """What the run is made of (written to ``config.json`` beside the model)."""

    steps: int = 5_000  # Environment steps (decisions) of training.
    seed: int = 0  # Seed of the network, the sampling and the environment's choice of jobsets.
    env_id: str = "schedlab/DeepRM-v0"  # Registered environment id.
    load: float = 0.7  # Offered load of the training jobsets.
    jobsets: int = 100  # Training jobsets (one per episode, drawn at each reset).
    workload_seed: int = 0  # Seed of the training jobsets (the spec evaluates on another seed).
    n_steps: int = 512  # Steps per rollout (one PPO update each).
    batch_size: int = 64  # Minibatch size of the PPO update.
    learning_rate: float = 3e-4  # Adam's step size.
    gamma: float = 1.0  # Discount: 1 makes the return minus the total slowdown (DeepRM's).
    ent_coef: float = 0.01  # Entropy bonus.
    threads: int = 1  # Torch threads (a 64-unit MLP gains nothing from more).
    out: str = "runs/maskable_ppo"  # Folder of ``model.zip`` and ``config.json``.


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(Args):
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(
            flag, type=type(f.default), default=f.default, help=f"(default {f.default})"
        )
    return Args(**vars(parser.parse_args()))


def main(args: Args) -> Path:
    torch.set_num_threads(args.threads)
    env = gym.make(
        args.env_id, load=args.load, jobsets=args.jobsets, workload_seed=args.workload_seed
    )
    agent = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        gamma=args.gamma,
        ent_coef=args.ent_coef,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )

    t0 = time.perf_counter()
    agent.learn(total_timesteps=args.steps)
    wall = time.perf_counter() - t0
    returns = [e["r"] for e in agent.ep_info_buffer]
    mean = sum(returns) / len(returns) if returns else float("nan")
    print(
        f"trained {args.steps:,} steps in {wall:.1f} s; mean return of the last "
        f"{len(returns)} episodes {mean:.1f} (minus their total slowdown)"
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    agent.save(out / "model.zip")
    config = {**asdict(args), "train_seconds": wall, "schedlab": schedlab.__version__}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"wrote {out / 'model.zip'}; in schedlab it is the policy sb3:{out / 'model.zip'}")
    return out / "model.zip"


if __name__ == "__main__":
    main(parse_args())
