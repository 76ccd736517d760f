"""``schedlab train jobscore``: PPO (Schulman et al. 2017) for the per-job scoring network of
:mod:`.jobscore` on the pick environment (RLScheduler's setting, Zhang et al. SC'20), one file in
CleanRL's spirit.

One iteration, in this order:

1. **rollout**: ``envs`` pick environments (:class:`~schedlab.simulator.pick.env.PickVectorEnv`:
   windows of ``window`` training jobs, each episode under a discipline drawn from ``queues``)
   take ``steps`` decisions each; a pick is sampled from the softmax of the candidates' scores
   (Gumbel-max with the run's numpy generator, so ``--resume`` restores the sampling); rewards
   (``−bsld_j / n`` as each job starts) are divided by the running standard deviation of the
   discounted return (CleanRL's reward normalisation);
2. **advantages**: GAE(γ, λ) over each environment's decisions, cut where an episode ends (the
   environments reset in the same step);
3. **update**: ``epochs`` passes of ``minibatches`` shuffled minibatches on PPO's clipped
   surrogate, the value loss and an entropy bonus, with Adam and gradient-norm clipping (of the
   scoring network and of the critic apart);
4. **validation** (every ``eval_every`` iterations) of the highest-score policy on the
   validation windows under every discipline of ``queues``: ``best.pt`` is the network of the
   lowest mean over the disciplines of the mean per-window metric.

A resumed run restores the network, the optimiser, the generator and the reward scale, and
starts new episodes (those in progress when it stopped are dropped).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from schedlab.io import write_text_atomic
from schedlab.params import flat
from schedlab.policies import training
from schedlab.policies.jobscore import JobScoreNet, network_spec, save_network
from schedlab.policies.jobscore_config import (
    JobScoreConfig,
    WindowBaseline,
    heuristic_values,
    make_data,
    trace_path,
)
from schedlab.policies.runtime import torch_device
from schedlab.simulator.pick.engine import PickEngine, candidates
from schedlab.simulator.pick.env import PickVectorEnv
from schedlab.simulator.pick.features import N_FEATURES, PickView

_VIEW = PickView()


class RewardScale:
    """Divides rewards by the running standard deviation of each env's discounted return."""

    def __init__(self, n_envs: int, gamma: float, state: dict[str, float] | None = None) -> None:
        self.gamma, self.ret = gamma, np.zeros(n_envs)
        self.count, self.mean, self.var = 1e-4, 0.0, 1.0
        if state:
            self.count, self.mean, self.var = state["count"], state["mean"], state["var"]

    def __call__(self, rewards: np.ndarray, done: np.ndarray) -> np.ndarray:
        self.ret = self.ret * self.gamma + rewards
        n, mean, var = self.ret.size, float(self.ret.mean()), float(self.ret.var())
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total
        self.ret[done] = 0.0
        scaled: np.ndarray = rewards / np.sqrt(self.var + 1e-8)
        return scaled

    def state(self) -> dict[str, float]:
        """What a resumed run continues from."""
        return {"count": self.count, "mean": self.mean, "var": self.var}


def sample(logits: torch.Tensor, rng: np.random.Generator) -> np.ndarray:
    """One pick per row of ``logits`` (``-inf`` outside the candidates) by Gumbel-max."""
    gumbel = -np.log(-np.log(rng.uniform(1e-12, 1.0, size=logits.shape)))
    return np.asarray((logits.double().cpu().numpy() + gumbel).argmax(axis=1), dtype=np.int64)


def _device(net: JobScoreNet) -> torch.device:
    return next(net.parameters()).device


