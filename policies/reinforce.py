"""DeepRM trained by REINFORCE (seed 000 §3.3, Figure 3; design.md §8 "Learning"), one file.

One iteration, in this order:

1. **rollout**: every training jobset is replayed by ``rollouts`` environments, all batched in
   one :class:`~schedlab.simulator.cluster.batched.BatchedEngine` (100 × 20 = 2000 envs by
   default); the policy network scores every active env at once and one action per env is sampled;
2. **returns and baseline**: per episode ``v_t = Σ_{s≥t} γ^{s−t} r_s`` over decision steps;
   the baseline ``b_t`` is the mean of ``v_t`` over the rollouts of the same jobset, episodes that
   ended earlier counting as 0 (zero padding, seed 000 footnote 4);
3. **update**: one RMSProp step on ``−Σ log π(a_t|s_t) · (v_t − b_t) / n_decisions``;
4. **validation** (every ``eval_every`` iterations) of the greedy policy on held-out jobsets
   drawn from another seed stream, and checkpoints.

Departures from the paper, on purpose: actions are sampled among the **valid** ones (masked
softmax; ``mask_invalid=False`` restores the paper's unmasked space, where an invalid action acts
as void); decisions where only void is valid are skipped by the engine (no choice, no gradient);
the episode's remaining reward is paid when the last job is placed (sums unchanged, γ = 1).
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
import torch

from schedlab.errors import SchedlabError
from schedlab.io import atomic_path, write_text_atomic
from schedlab.policies.deeprm import (
    CheckpointError,
    geometry_from_spec,
    load_network,
    sample_actions,
    save_checkpoint,
)
from schedlab.policies.networks import (
    Logits,
    make_network,
    masked_log_softmax,
    unique_observations,
)
from schedlab.policies.runtime import training_process
from schedlab.simulator.cluster.batched import BatchedEngine, RewardWeights
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage, Layout, ObsGeometry, SparseObs


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig:
    """Everything that determines a training run (written as ``config.json``)."""

    workload: str = "deeprm"
    """Generator name of the training and validation jobsets."""
    jobset_file: str = ""
    """A JobSet Parquet file (e.g. a trace from ``schedlab load``) to draw the jobsets from
    instead of generating them (:func:`file_parts`); ``workload``, ``load`` and ``window``
    are then unused."""
    workload_params: dict[str, Any] = field(default_factory=dict)
    """Generator parameters, e.g. ``{"variant": "paper"}``."""
    load: float = 0.7
    """Target offered load of the jobsets."""
    window: int = 50
    """Arrival window of a jobset (steps), passed to generators that have one."""
    n_jobsets: int = 100
    """Training jobsets."""
    rollouts: int = 20
    """N: episodes per jobset and iteration."""
    iterations: int = 1000
    """Training iterations (one batch update each)."""
    objective: Literal["slowdown", "completion"] = "slowdown"
    """Reward per step: −Σ 1/T_j over jobs in the system, or −|J| (seed 000 §3.4)."""
    gamma: float = 1.0
    """Discount over decision steps."""
    lr: float = 1e-3
    """RMSProp learning rate."""
    rho: float = 0.9
    """RMSProp decay of the squared-gradient average."""
    eps: float = 1e-9
    """RMSProp epsilon."""
    entropy_bonus: float = 0.0
    """Weight of the policy's entropy added to the objective (0: plain REINFORCE, as the
    papers); a small bonus keeps a network with many inputs from collapsing early."""
    network: str = "mlp"
    """Policy network (:data:`schedlab.policies.networks.NETWORKS`): ``mlp``, ``chen-cnn`` or
    ``cnn-plus`` (DeepRM_Plus's; its trainer ``deeprm-plus`` adds the cloning stage)."""
    layout: Layout = "deeprm"
    """Image layout: DeepRM's (``deeprm``) or Chen et al.'s (``reshaped``, seed 002 Fig. 1)."""
    machines: int = 1
    """m: identical machines (seed 002); the load refers to all of them."""
    machine_weight: float = 1.0
    """α of seed 002 Eq. 1: reward weight of jobs allocated to a machine (paper: 1)."""
    queue_weight: float = 1.0
    """β of seed 002 Eq. 1: reward weight of jobs waiting in the visible slots (paper: 2)."""
    backlog_weight: float = 1.0
    """γ of seed 002 Eq. 1: reward weight of jobs in the backlog (paper: 1)."""
    hidden: int = 20
    """Hidden units of the MLP."""
    init: str = ""
    """Checkpoint whose weights start the network (same network and geometry); empty: random."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """Arithmetic of convolutional networks (bfloat16: CPU autocast, faster); the MLP is float32."""
    mask_invalid: bool = True
    """Sample among valid actions only (False: the paper's unmasked space, invalid = void)."""
    slots: int = 10
    """M: visible job slots."""
    horizon: int = 20
    """T: image rows and earliest-fit horizon."""
    backlog: int = 60
    """Backlog jobs shown in the image."""
    eval_jobsets: int = 100
    """Held-out validation jobsets (another seed stream)."""
    eval_every: int = 1
    """Validate every this many iterations (and after the first and the last)."""
    eval_greedy: bool = False
    """Select ``best.pt`` on the greedy (argmax) policy instead of the sampled one."""
    checkpoint_every: int = 10
    """Write ``last.pt`` (for ``--resume``) every this many iterations."""
    seed: int = 0
    """Seed of network initialisation, jobsets and action sampling."""
    threads: int = 1
    """torch intra-op threads (1 is fastest on a small shared machine)."""

    def cluster(self) -> ClusterConfig:
        """The cluster geometry."""
        return ClusterConfig(
            slots=self.slots,
            horizon=self.horizon,
            backlog_view=self.backlog,
            machines=self.machines,
        )

    def rewards(self) -> RewardWeights:
        """Where-weights of the per-step reward."""
        return RewardWeights(
            alpha=self.machine_weight, beta=self.queue_weight, gamma=self.backlog_weight
        )

    def network_kwargs(self) -> dict[str, Any]:
        """Constructor arguments of the network."""
        return {"hidden": self.hidden} if self.network == "mlp" else {}


@dataclass(frozen=True, slots=True)
class Rollout:
    """Decisions of one batched rollout, in decision-step-major order."""

    obs: SparseObs | None
    """Observations of every decision (None when not recorded)."""
    mask: np.ndarray | None
    """bool, shape ``(n, n_actions)``: valid actions of every decision (None when not recorded)."""
    actions: np.ndarray
    """int64, shape ``(n,)``."""
    env: np.ndarray
    """int64, shape ``(n,)``: env of each decision."""
    step: np.ndarray
    """int64, shape ``(n,)``: decision index within its episode."""
    rewards: np.ndarray
    """float64, shape ``(L, B)``: reward of decision ``t`` of env ``b``, 0 after its end."""


@dataclass(frozen=True, slots=True)
class TrainResult:
    """What :func:`train` returns."""

    out_dir: Path
    curve: pl.DataFrame
    """One row per iteration (see :func:`train`)."""
    best_iteration: int
    best_value: float
    baselines: dict[str, float]
    """Validation value of the objective's metric (slowdown, or completion time) of the
    heuristics and of the initial policy."""
    seconds: float
    withholding: dict[str, Any] | None = None
    """Withheld-job statistics of the best policy on the validation jobsets (Figure 7a;
    :meth:`~schedlab.simulator.cluster.batched.BatchedEngine.withholding`); None without
    ``report``."""

    def summary(self, config: Mapping[str, Any]) -> str:
        """One line: the best validation value of ``config``'s objective and the baselines'."""
        base = ", ".join(f"{k} {v:.3f}" for k, v in self.baselines.items())
        return (
            f"best validation {config.get('objective', 'score')} {self.best_value:.3f} at "
            f"iteration {self.best_iteration} ({base})"
        )


# -- returns and baseline (seed 000 Figure 3) ---------------------------------------------------
def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """``v_t = r_t + γ v_{t+1}`` along axis 0; ``rewards`` shape ``(L, B)``, same output shape."""
    out = np.zeros_like(rewards, dtype=np.float64)
    acc = np.zeros(rewards.shape[1:])
    for t in range(rewards.shape[0] - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


def time_baseline(returns: np.ndarray, rollouts: int) -> np.ndarray:
    """Per-step baseline of each env, shape ``(L, B)``: mean over the ``rollouts`` envs of the
    same jobset (envs ``k·N .. k·N + N − 1``) at the same step; ended episodes count as 0."""
    L, B = returns.shape
    mean = returns.reshape(L, B // rollouts, rollouts).mean(axis=2)
    return np.repeat(mean, rollouts, axis=1)


def advantages(batch: Rollout, gamma: float, rollouts: int) -> np.ndarray:
    """``v_t − b_t`` of every decision, float32, shape ``(n,)``."""
    v = discounted_returns(batch.rewards, gamma)
    a = v - time_baseline(v, rollouts)
    return a[batch.step, batch.env].astype(np.float32)


# -- rollout --------------------------------------------------------------------------------
def collect(
    engine: BatchedEngine,
    logits_fn: Logits,
    rng: np.random.Generator | None,
    *,
    mask_invalid: bool,
    record: bool,
) -> Rollout:
    """Run every env of ``engine`` to the end; greedy (argmax) when ``rng`` is None."""
    view = image_view(logits_fn.geometry)
    B = engine.n_envs
    engine.reset()
    active = np.flatnonzero(~engine.done)
    rows: list[np.ndarray] = []
    parts: list[tuple[SparseObs, np.ndarray, np.ndarray, np.ndarray]] = []
    with torch.no_grad():
        table = logits_fn.table()
        while active.size:
            obs, mask = engine.observe(view, active), engine.action_mask(active)
            logits = logits_fn(obs, table).double().numpy()
            if mask_invalid:
                logits = np.where(mask, logits, -np.inf)
            actions = logits.argmax(axis=1) if rng is None else sample_actions(logits, rng)
            row = np.zeros(B)
            row[active] = engine.step(actions, active)
            rows.append(row)
            if record:
                parts.append((obs, mask, actions, active))
            active = active[~engine.done[active]]
    rewards = np.stack(rows) if rows else np.zeros((0, B))
    if not record:
        empty = np.zeros(0, dtype=np.int64)
        return Rollout(None, None, empty, empty, empty, rewards)
    obs = SparseObs.concat([p[0] for p in parts], logits_fn.geometry)
    step = np.concatenate([np.full(p[3].size, t, dtype=np.int64) for t, p in enumerate(parts)])
    return Rollout(
        obs, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]), step, rewards,
    )  # fmt: skip


def image_view(geometry: ObsGeometry) -> DeepRMImage:
    """The view that shows a network the images of ``geometry``."""
    return DeepRMImage(layout=geometry.layout, backlog_view=geometry.backlog_view)


def engine_geometry(engine: BatchedEngine, config: TrainConfig) -> ObsGeometry:
    """The image geometry of ``engine``'s cluster in ``config``'s layout."""
    view = DeepRMImage(layout=config.layout)
    return view.geometry(engine.snapshot(np.zeros(0, dtype=np.int64)))


# -- update ---------------------------------------------------------------------------------
def policy_gradient_step(
    logits_fn: Logits,
    optimizer: torch.optim.Optimizer,
    batch: Rollout,
    adv: np.ndarray,
    *,
    mask_invalid: bool,
    entropy_bonus: float = 0.0,
    chunk: int | None = None,
) -> tuple[float, float]:
    """One batch update on ``−Σ (log π(a|s) · adv + entropy_bonus · H(π(·|s))) / n``; returns
    (loss, mean entropy).

    Networks with a sparse path take ``chunk`` decisions at a time (default 65,536). Dense
    networks evaluate each distinct (observation, mask) once (:func:`grouped_weights`),
    ``logits_fn.chunk`` at a time: the same loss and gradient, summed in another order.
    """
    assert batch.obs is not None
    assert batch.mask is not None
    n = len(batch.actions)
    optimizer.zero_grad()
    if not logits_fn.sparse:
        return _grouped_step(
            logits_fn, optimizer, batch, adv, mask_invalid=mask_invalid, entropy_bonus=entropy_bonus
        )
    loss_sum = entropy_sum = 0.0
    chunk = chunk or 1 << 16
    for lo in range(0, n, chunk):
        sl = slice(lo, lo + chunk)
        logits = logits_fn(batch.obs.take(sl))
        mask = batch.mask[sl]
        logp = masked_log_softmax(logits, mask) if mask_invalid else logits.log_softmax(-1)
        chosen = logp.gather(1, torch.from_numpy(batch.actions[sl])[:, None]).squeeze(1)
        entropy = -(logp.exp() * logp.nan_to_num(neginf=0.0)).sum()
        loss = -((chosen * torch.from_numpy(adv[sl])).sum() + entropy_bonus * entropy) / n
        loss.backward()
        loss_sum += loss.item()
        entropy_sum += float(entropy.detach())
    optimizer.step()
    return loss_sum, entropy_sum / max(n, 1)


def grouped_weights(batch: Rollout, adv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decisions grouped by distinct (observation, mask): ``(first, counts, weights)``.

    ``first`` (int64, ``(U,)``) indexes one decision of each group, ``counts`` (int64, ``(U,)``)
    its size, and ``weights[u, a]`` (float64, ``(U, n_actions)``) sums ``adv`` over the group's
    decisions that took action ``a``, so ``Σ_i adv_i log π(a_i|s_i) = Σ_u Σ_a weights[u, a]
    log π(a|s_u)``.
    """
    assert batch.obs is not None
    assert batch.mask is not None
    first, inverse = unique_observations(batch.obs, extra=batch.mask)
    n_actions = batch.mask.shape[1]
    weights = np.bincount(
        inverse * n_actions + batch.actions, weights=adv, minlength=first.size * n_actions
    ).reshape(first.size, n_actions)
    return first, np.bincount(inverse, minlength=first.size), weights


def _grouped_step(
    logits_fn: Logits,
    optimizer: torch.optim.Optimizer,
    batch: Rollout,
    adv: np.ndarray,
    *,
    mask_invalid: bool,
    entropy_bonus: float,
) -> tuple[float, float]:
    assert batch.obs is not None
    assert batch.mask is not None
    n = max(len(batch.actions), 1)
    first, counts, weights = grouped_weights(batch, adv)
    loss_sum = entropy_sum = 0.0
    for lo in range(0, first.size, logits_fn.chunk):
        rows = first[lo : lo + logits_fn.chunk]
        logits = logits_fn(batch.obs.take(rows))
        mask = batch.mask[rows]
        logp = masked_log_softmax(logits, mask) if mask_invalid else logits.log_softmax(-1)
        w = torch.from_numpy(weights[lo : lo + logits_fn.chunk]).float()
        c = torch.from_numpy(counts[lo : lo + len(rows)]).float()
        h = -(logp.exp() * logp.nan_to_num(neginf=0.0)).sum(dim=1)
        entropy = (h * c).sum()
        loss = -(torch.where(w != 0, w * logp, 0.0).sum() + entropy_bonus * entropy) / n
        loss.backward()
        loss_sum += loss.item()
        entropy_sum += float(entropy.detach())
    optimizer.step()
    return loss_sum, entropy_sum / n


# -- the training loop ----------------------------------------------------------------------
def make_jobsets(config: TrainConfig) -> tuple[Any, Any, dict[str, int]]:
    """Training and validation JobSets from two independent seed streams of ``config.seed``,
    or the first two parts of ``config.jobset_file`` (:func:`file_parts`)."""
    from schedlab.registry import generators

    if config.jobset_file:
        sizes = [config.eval_jobsets, config.n_jobsets]
        val_js, train_js = file_parts(config.jobset_file, config.seed, sizes)[:2]
        return train_js, val_js, {"split": config.seed}
    train_ss, val_ss = np.random.SeedSequence([config.seed, 0xD33B]).spawn(2)
    seeds = {
        "train": int(train_ss.generate_state(1)[0]),
        "validation": int(val_ss.generate_state(1)[0]),
    }
    params = dict(config.workload_params)
    cls = generators.load(config.workload)
    known = {f.name for f in fields(cls)}
    for name, value in (("window", config.window), ("machines", config.machines)):
        if name not in params and name in known:
            params[name] = value
    gen = generators.create(config.workload, params, where="workload_params (-p)")
    train_js = gen.generate(config.load, n_jobsets=config.n_jobsets, seed=seeds["train"])
    val_js = gen.generate(config.load, n_jobsets=config.eval_jobsets, seed=seeds["validation"])
    return train_js, val_js, seeds


def file_parts(path: str | Path, seed: int, sizes: list[int]) -> list[Any]:
    """The jobsets of the JobSet file ``path`` in a random order (``seed``), cut into parts of
    ``sizes`` jobsets, then the rest (possibly empty): ``len(sizes) + 1`` JobSets. Used as
    validation, training (and cloning) jobsets, in that order, so the parts never overlap.

    Raises
    ------
    SchedlabError
        If the file holds fewer jobsets than ``sum(sizes)``.
    """
    import polars as pl

    from schedlab.jobset import JobSet

    js = JobSet.read_parquet(path)
    ids = np.array(js.jobset_ids, dtype=np.int64)
    if ids.size < sum(sizes):
        msg = f"{path}: {ids.size} non-empty jobsets, but {sizes} ({sum(sizes)}) are needed"
        raise SchedlabError(msg)
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x5917])).permutation(ids)
    cuts = np.cumsum([0, *sizes, ids.size - sum(sizes)])
    return [
        JobSet.create(js.jobs.filter(pl.col("jobset").is_in(order[a:b].tolist())), js.meta)
        for a, b in itertools.pairwise(cuts)
    ]


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
    engine: BatchedEngine, objective: Literal["slowdown", "completion"] = "slowdown"
) -> dict[str, float]:
    """Validation value of the baseline heuristics (SJF, Packer, Tetris*: the registry's
    ``baseline`` tag) on the same engine: mean over jobsets of the mean slowdown, or of the
    mean completion time (steps) for the ``completion`` objective."""
    from schedlab.registry import policies

    out = {}
    for name in policies.names(tag="baseline"):
        policy = policies.make(name)
        engine.reset()
        engine.run_heuristic(policy.score, policy.rule, policy.knob)
        out[name] = float(np.nanmean(engine.job_means()[_METRIC[objective]]))
    return out


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
        "train_config": asdict(config),
        "workload_seeds": seeds,
    }


def _check_resume(out: Path, config: TrainConfig, resume: bool) -> dict[str, Any] | None:
    """The saved training state to continue from, or None to start afresh."""
    last = out / "last.pt"
    if not resume:
        if last.exists():
            msg = f"{out} already holds a training run; pass --resume or choose another directory"
            raise SchedlabError(msg)
        return None
    if not last.exists():
        msg = (
            f"--resume: {out} holds no training state to continue (no last.pt); "
            "drop --resume to start a run there"
        )
        raise SchedlabError(msg)
    saved = json.loads((out / "config.json").read_text())["train_config"]
    diff = config_changes(saved, config)
    if diff:
        msg = f"--resume with a different config ({diff}); use the saved one or a new -o"
        raise SchedlabError(msg)
    try:
        return torch.load(last, map_location="cpu", weights_only=True)
    except Exception as exc:
        msg = f"{last}: not a readable training state ({type(exc).__name__}: {exc})"
        raise CheckpointError(msg) from exc


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


def config_changes(saved: dict[str, Any], config: Any) -> list[str]:
    """Fields of the dataclass ``config`` (except ``iterations``) that differ from the JSON
    ``saved`` config; a field the saved config lacks (added later) counts at its default."""
    mine = json.loads(json.dumps(asdict(config)))
    defaults = json.loads(json.dumps(asdict(type(config)())))
    return sorted(k for k in mine if k != "iterations" and saved.get(k, defaults[k]) != mine[k])


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
) -> TrainResult:
    """Train a DeepRM policy; write ``config.json``, ``curve.csv``/``.parquet``, ``best.pt``
    (best validation), ``final.pt``, ``last.pt`` (training state for ``resume``),
    ``baselines.json`` into ``out_dir``; with ``report``, also evaluate the best policy for the
    learning report (:attr:`TrainResult.withholding`; the caller draws the report, e.g.
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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = _check_resume(out, config, resume)
    torch.manual_seed(config.seed)
    training_process(config.threads)
    train_js, val_js, seeds = make_jobsets(config)
    cluster = config.cluster()
    kw = {"objective": config.objective, "rewards": config.rewards()}
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
    spec = _spec(config, engine, seeds, trainer_config)
    write_text_atomic(out / "config.json", json.dumps(spec, indent=2))
    mask, val_seed = config.mask_invalid, None if config.eval_greedy else _val_seed(config)
    if saved is None:
        start, best, best_it, rows = 0, math.inf, 0, []
        baselines = heuristic_baselines(val_engine, config.objective)
        initial = evaluate(val_engine, logits_fn, mask_invalid=mask, seed=val_seed)
        baselines["initial"] = initial[_METRIC[config.objective]]
        write_text_atomic(out / "baselines.json", json.dumps(baselines, indent=2))
    else:
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        rng.bit_generator.state = json.loads(saved["rng"])
        start, best, best_it = (
            int(saved["iteration"]),
            float(saved["best"]),
            int(saved["best_iteration"]),
        )
        rows = pl.read_csv(out / "curve.csv").filter(pl.col("iteration") <= start).to_dicts()
        baselines = json.loads((out / "baselines.json").read_text())
    bar = _progress(progress, start, config.iterations)
    for k in range(start + 1, config.iterations + 1):
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
            value = row["val_slowdown"] if config.objective == "slowdown" else row["val_completion"]
            if value < best:
                best, best_it = value, k
                save_checkpoint(out / "best.pt", net, {**spec, "iteration": k, "validation": value})
        row |= {"rollout_s": t1 - t0, "update_s": t2 - t1, "eval_s": time.perf_counter() - t2}
        rows.append(row)
        if k % config.checkpoint_every == 0 or k == config.iterations:
            _write_curve(out, rows)
            _save_state(out / "last.pt", net, optimizer, rng, k, best, best_it)
        bar.update(1)
        bar.set_postfix(
            mean=f"{row['mean_reward']:.1f}", max=f"{row['max_reward']:.1f}",
            val=f"{row['val_slowdown']:.3f}" if row["val_slowdown"] is not None else "-",
        )  # fmt: skip
    bar.close()
    curve = _write_curve(out, rows)
    save_checkpoint(out / "final.pt", net, {**spec, "iteration": config.iterations})
    withholding = _best_withholding(out, val_engine, config) if report else None
    seconds = time.perf_counter() - t_start
    return TrainResult(out, curve, best_it, best, baselines, seconds, withholding)


def _progress(enabled: bool, start: int, total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=start, desc="train", unit="it", disable=not enabled or None)


def _write_curve(out: Path, rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {k: pl.Float64 for k in ("val_slowdown", "val_completion", "val_greedy_slowdown")}
    curve = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    with atomic_path(out / "curve.csv") as tmp:
        curve.write_csv(tmp)
    with atomic_path(out / "curve.parquet") as tmp:
        curve.write_parquet(tmp)
    return curve


def _save_state(
    path: Path, net: torch.nn.Module, optimizer: torch.optim.Optimizer,
    rng: np.random.Generator, iteration: int, best: float, best_it: int,
) -> None:  # fmt: skip
    state = {
        "iteration": iteration,
        "model": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": json.dumps(rng.bit_generator.state),
        "best": best,
        "best_iteration": best_it,
    }
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


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
