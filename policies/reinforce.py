"""DeepRM trained by REINFORCE (Mao et al. 2016, §3.3, Figure 3; design.md §8 "Learning"), one file.

One iteration, in this order:

1. **rollout**: every training jobset is replayed by ``rollouts`` environments, all batched in
   one :class:`~schedlab.simulator.cluster.batched.BatchedEngine` (100 × 20 = 2000 envs by
   default); the policy network scores every active env at once and one action per env is sampled;
2. **returns and baseline**: per episode ``v_t = Σ_{s≥t} γ^{s−t} r_s`` over decision steps;
   the baseline ``b_t`` is the mean of ``v_t`` over the rollouts of the same jobset, episodes that
   ended earlier counting as 0 (zero padding, Mao et al. 2016, footnote 4);
3. **update**: one RMSProp step on ``−Σ log π(a_t|s_t) · (v_t − b_t) / n_decisions``;
4. **validation** (every ``eval_every`` iterations) of the greedy policy on held-out jobsets
   drawn from another seed stream, and checkpoints.

Departures from the paper, on purpose: actions are sampled among the **valid** ones (masked
softmax; ``mask_invalid=False`` restores the paper's unmasked space, where an invalid action acts
as void); decisions where only void is valid are skipped by the engine (no choice, no gradient);
the episode's remaining reward is paid when the last job is placed (sums unchanged, γ = 1).

Steps 1–3 are :mod:`schedlab.policies.policy_gradient`'s; this module is the loop, validation
and checkpoints.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
import torch

from schedlab.jobset import JobSet
from schedlab.params import flat
from schedlab.policies import training
from schedlab.policies.deeprm import (
    CheckpointError,
    geometry_from_spec,
    load_network,
    save_checkpoint,
)
from schedlab.policies.networks import (
    Logits,
    make_network,
)
from schedlab.policies.policy_gradient import (
    advantages,
    collect,
    engine_geometry,
    policy_gradient_step,
)
from schedlab.policies.reinforce_config import TrainConfig, make_jobsets
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate
from schedlab.simulator.views.deeprm_image import ObsGeometry


# -- the training loop ----------------------------------------------------------------------
def evaluate(
    engine: BatchedEngine, logits_fn: Logits, *, mask_invalid: bool, seed: int | None
) -> tuple[float, float]:
    """The policy on every env, sampled from ``default_rng(seed)`` (greedy when ``seed`` is
    None): mean over jobsets of the mean slowdown and of the mean completion time (steps)."""
    rng = None if seed is None else np.random.default_rng(seed)
    collect(engine, logits_fn, rng, mask_invalid=mask_invalid, record=False)
    slowdown, completion = engine.job_means()
    return float(np.nanmean(slowdown)), float(np.nanmean(completion))


def heuristic_baselines(
    jobset: JobSet,
    cluster: ClusterConfig,
    objective: Literal["slowdown", "completion"] = "slowdown",
) -> dict[str, float]:
    """Validation value of the baseline heuristics (SJF, Packer, Tetris*: the registry's
    ``baseline`` tag) on the validation jobsets, under the greedy discipline on ``cluster``
    (what the agent sees: its slots and machines): mean over jobsets of the mean slowdown, or of
    the mean completion time (steps) for the ``completion`` objective."""
    from schedlab.registry import policies

    names = policies.names(tag="baseline")
    metric = "slowdown" if objective == "slowdown" else "completion"
    results = simulate(jobset, [policies.make(n) for n in names], cluster)
    means = (
        results.table.group_by("policy", "jobset")
        .agg(pl.col(metric).mean())
        .group_by("policy")
        .agg(pl.col(metric).mean())
    )
    value = dict(means.iter_rows())
    return {name: float(value[name]) for name in names}


_METRIC = {"slowdown": 0, "completion": 1}
"""Index of an objective's metric in :meth:`BatchedEngine.job_means` and :func:`evaluate`."""


