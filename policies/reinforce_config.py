"""What a DeepRM REINFORCE run is made of: its config, and the jobsets it trains and validates on.

:class:`TrainConfig` is the config of :func:`schedlab.policies.reinforce.train` (and the
policy-gradient stage DeepRM_Plus's config holds); :func:`make_jobsets` draws the training and
validation jobsets from a registered generator (two seed streams) or from a JobSet file
(:func:`file_parts`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from schedlab.errors import SchedlabError
from schedlab.params import Count, NonNegative, Positive, Share
from schedlab.policies.training import RunConfig
from schedlab.simulator.cluster.batched import AgentQueue, RewardWeights
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import Layout


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig(RunConfig):
    """Everything that determines a training run (written as ``config.json``; validation,
    checkpoints, seed and threads as :class:`~schedlab.policies.training.RunConfig`)."""

    workload: str = "deeprm"
    """Generator name of the training and validation jobsets."""
    jobset_file: str = ""
    """A JobSet Parquet file (e.g. a trace from ``schedlab load``) to draw the jobsets from
    instead of generating them (:func:`file_parts`); ``workload``, ``load`` and ``window``
    are then unused."""
    workload_params: dict[str, Any] = field(default_factory=dict)
    """Generator parameters, e.g. ``{"variant": "paper"}``."""
    load: Positive = 0.7
    """Target offered load of the jobsets."""
    window: Count = 50
    """Arrival window of a jobset (steps), passed to generators that have one."""
    n_jobsets: Count = 100
    """Training jobsets."""
    rollouts: Count = 20
    """N: episodes per jobset and iteration."""
    iterations: Count = 1000
    """Training iterations (one batch update each)."""
    objective: Literal["slowdown", "completion"] = "slowdown"
    """Reward per step: −Σ 1/T_j over jobs in the system, or −|J| (Mao et al. 2016, §3.4)."""
    gamma: Share = 1.0
    """Discount over decision steps."""
    lr: NonNegative = 1e-3
    """RMSProp learning rate."""
    rho: Share = 0.9
    """RMSProp decay of the squared-gradient average."""
    eps: Positive = 1e-9
    """RMSProp epsilon."""
    entropy_bonus: NonNegative = 0.0
    """Weight of the policy's entropy added to the objective (0: plain REINFORCE, as the
    papers); a small bonus keeps a network with many inputs from collapsing early."""
    network: str = "mlp"
    """Policy network (:data:`schedlab.policies.networks.NETWORKS`): ``mlp``, ``chen-cnn`` or
    ``cnn-plus`` (DeepRM_Plus's; its trainer ``deeprm-plus`` adds the cloning stage)."""
    layout: Layout = "deeprm"
    """Image layout: DeepRM's (``deeprm``) or Chen et al.'s (``reshaped``, 2017, Fig. 1)."""
    machines: Count = 1
    """m: identical machines (Chen et al. 2017); the load refers to all of them."""
    machine_weight: float = 1.0
    """α of Chen et al.'s Eq. 1: reward weight of jobs allocated to a machine (paper: 1)."""
    queue_weight: float = 1.0
    """β of Chen et al.'s Eq. 1: reward weight of jobs waiting in the visible slots (paper: 2)."""
    backlog_weight: float = 1.0
    """γ of Chen et al.'s Eq. 1: reward weight of jobs in the backlog (paper: 1)."""
    hidden: Count = 20
    """Hidden units of the MLP."""
    init: str = ""
    """Checkpoint whose weights start the network (same network and geometry); empty: random."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """Arithmetic of convolutional networks (bfloat16: CPU autocast, faster); the MLP is float32."""
    mask_invalid: bool = True
    """Sample among valid actions only (False: the paper's unmasked space, invalid = void)."""
    slots: Count = 10
    """M: visible job slots."""
    horizon: Count = 20
    """T: image rows and earliest-fit horizon."""
    backlog: int = 60
    """Backlog jobs shown in the image."""
    queue: AgentQueue = "greedy"
    """Queue discipline of the training and validation environments: ``greedy`` (any visible
    job), ``strict`` (only the first waiting job) or ``easy`` (the jobs EASY backfilling would
    allow); evaluate the checkpoint with the same one (``deeprm:PATH,queue=easy``)."""
    eval_jobsets: Count = 100
    """Held-out validation jobsets (another seed stream)."""
    eval_greedy: bool = False
    """Select ``best.pt`` on the greedy (argmax) policy instead of the sampled one."""

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


def make_jobsets(config: TrainConfig) -> tuple[Any, Any, dict[str, int]]:
    """Training and validation JobSets from two independent seed streams of ``config.seed``,
    or the first two parts of ``config.jobset_file`` (:func:`file_parts`)."""

    if config.jobset_file:
        sizes = [config.eval_jobsets, config.n_jobsets]
        val_js, train_js = file_parts(config.jobset_file, config.seed, sizes)[:2]
        return train_js, val_js, {"split": config.seed}
    train_ss, val_ss = np.random.SeedSequence([config.seed, 0xD33B]).spawn(2)
    seeds = {
        "train": int(train_ss.generate_state(1)[0]),
        "validation": int(val_ss.generate_state(1)[0]),
    }
    gen = make_generator(config)
    train_js = gen.generate(config.load, n_jobsets=config.n_jobsets, seed=seeds["train"])
    val_js = gen.generate(config.load, n_jobsets=config.eval_jobsets, seed=seeds["validation"])
    return train_js, val_js, seeds


def make_generator(config: TrainConfig) -> Any:
    """The generator of ``config.workload`` with its ``workload_params`` (checked), and the
    config's ``window`` and ``machines`` where the generator has such a field."""
    from schedlab.registry import generators

    params = dict(config.workload_params)
    known = {f.name for f in fields(generators.load(config.workload))}
    for name, value in (("window", config.window), ("machines", config.machines)):
        if name not in params and name in known:
            params[name] = value
    return generators.create(config.workload, params, where="workload_params (-p)")


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