# -- rollout and advantages ---------------------------------------------------------------------
def collect(
    env: PickVectorEnv,
    net: JobScoreNet,
    state: list[np.ndarray],
    config: JobScoreConfig,
    rng: np.random.Generator,
    scale: RewardScale,
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """``steps`` decisions of every env from ``state`` (observations and masks, updated in
    place): the batch (``(T·B, ...)``) and the metric of each episode that ended."""
    T, B, K = config.steps, config.envs, config.visible
    dev = _device(net)
    obs = np.empty((T, B, K, N_FEATURES), np.float32)
    mask = np.empty((T, B, K), bool)
    actions, logp, values = (np.empty((T, B), np.int64), np.empty((T, B)), np.empty((T + 1, B)))
    rewards, dones, ended = np.empty((T, B)), np.empty((T, B), bool), []
    for t in range(T):
        obs[t], mask[t] = state
        with torch.no_grad():
            logits, value = net(torch.from_numpy(obs[t]).to(dev), torch.from_numpy(mask[t]).to(dev))
        actions[t] = sample(logits, rng)
        logp[t] = torch.log_softmax(logits, 1).double().cpu().numpy()[np.arange(B), actions[t]]
        values[t] = value.double().cpu().numpy()
        state[0], raw, dones[t], _, info = env.step(actions[t])
        state[1] = info["action_mask"]
        rewards[t] = scale(raw, dones[t])
        if dones[t].any():
            ended += info["final_info"][config.objective][dones[t]].tolist()
    with torch.no_grad():
        last = net.value(torch.from_numpy(state[0]).to(dev), torch.from_numpy(state[1]).to(dev))
        values[T] = last.double().cpu().numpy()
    adv = gae(rewards, values, dones, config.gamma, config.gae_lambda)
    batch = {
        "obs": obs,
        "mask": mask,
        "actions": actions,
        "logp": logp,
        "adv": adv,
        "returns": adv + values[:T],
    }
    flat = {k: torch.from_numpy(v.reshape(T * B, *v.shape[2:])).to(dev) for k, v in batch.items()}
    return flat, ended


def gae(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Advantages ``(T, B)``; ``values`` ``(T + 1, B)`` (the last: after the rollout);
    ``dones[t]``: the episode ended with decision ``t`` (the next value is a new episode's)."""
    adv, last = np.zeros_like(rewards), np.zeros(rewards.shape[1])
    for t in range(rewards.shape[0] - 1, -1, -1):
        going = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * going - values[t]
        last = delta + gamma * lam * going * last
        adv[t] = last
    return adv


# -- update ---------------------------------------------------------------------------------
def update(
    net: JobScoreNet,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    config: JobScoreConfig,
    rng: np.random.Generator,
) -> dict[str, float]:
    """PPO's epochs over ``batch``; mean losses, entropy, approximate KL and clip fraction."""
    n = batch["actions"].shape[0]
    size = max(n // config.minibatches, 1)
    parts = [list(net.actor.parameters()), [*net.embed.parameters(), *net.head.parameters()]]
    stats: dict[str, list[float]] = {
        k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")
    }
    for _ in range(config.epochs):
        order = rng.permutation(n)
        for lo in range(0, n, size):
            idx = torch.from_numpy(order[lo : lo + size]).to(batch["actions"].device)
            logits, value = net(batch["obs"][idx], batch["mask"][idx])
            logp_all = torch.log_softmax(logits, 1)
            logp = logp_all.gather(1, batch["actions"][idx, None]).squeeze(1)
            ratio = torch.exp(logp - batch["logp"][idx].float())
            adv = batch["adv"][idx].float()
            adv = (adv - adv.mean()) / (adv.std() + 1e-8) if adv.numel() > 1 else adv
            clipped = torch.clamp(ratio, 1 - config.clip, 1 + config.clip)
            policy_loss = -torch.min(ratio * adv, clipped * adv).mean()
            value_loss = 0.5 * ((value - batch["returns"][idx].float()) ** 2).mean()
            p = logp_all.exp()
            entropy = -(p * logp_all.nan_to_num(neginf=0.0)).sum(1).mean()
            loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
            optimizer.zero_grad()
            loss.backward()
            for part in parts:  # apart: the value's gradient must not shrink the policy's
                torch.nn.utils.clip_grad_norm_(part, config.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                log_ratio = logp - batch["logp"][idx].float()
                stats["approx_kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clipfrac"].append(float(((ratio - 1).abs() > config.clip).float().mean()))
            stats["policy_loss"].append(policy_loss.item())
            stats["value_loss"].append(value_loss.item())
            stats["entropy"].append(entropy.item())
    return {k: float(np.mean(v)) for k, v in stats.items()}


# -- validation -----------------------------------------------------------------------------
def validate(net: JobScoreNet, engines: Mapping[str, PickEngine], metric: str) -> dict[str, float]:
    """Mean over the windows of the per-window ``metric`` of the highest-score policy, per
    discipline (one engine each, one env per validation window)."""
    out, dev = {}, _device(net)
    for queue, engine in engines.items():
        engine.reset()
        active = np.flatnonzero(~engine.done)
        while active.size:
            mask = candidates(engine.action_mask(active))
            with torch.no_grad():
                logits = net.logits(
                    torch.from_numpy(engine.observe(_VIEW, active)).to(dev),
                    torch.from_numpy(mask).to(dev),
                )
            engine.step(logits.argmax(dim=1).cpu().numpy() + 1, active)
            active = active[~engine.done[active]]
        out[queue] = float(np.nanmean(engine.window_means()[metric]))
    return out


# -- the training loop ----------------------------------------------------------------------
def train(
    config: JobScoreConfig, out_dir: str | Path, *, resume: bool = False, progress: bool = True
) -> training.TrainResult:
    """Train a per-job scoring network with PPO; write ``config.json``, ``curve.csv``,
    ``baselines.json`` (each heuristic's validation value, averaged over the disciplines;
    ``baselines_by_queue.json``: per discipline), ``best.pt``, ``final.pt`` and ``last.pt``.

    Curve columns: ``iteration``, ``val_<objective>`` (mean over the disciplines) and
    ``val_<objective>_<queue>`` (null when not validated), ``train_<objective>`` and
    ``mean_reward``/``max_reward`` (episodes ended in the iteration: their mean metric, and
    minus it), ``episodes``, ``decisions``, ``policy_loss``, ``value_loss``, ``entropy``,
    ``approx_kl``, ``clipfrac``, ``lr``, ``rollout_s``, ``update_s``, ``eval_s``.
    """
    t_start = time.perf_counter()
    device = torch_device(config.device)
    trace_path(config.workload)  # a workload naming nothing fails here, before the run directory
    out, saved = training.open_run(out_dir, config, resume=resume, budget="iterations")
    metric, queues = config.objective, config.queue_list()
    selection = training.Selection(metric=f"val_{metric}")
    train_js, val_js, where = make_data(config)
    pick = config.pick()
    baseline = None
    if config.relative_to is not None:
        baseline = WindowBaseline(train_js, config.relative_to, metric)
    env = PickVectorEnv(
        train_js, config.envs, pick, window=config.window, queue=queues, baseline=baseline
    )
    engines: dict[str, PickEngine] = {
        q: PickEngine.for_jobsets(val_js, replace(pick, queue=q)) for q in queues
    }
    net = JobScoreNet(N_FEATURES, config.hidden, config.critic).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr, eps=1e-5)
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0x9B0]))
    spec = {
        **network_spec(net, config.hidden, config.critic),
        "train_config": flat(config),
        "data": where,
    }
    spec = training.write_spec(out, spec, selection)

    def baselines() -> dict[str, float]:
        values = heuristic_values(val_js, queues, metric)
        initial = validate(net, engines, metric)
        by_queue = {q: {**values[q], "initial": initial[q]} for q in queues}
        write_text_atomic(out / "baselines_by_queue.json", json.dumps(by_queue, indent=2))
        return {k: float(np.mean([by_queue[q][k] for q in queues])) for k in by_queue[queues[0]]}

    run = training.start(
        out, saved, selection, net=net, optimizer=optimizer, rng=rng, baselines=baselines
    )
    scale = RewardScale(config.envs, config.gamma, saved.get("reward_scale") if saved else None)
    obs, info = env.reset(seed=int(rng.integers(2**31)))
    state = [obs, info["action_mask"]]
    bar = training.progress(progress, run.step, config.iterations, desc="train", unit="it")
    for k in range(run.step + 1, config.iterations + 1):
        lr = config.lr * (1 - (k - 1) / config.iterations) if config.anneal_lr else config.lr
        for group in optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        batch, ended = collect(env, net, state, config, rng, scale)
        t1 = time.perf_counter()
        stats = update(net, optimizer, batch, config, rng)
        t2 = time.perf_counter()
        done = float(np.mean(ended)) if ended else None
        row: dict[str, Any] = {
            "iteration": k,
            selection.metric: None,
            **{f"val_{metric}_{q}": None for q in queues},
            f"train_{metric}": done,
            "mean_reward": None if done is None else -done,
            "max_reward": -min(ended) if ended else None,
            "episodes": len(ended),
            "decisions": config.steps * config.envs,
            **stats,
            "lr": lr,
        }
        if k == 1 or k % config.eval_every == 0 or k == config.iterations:
            values = validate(net, engines, metric)
            row |= {f"val_{metric}_{q}": v for q, v in values.items()}
            row[selection.metric] = value = float(np.mean(list(values.values())))
            if run.offer(value, k, selection):
                save_network(out / "best.pt", net, {**spec, "iteration": k, "validation": values})
        run.record(row, k, (t0, t1, t2))
        if k % config.checkpoint_every == 0 or k == config.iterations:
            _write_curve(out, run.rows, metric, queues)
            _save_state(out, run, net, optimizer, rng, scale)
        bar.update(1)
        bar.set_postfix(train=f"{done:.2f}" if done is not None else "-", best=f"{run.best:.2f}")
    bar.close()
    curve = _write_curve(out, run.rows, metric, queues)
    save_network(out / "final.pt", net, {**spec, "iteration": config.iterations})
    return run.result(out, curve, selection, t_start)


def _write_curve(out: Path, rows: list[dict[str, Any]], metric: str, queues: Sequence[str]) -> Any:
    nullable = [
        f"val_{metric}",
        *(f"val_{metric}_{q}" for q in queues),
        f"train_{metric}",
        "mean_reward",
        "max_reward",
    ]
    return training.write_curve(out, rows, nullable=nullable)


def _save_state(
    out: Path,
    run: training.Progress,
    net: JobScoreNet,
    optimizer: torch.optim.Optimizer,
    rng: np.random.Generator,
    scale: RewardScale,
) -> None:
    """:func:`training.save_state`'s contents and the reward scale."""
    state = {
        "step": run.step,
        "model": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": json.dumps(rng.bit_generator.state),
        "best": run.best,
        "best_step": run.best_step,
        "reward_scale": scale.state(),
    }
    training.save_torch(out / training.STATE, state)


SMALL = {
    "iterations": 2,
    "envs": 2,
    "steps": 16,
    "window": 40,
    "val_windows": 2,
    "val_size": 60,
    "visible": 16,
    "eval_every": 1,
    "checkpoint_every": 1,
    "minibatches": 2,
    "epochs": 1,
}
"""The smallest meaningful run (:attr:`~schedlab.policies.training.Trainer.small`)."""
TRAINER = training.Trainer(config=JobScoreConfig, train=train, budget="iterations", small=SMALL)
"""PPO for the per-job scoring network (:data:`schedlab.registry.trainers` ``jobscore``)."""