def _spec(
    config: TrainConfig,
    engine: BatchedEngine,
    seeds: dict[str, int],
    trainer_config: dict[str, Any] | None,
) -> dict[str, Any]:
    extra = {} if trainer_config is None else {"trainer_config": trainer_config}
    return {
        **extra,
        "network": config.network,
        "network_kwargs": config.network_kwargs(),
        "geometry": engine_geometry(engine, config).to_json(),
        "mask_invalid": config.mask_invalid,
        "objective": config.objective,
        "train_config": flat(config),
        "workload_seeds": seeds,
    }


def _load_initial(net: torch.nn.Module, config: TrainConfig, geometry: ObsGeometry) -> None:
    """Copy the weights of ``config.init`` into ``net`` (same network and geometry)."""
    init, spec = load_network(config.init)
    if spec.get("network") != config.network or geometry_from_spec(spec) != geometry:
        msg = (
            f"--init {config.init}: a {spec.get('network')!r} network for "
            f"{spec.get('geometry')}, but this run trains {config.network!r} on "
            f"{geometry.to_json()}"
        )
        raise CheckpointError(msg)
    net.load_state_dict(init.state_dict())


def _val_seed(config: TrainConfig) -> int:
    """Seed of the sampled validation: the same draws at every validation (less noise)."""
    return int(np.random.SeedSequence([config.seed, 0x7A1]).generate_state(1)[0])


def _validate_now(k: int, config: TrainConfig) -> bool:
    return k == 1 or k % config.eval_every == 0 or k == config.iterations


def train(
    config: TrainConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    progress: bool = True,
    report: bool = True,
    trainer_config: dict[str, Any] | None = None,
) -> training.TrainResult:
    """Train a DeepRM policy; write ``config.json``, ``curve.csv``/``.parquet``, ``best.pt``
    (best validation), ``final.pt``, ``last.pt`` (training state for ``resume``),
    ``baselines.json`` into ``out_dir``; with ``report``, also evaluate the best policy for the
    learning report (``details["withholding"]`` of the result; the caller draws the report, e.g.
    :func:`schedlab.reports.learning.write_training_report`). A trainer that runs this one as
    a stage passes its own config as ``trainer_config`` (JSON-able): it is written beside
    ``train_config`` in ``config.json`` and the checkpoints, and ``schedlab train --resume``
    reads it back.

    Curve columns: ``iteration`` (1-based: updates done), ``mean_reward``/``max_reward`` (total
    reward of the training episodes, before the update), ``train_slowdown`` (their mean),
    ``val_slowdown``/``val_completion`` (policy after the update on held-out jobsets, sampled,
    or greedy with ``eval_greedy``; null when not validated), ``val_greedy_slowdown``,
    ``entropy``, ``loss``, ``decisions`` (env steps), ``rollout_s``,
    ``update_s`` and ``eval_s`` (seconds).
    """
    t_start = time.perf_counter()
    out, saved = training.open_run(out_dir, config, resume=resume, budget="iterations")
    selection = selection_of(config)
    train_js, val_js, seeds = make_jobsets(config)
    cluster = config.cluster()
    kw: dict[str, Any] = {
        "objective": config.objective,
        "rewards": config.rewards(),
        "queue": config.queue,
    }
    engine = BatchedEngine.from_jobset(train_js, cluster, repeats=config.rollouts, **kw)
    val_engine = BatchedEngine.from_jobset(val_js, cluster, **kw)
    geometry = engine_geometry(engine, config)
    net = make_network(config.network, geometry, **config.network_kwargs())
    if config.init:
        _load_initial(net, config, geometry)
    logits_fn = Logits(net, geometry, precision=config.precision)
    optimizer = torch.optim.RMSprop(
        net.parameters(), lr=config.lr, alpha=config.rho, eps=config.eps
    )
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0xAC7]))
    spec = training.write_spec(out, _spec(config, engine, seeds, trainer_config), selection)
    mask, val_seed = config.mask_invalid, None if config.eval_greedy else _val_seed(config)

    def baselines() -> dict[str, float]:
        values = heuristic_baselines(val_js, cluster, config.objective)
        initial = evaluate(val_engine, logits_fn, mask_invalid=mask, seed=val_seed)
        return {**values, "initial": initial[_METRIC[config.objective]]}

    run = training.start(
        out, saved, selection, net=net, optimizer=optimizer, rng=rng, baselines=baselines
    )
    bar = training.progress(progress, run.step, config.iterations, desc="train", unit="it")
    for k in range(run.step + 1, config.iterations + 1):
        t0 = time.perf_counter()
        batch = collect(engine, logits_fn, rng, mask_invalid=mask, record=True)
        t1 = time.perf_counter()
        adv = advantages(batch, config.gamma, config.rollouts)
        loss, entropy = policy_gradient_step(
            logits_fn, optimizer, batch, adv, mask_invalid=mask, entropy_bonus=config.entropy_bonus
        )
        t2 = time.perf_counter()
        totals = batch.rewards.sum(axis=0)
        row: dict[str, Any] = {
            "iteration": k,
            "mean_reward": float(totals.mean()),
            "max_reward": float(totals.max()),
            "train_slowdown": float(np.nanmean(engine.job_means()[0])),
            "val_slowdown": None,
            "val_completion": None,
            "val_greedy_slowdown": None,
            "entropy": entropy,
            "loss": loss,
            "decisions": len(batch.actions),
        }
        if _validate_now(k, config):
            sampled = evaluate(val_engine, logits_fn, mask_invalid=mask, seed=val_seed)
            greedy = evaluate(val_engine, logits_fn, mask_invalid=mask, seed=None)
            row["val_greedy_slowdown"] = greedy[0]
            row["val_slowdown"], row["val_completion"] = greedy if config.eval_greedy else sampled
            value = row[selection.metric]
            if run.offer(value, k, selection):
                save_checkpoint(out / "best.pt", net, {**spec, "iteration": k, "validation": value})
        run.record(row, k, (t0, t1, t2))
        if k % config.checkpoint_every == 0 or k == config.iterations:
            _write_curve(out, run.rows)
            training.save_state(out, run, net=net, optimizer=optimizer, rng=rng)
        bar.update(1)
        bar.set_postfix(
            mean=f"{row['mean_reward']:.1f}",
            max=f"{row['max_reward']:.1f}",
            val=f"{row['val_slowdown']:.3f}" if row["val_slowdown"] is not None else "-",
        )
    bar.close()
    curve = _write_curve(out, run.rows)
    save_checkpoint(out / "final.pt", net, {**spec, "iteration": config.iterations})
    details = {"withholding": _best_withholding(out, val_engine, config)} if report else {}
    return run.result(out, curve, selection, t_start, details=details)


