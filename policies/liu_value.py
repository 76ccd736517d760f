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
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
import torch

from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies import training
from schedlab.policies.deeprm import CheckpointError, save_checkpoint
from schedlab.policies.liu_baselines import MAF, RAN, RR
from schedlab.policies.liu_networks import FORMAT, LiuValuePolicy, best_actions, make_network
from schedlab.policies.runtime import training_process
from schedlab.simulator.model import rollout
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.score import mean_scores, s_log
from schedlab.simulator.multicluster.values import ValueParams, action_values, scalarise
from schedlab.simulator.multicluster.views import LiuStateView


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuTrainConfig:
    """Everything that determines a training run (written as ``config.json``)."""

    label: str = "rl-lsfc"
    """Name of the trained policy in results."""
    network: Literal["lsfc", "fc"] = "lsfc"
    """RL-LSFC's LSTM + shared FC + three heads, or RL-FC's fully connected net."""
    weights: tuple[float, float, float] = (1.0, 0.5, 5.0)
    """Objective weights ``w`` of ``Σ w_k v_k`` (RL-LSFCb: ``(1, 0.5, 2.5)``)."""
    lstm: int = 32
    """LSTM hidden units (RL-LSFC)."""
    workload_params: dict[str, Any] = field(default_factory=dict)
    """Parameters of the ``liu-multicluster`` generator (e.g. ``{"b": 33}``)."""
    episodes: int = 1500
    """Training episodes (Liu's E)."""
    envs: int = 4
    """Episodes simulated together per round."""
    buffer: int = 50_000
    """Knowledge buffer capacity, decisions (K)."""
    batch: int = 2_000
    """Decisions per update (B)."""
    updates_per_episode: int = 2
    """Adam steps per training episode."""
    lr: float = 1e-4
    """Adam learning rate until ``lr_switch`` episodes."""
    lr_late: float = 1e-5
    """Adam learning rate afterwards."""
    lr_switch: int = 1000
    """Episode at which the learning rate drops."""
    epsilon: float = 0.5
    """Initial probability of perturbing an action."""
    epsilon_end: float = 0.05
    """Final probability of perturbing an action."""
    epsilon_decay: int = 1000
    """Episodes over which ε falls linearly to ``epsilon_end``."""
    guide: float = 0.5
    """Probability that a perturbation is MAF's action (else uniformly random)."""
    beta: float = 0.9
    """β of the action values."""
    p_m: float = 2.0
    """``P_m`` of both events (IH, IC) in Eq. 1."""
    p_psi: float = 2.0
    """``P_ψ`` of both events in Eq. 1."""
    eval_episodes: int = 50
    """Held-out validation episodes."""
    eval_every: int = 50
    """Validate every this many episodes (and after the first and last round)."""
    checkpoint_every: int = 50
    """Write ``last.pt`` and ``buffer.pt`` (for ``resume``) every this many episodes."""
    seed: int = 0
    """Seed of initialisation, workloads and exploration."""
    threads: int = 1
    """torch intra-op threads."""

    def value_params(self) -> ValueParams:
        """β and the ``P`` of Eq. 1."""
        p, q = self.p_m, self.p_psi
        return ValueParams(beta=self.beta, p_m_ih=p, p_m_ic=p, p_psi_ih=q, p_psi_ic=q)

    def epsilon_at(self, episode: int) -> float:
        """ε for the round starting at ``episode`` (0-based)."""
        frac = min(1.0, episode / max(self.epsilon_decay, 1))
        return self.epsilon + (self.epsilon_end - self.epsilon) * frac

    def lr_at(self, episode: int) -> float:
        """Learning rate after ``episode`` episodes."""
        return self.lr if episode < self.lr_switch else self.lr_late

    def generator(self) -> LiuMultiClusterGenerator:
        """The workload generator."""
        from schedlab.registry import generators

        gen: LiuMultiClusterGenerator = generators.create(
            "liu-multicluster", self.workload_params, where="workload_params (-p)"
        )
        return gen


@dataclass(frozen=True, slots=True)
class Decisions:
    """Recorded dispatches of a rollout (``n`` of them) and their action values."""

    history: np.ndarray
    """float32 ``(n, C, H)``."""
    clusters: np.ndarray
    """float32 ``(n, C, 5)``."""
    job: np.ndarray
    """float32 ``(n, 4 + 12·C)``."""
    cluster: np.ndarray
    """int64 ``(n,)``: the cluster chosen."""
    values: np.ndarray
    """float64 ``(n, 3)``: v1, v2, v3 of the dispatch."""


