"""Liu et al.'s value learning for the multi-cluster (ICPP'20, §4.2–§4.4, Figure 5), one file.

One **round** simulates ``envs`` episodes together, in this order:

1. **workload**: ``envs`` fresh jobsets of the ``liu-multicluster`` generator (Uniform 1..33 by
   default, 1000 jobs, the pattern's own rate) — randomised workloads, a new draw every round;
2. **rollout**: at every moment with buffered jobs the network's values of every (buffered job,
   cluster) pair are computed in one batch and the best pair is dispatched; with probability
   ``ε`` the action is perturbed instead, by MAF's action with probability ``guide`` and by a
   uniformly random (job, cluster) otherwise (the modified ε-greedy of §4.4); the state of the
   dispatched job (Table 1) and its cluster are recorded;
3. **action values** after the fact: once the episodes end, ``v1, v2, v3`` of every dispatch
   (:func:`~schedlab.simulator.multicluster.values.action_values`) join the knowledge buffer
   (``buffer`` most recent decisions, 50,000);
4. **updates**: ``updates_per_episode · envs`` Adam steps, each on ``batch`` (2,000) decisions
   drawn uniformly from the buffer, minimising the squared error of the dispatched cluster's
   estimates (each of the three heads on its component for RL-LSFC; the weighted sum for
   RL-FC), in units of the targets' standard deviations (fixed from the first round);
5. **learning rate** ``lr`` (1e-4) until ``lr_switch`` episodes (1,000), then ``lr_late`` (1e-5);
6. **validation** every ``eval_every`` episodes: the greedy policy on ``eval_episodes`` held-out
   episodes (another seed stream); TMDL, AJER and S_log; ``best.pt`` keeps the best mean S_log.

The paper leaves unsaid: ε and its schedule (ours: linear from ``epsilon`` 0.5 to
``epsilon_end`` 0.05 over ``epsilon_decay`` episodes), the MAF share of perturbations (0.5),
the updates per episode (2), the LSTM size (32), β and the ``P`` of Eq. 1
(:class:`~schedlab.simulator.multicluster.values.ValueParams`) and the objective weights
(RL-LSFC ``(1, 0.5, 5)``: ``v3`` weighs 5 per job as AJER does in S, whose ``50·(100 − AJER)``
is ``−5 · Σ_j R_j`` for 1000 jobs; RL-LSFCb ``(1, 0.5, 2.5)``, more weight on deadlines).

The config is :class:`~schedlab.policies.liu_value_config.LiuTrainConfig`; steps 2–4 are
:mod:`schedlab.policies.liu_knowledge`'s; this module is the loop, validation and checkpoints.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch

from schedlab.params import flat
from schedlab.policies import training
from schedlab.policies.deeprm import CheckpointError, save_checkpoint
from schedlab.policies.liu_baselines import MAF, RAN, RR
from schedlab.policies.liu_knowledge import KnowledgeBuffer, collect, head_targets, update
from schedlab.policies.liu_networks import FORMAT, LiuValuePolicy, make_network
from schedlab.policies.liu_value_config import LiuTrainConfig
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.score import mean_scores, s_log


def evaluate(jobset: Any, policy: Any) -> dict[str, float]:
    """Mean TMDL, AJER and S_log of ``policy`` over the episodes of ``jobset``."""
    from schedlab.simulator.multicluster.run import simulate

    return mean_scores(simulate(jobset, [policy]).table)


def in_memory_policy(net: torch.nn.Module, spec: dict[str, Any]) -> LiuValuePolicy:
    """A :class:`LiuValuePolicy` acting with ``net`` (no checkpoint file)."""
    policy = LiuValuePolicy(checkpoint="<in memory>")
    policy._loaded = (net, spec)
    return policy


def _spec(config: LiuTrainConfig, mc: MultiClusterConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"n_clusters": mc.n_clusters, "history": mc.history}
    if config.network == "lsfc":
        kwargs["lstm"] = config.lstm
    return {
        "label": config.label,
        "network": config.network,
        "network_kwargs": kwargs,
        "weights": list(config.weights),
        "n_clusters": mc.n_clusters,
        "history": mc.history,
        "clusters": asdict(mc),
        "values": asdict(config.values),
        "train_config": json.loads(json.dumps(flat(config))),
    }


SELECTION = training.Selection(metric="val_s_log", higher_is_better=True, step="episode")
"""Runs keep the network of the highest mean validation S_log (``best.pt``)."""


def train(
    config: LiuTrainConfig, out_dir: str | Path, *, resume: bool = False, progress: bool = True
) -> training.TrainResult:
    """Train a Liu value network; write ``config.json``, ``curve.csv``, ``baselines.json``,
    ``best.pt`` (best validation S_log), ``final.pt`` and ``last.pt`` + ``buffer.pt`` (for
    ``resume``) into ``out_dir``; the caller draws the learning curve (Figure 6) with
    :func:`schedlab.reports.liu.report_training`.

    Curve columns: ``episode`` (episodes trained), ``epsilon``, ``lr``, ``loss`` (mean over the
    round's updates, null before the first), ``train_tmdl``/``train_ajer`` (the round's
    ε-greedy episodes), ``val_tmdl``, ``val_ajer``, ``val_s_log`` (greedy, held-out; null when
    not validated), ``rollout_s``, ``update_s``, ``eval_s``.
    """
    t_start = time.perf_counter()
    out, saved = training.open_run(out_dir, config, resume=resume, budget="episodes")
    if saved is not None:
        saved["buffer"] = _load_buffer(out)
    gen, mc = config.generator(), MultiClusterConfig()
    spec = _spec(config, mc)
    net = make_network(config.network, **spec["network_kwargs"])
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0xAC7]))
    weights = torch.tensor(config.weights if config.network == "lsfc" else [1.0])
    val_js = gen.generate_rates(
        [gen.natural_rate()], n_jobsets=config.eval_episodes, seed=_stream(config.seed, 0x7A1)
    )
    training.write_spec(out, spec, SELECTION)
    run = training.start(
        out,
        saved,
        SELECTION,
        net=net,
        optimizer=optimizer,
        rng=rng,
        baselines=lambda: (
            {p.name: evaluate(val_js, p) for p in (RAN(), RR(), MAF())}
            | {"initial": evaluate(val_js, in_memory_policy(net, spec))}
        ),
    )
    buffer: KnowledgeBuffer | None = None
    if saved is not None:
        buffer = _buffer_like(saved["buffer"], config)
        buffer.load_state_dict(saved["buffer"])
    episode = run.step
    bar = training.progress(progress, episode, config.episodes, desc="train liu", unit="ep")
    params = config.values
    while episode < config.episodes:
        t0 = time.perf_counter()
        js = gen.generate_rates(
            [gen.natural_rate()], n_jobsets=config.envs, seed=_stream(config.seed, episode)
        )
        eps = config.epsilon_at(episode)
        model = MultiClusterModel.from_jobset(js, mc)
        net.eval()
        d = collect(model, net, weights, epsilon=eps, guide=config.guide, rng=rng, params=params)
        train_pe = _episode_metrics(model)
        if buffer is None:
            buffer = KnowledgeBuffer(config.buffer, mc.n_clusters, mc.history, d.job.shape[1])
            _set_scale(net, d.values, config.weights)
        buffer.add(d)
        episode += config.envs
        for group in optimizer.param_groups:
            group["lr"] = config.lr_at(episode)
        t1 = time.perf_counter()
        net.train()
        losses = [
            update(net, optimizer, buffer.sample(config.batch, rng), config.weights)
            for _ in range(config.updates_per_episode * config.envs)
        ]
        net.eval()
        t2 = time.perf_counter()
        row: dict[str, Any] = {
            "episode": episode,
            "epsilon": eps,
            "lr": config.lr_at(episode),
            "loss": float(np.mean(losses)) if losses else None,
            **train_pe,
            "val_tmdl": None,
            "val_ajer": None,
            "val_s_log": None,
        }
        last_round = episode >= config.episodes
        if episode == config.envs or episode % config.eval_every < config.envs or last_round:
            val = evaluate(val_js, in_memory_policy(net, spec))
            row |= {f"val_{k}": v for k, v in val.items()}
            if run.offer(val["s_log"], episode, SELECTION):
                meta = {**spec, "episode": episode, "validation": val}
                save_checkpoint(out / "best.pt", net, meta, fmt=FORMAT)
        run.record(row, episode, (t0, t1, t2))
        if episode % config.checkpoint_every < config.envs or last_round:
            _write_curve(out, run.rows)
            training.save_torch(out / "buffer.pt", buffer.state_dict())
            training.save_state(out, run, net=net, optimizer=optimizer, rng=rng)
        bar.update(config.envs)
        bar.set_postfix(loss=row["loss"], val=row["val_s_log"], eps=round(eps, 3))
    bar.close()
    curve = _write_curve(out, run.rows)
    save_checkpoint(out / "final.pt", net, {**spec, "episode": episode}, fmt=FORMAT)
    baselines = training.read_baselines(out, SELECTION)
    return run.result(out, curve, SELECTION, t_start, baselines=baselines)


def _stream(seed: int, key: int) -> int:
    """An int seed for the workload of round ``key`` (or the validation set)."""
    return int(np.random.SeedSequence([seed, key]).generate_state(1)[0])


def _episode_metrics(model: MultiClusterModel) -> dict[str, float]:
    """Mean TMDL and AJER of the episodes just run."""
    log, jobs = model.executions(), model.jobs
    env = np.searchsorted(jobs.bounds, log.job, side="right") - 1
    tmdl = np.bincount(env, log.missed, model.n_envs)
    rows = np.arange(jobs.arrival.size)
    ratio = jobs.exec_time[rows, model.placements().target] / jobs.standard_time
    ajer: np.ndarray = 100 * np.bincount(
        np.repeat(np.arange(model.n_envs), np.diff(jobs.bounds)), ratio
    )
    ajer /= np.diff(jobs.bounds)
    return {
        "train_tmdl": float(tmdl.mean()),
        "train_ajer": float(ajer.mean()),
        "train_s_log": float(s_log(tmdl, ajer).mean()),
    }


def _set_scale(net: torch.nn.Module, values: np.ndarray, weights: tuple[float, ...]) -> None:
    """The networks' output units: the first targets' standard deviations (floored)."""
    scale = net.scale
    assert isinstance(scale, torch.Tensor)  # a buffer of the value networks
    targets = head_targets(values, int(scale.numel()), weights)  # type: ignore[arg-type]
    std = np.maximum(targets.std(axis=0), 1e-3)
    scale.copy_(torch.from_numpy(std).float())


def _buffer_like(state: dict[str, Any], config: LiuTrainConfig) -> KnowledgeBuffer:
    _, c, h = state["history"].shape
    return KnowledgeBuffer(config.buffer, c, h, state["job"].shape[1])


def _write_curve(out: Path, rows: list[dict[str, Any]]) -> pl.DataFrame:
    return training.write_curve(out, rows, nullable=("loss", "val_tmdl", "val_ajer", "val_s_log"))


def _load_buffer(out: Path) -> dict[str, Any]:
    """The knowledge buffer saved beside the training state."""
    try:
        buffer: dict[str, Any] = torch.load(
            out / "buffer.pt", map_location="cpu", weights_only=True
        )
        return buffer
    except Exception as exc:
        msg = f"{out}: not a readable training state ({type(exc).__name__}: {exc})"
        raise CheckpointError(msg) from exc


SMALL = {
    "episodes": 2,
    "envs": 1,
    "batch": 32,
    "buffer": 200,
    "eval_episodes": 1,
    "eval_every": 1,
    "checkpoint_every": 1,
    "workload_params": {"n_jobs": 20},
    "lstm": 4,
}
"""The smallest meaningful run (:attr:`~schedlab.policies.training.Trainer.small`)."""
TRAINER = training.Trainer(config=LiuTrainConfig, train=train, budget="episodes", small=SMALL)
"""Liu et al.'s value learning (:data:`schedlab.registry.trainers` ``liu``)."""