def selection_of(config: TrainConfig) -> training.Selection:
    """The metric a run selects ``best.pt`` on: its objective's validation value, lower better."""
    return training.Selection(metric=f"val_{config.objective}")


def _write_curve(out: Path, rows: list[dict[str, Any]]) -> pl.DataFrame:
    nullable = ("val_slowdown", "val_completion", "val_greedy_slowdown")
    return training.write_curve(out, rows, nullable=nullable, parquet=True)


def _best_withholding(out: Path, engine: BatchedEngine, config: TrainConfig) -> dict[str, Any]:
    """Withheld jobs of the best policy on the validation jobsets (sampled as validated)."""
    from schedlab.policies.deeprm import load_network

    best = out / "best.pt"
    net, _ = load_network(best if best.exists() else out / "final.pt")
    seed = None if config.eval_greedy else _val_seed(config)
    geometry = engine_geometry(engine, config)
    logits_fn = Logits(net, geometry, precision=config.precision)
    evaluate(engine, logits_fn, mask_invalid=config.mask_invalid, seed=seed)
    return engine.withholding()


SMALL = {
    "n_jobsets": 2,
    "rollouts": 3,
    "iterations": 2,
    "eval_jobsets": 2,
    "checkpoint_every": 1,
    "slots": 3,
    "horizon": 8,
    "backlog": 8,
    "window": 12,
}
"""The smallest meaningful run (:attr:`~schedlab.policies.training.Trainer.small`)."""
TRAINER = training.Trainer(config=TrainConfig, train=train, budget="iterations", small=SMALL)
"""DeepRM's REINFORCE (:data:`schedlab.registry.trainers` ``deeprm``)."""