class KnowledgeBuffer:
    """The most recent ``capacity`` decisions (a ring), sampled uniformly."""

    def __init__(self, capacity: int, n_clusters: int, history: int, job: int) -> None:
        self.capacity = capacity
        self.size = 0
        self.head = 0
        self.history = np.zeros((capacity, n_clusters, history), dtype=np.float32)
        self.clusters = np.zeros((capacity, n_clusters, 5), dtype=np.float32)
        self.job = np.zeros((capacity, job), dtype=np.float32)
        self.cluster = np.zeros(capacity, dtype=np.int64)
        self.values = np.zeros((capacity, 3), dtype=np.float64)

    def add(self, d: Decisions) -> None:
        """Append ``d`` (oldest decisions are overwritten)."""
        n = min(d.cluster.size, self.capacity)
        idx = (self.head + np.arange(n)) % self.capacity
        for name in ("history", "clusters", "job", "cluster", "values"):
            getattr(self, name)[idx] = getattr(d, name)[-n:]
        self.head = int((self.head + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, rng: np.random.Generator) -> Decisions:
        """``n`` decisions drawn uniformly (with replacement)."""
        i = rng.integers(0, self.size, n)
        return Decisions(self.history[i], self.clusters[i], self.job[i], self.cluster[i],
                         self.values[i])  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """Tensors and counters (for ``buffer.pt``)."""
        arrays = ("history", "clusters", "job", "cluster", "values")
        return {"size": self.size, "head": self.head,
                **{k: torch.from_numpy(getattr(self, k)) for k in arrays}}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict`."""
        self.size, self.head = int(state["size"]), int(state["head"])
        for k in ("history", "clusters", "job", "cluster", "values"):
            getattr(self, k)[:] = state[k].numpy()


def collect(
    model: MultiClusterModel, net: torch.nn.Module, weights: torch.Tensor, *,
    epsilon: float, guide: float, rng: np.random.Generator, params: ValueParams,
) -> Decisions:  # fmt: skip
    """Run every env of ``model`` to its end with the ε-greedy policy; the decisions and their
    after-the-fact values (module docstring, steps 2–3)."""
    view, maf = LiuStateView(), MAF()
    m, c = model.config.slots, model.jobs.n_clusters
    model.reset()
    maf.reset()
    parts: list[tuple[np.ndarray, ...]] = []

    def act(state: Any, _mask: np.ndarray, active: np.ndarray) -> np.ndarray:
        n = active.size
        a = best_actions(net, state, weights, m)[0]
        explore = rng.random(n) < epsilon
        if explore.any():
            by_maf = explore & (rng.random(n) < guide)
            greedy_maf = maf.act_batch(model.observe(maf.view, active))
            held = state.valid.sum(axis=1)
            random = 1 + rng.integers(0, c, n) * m + np.floor(rng.random(n) * held).astype(int)
            a = np.where(by_maf, greedy_maf, np.where(explore, random, a))
        q, i, r = (a - 1) % m, (a - 1) // m, np.arange(n)
        parts.append((state.history, state.clusters, state.jobs[r, q], i, state.rows[r, q]))
        return a

    rollout(model, view=view, act=act)
    history, clusters, job, cluster, rows = (np.concatenate(x) for x in zip(*parts, strict=True))
    return Decisions(history, clusters, job, cluster, action_values(model, params).v[rows])


def update(
    net: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: Decisions,
    weights: tuple[float, float, float],
) -> float:  # fmt: skip
    """One Adam step on the squared error of the dispatched cluster's estimates (in units of
    the network's ``scale``); returns the loss."""
    out = net(*(torch.from_numpy(x) for x in (batch.history, batch.clusters, batch.job)))
    pred = out[torch.arange(out.shape[0]), :, torch.from_numpy(batch.cluster)]
    target = torch.from_numpy(_targets(batch.values, out.shape[1], weights)).float()
    loss = (((pred - target) / net.scale) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def _targets(values: np.ndarray, heads: int, weights: tuple[float, float, float]) -> np.ndarray:
    """Per head: the three components, or their weighted sum (one head)."""
    return values if heads == 3 else scalarise(values, weights)[:, None]


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
        "label": config.label, "network": config.network, "network_kwargs": kwargs,
        "weights": list(config.weights), "n_clusters": mc.n_clusters, "history": mc.history,
        "clusters": asdict(mc), "values": asdict(config.value_params()),
        "train_config": json.loads(json.dumps(asdict(config))),
    }  # fmt: skip


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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = training.check_resume(out, config, resume=resume, budget="episodes")
    if saved is not None:
        saved["buffer"] = _load_buffer(out)
    torch.manual_seed(config.seed)
    training_process(config.threads)
    gen, mc = config.generator(), MultiClusterConfig()
    spec = _spec(config, mc)
    net = make_network(config.network, **spec["network_kwargs"])
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0xAC7]))
    weights = torch.tensor(config.weights if config.network == "lsfc" else [1.0])
    val_js = gen.generate_rates([gen.natural_rate()], n_jobsets=config.eval_episodes,
                                seed=_stream(config.seed, 0x7A1))  # fmt: skip
    training.write_spec(out, spec, SELECTION)
    run = training.start(
        out, saved, SELECTION, net=net, optimizer=optimizer, rng=rng,
        baselines=lambda: {p.name: evaluate(val_js, p) for p in (RAN(), RR(), MAF())}
        | {"initial": evaluate(val_js, in_memory_policy(net, spec))},
    )  # fmt: skip
    buffer: KnowledgeBuffer | None = None
    if saved is not None:
        buffer = _buffer_like(saved["buffer"], config)
        buffer.load_state_dict(saved["buffer"])
    episode = run.step
    bar = training.progress(progress, episode, config.episodes, desc="train liu", unit="ep")
    params = config.value_params()
    while episode < config.episodes:
        t0 = time.perf_counter()
        js = gen.generate_rates([gen.natural_rate()], n_jobsets=config.envs,
                                seed=_stream(config.seed, episode))  # fmt: skip
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
            "episode": episode, "epsilon": eps, "lr": config.lr_at(episode),
            "loss": float(np.mean(losses)) if losses else None, **train_pe,
            "val_tmdl": None, "val_ajer": None, "val_s_log": None,
        }  # fmt: skip
        last_round = episode >= config.episodes
        if episode == config.envs or episode % config.eval_every < config.envs or last_round:
            val = evaluate(val_js, in_memory_policy(net, spec))
            row |= {f"val_{k}": v for k, v in val.items()}
            if SELECTION.better(val["s_log"], run.best):
                run.best, run.best_step = val["s_log"], episode
                meta = {**spec, "episode": episode, "validation": val}
                save_checkpoint(out / "best.pt", net, meta, fmt=FORMAT)
        row |= {"rollout_s": t1 - t0, "update_s": t2 - t1, "eval_s": time.perf_counter() - t2}
        run.rows.append(row)
        run.step = episode
        if episode % config.checkpoint_every < config.envs or last_round:
            _write_curve(out, run.rows)
            training.save_torch(out / "buffer.pt", buffer.state_dict())
            training.save_state(out, run, net=net, optimizer=optimizer, rng=rng)
        bar.update(config.envs)
        bar.set_postfix(loss=row["loss"], val=row["val_s_log"], eps=round(eps, 3))
    bar.close()
    curve = _write_curve(out, run.rows)
    save_checkpoint(out / "final.pt", net, {**spec, "episode": episode}, fmt=FORMAT)
    return training.TrainResult(
        out_dir=out, curve=curve, selection=SELECTION, best_iteration=run.best_step,
        best_value=run.best,
        baselines=training.read_baselines(out, SELECTION), seconds=time.perf_counter() - t_start,
    )  # fmt: skip


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
    return {"train_tmdl": float(tmdl.mean()), "train_ajer": float(ajer.mean()),
            "train_s_log": float(s_log(tmdl, ajer).mean())}  # fmt: skip


def _set_scale(net: torch.nn.Module, values: np.ndarray, weights: tuple[float, ...]) -> None:
    """The networks' output units: the first targets' standard deviations (floored)."""
    scale = net.scale
    assert isinstance(scale, torch.Tensor)  # a buffer of the value networks
    targets = _targets(values, int(scale.numel()), weights)  # type: ignore[arg-type]
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
        return torch.load(out / "buffer.pt", map_location="cpu", weights_only=True)
    except Exception as exc:
        msg = f"{out}: not a readable training state ({type(exc).__name__}: {exc})"
        raise CheckpointError(msg) from exc


TRAINER = training.Trainer(
    config=LiuTrainConfig, train=train, budget="episodes",
    small={"episodes": 2, "envs": 1, "batch": 32, "buffer": 200, "eval_episodes": 1,
           "eval_every": 1, "checkpoint_every": 1, "workload_params": {"n_jobs": 20}, "lstm": 4},
)  # fmt: skip
"""Liu et al.'s value learning (:data:`schedlab.registry.trainers` ``liu``)."""
