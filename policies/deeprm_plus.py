"""DeepRM_Plus (Guo et al. 2021, §IV): a CNN cloned from an expert, then refined by REINFORCE.

:func:`train` runs the paper's two stages into one run directory:

1. **behaviour cloning** (Algorithm 2, :mod:`schedlab.policies.imitation`): the expert (SJF by
   default) schedules ``imitation_jobsets`` generated jobsets in the agent's action space; the
   distinct (image, action) pairs are split 9:1 and the CNN of Table I
   (:class:`~schedlab.policies.networks.CNNPlusNet`) is trained by cross-entropy until its test
   accuracy reaches ``imitation_threshold``. Writes ``imitation.pt`` (a policy checkpoint),
   ``imitation.csv`` (the accuracy curve) and ``imitation.json`` (data sizes, accuracy,
   agreement with the expert on the validation jobsets, seconds);
2. **policy gradient** (Algorithm 3): :func:`schedlab.policies.reinforce.train` from the cloned
   weights — REINFORCE with the per-step baseline (the mean return over the ``rollouts`` episodes
   of the same jobset at the same decision step), objective R1 (``slowdown``: −Σ 1/T_j per step)
   or R2 (``completion``: −|J| per step), RMSProp. ``imitation=False`` starts from random
   weights instead (the ablation).

Everything the DeepRM trainer writes is there too (``config.json``, ``curve.csv``, ``best.pt``,
``final.pt``, ``last.pt``, ``baselines.json`` — whose ``initial`` entry is the cloned policy —
and the report), plus ``deeprm_plus.json`` (this module's config). ``resume=True`` continues a
run: a finished cloning stage is kept, the policy gradient resumes from ``last.pt``.

The workload defaults are the paper's (§V-A, §V-B): Poisson arrivals at its "140%" (λ = 0.7
jobs per step, an offered load of 1.2915 by our definition), 25 jobsets of 5–50 jobs, 20
rollouts, M = 10 slots, T = 20, backlog 60, capacity 10 units per resource.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from schedlab.errors import SchedlabError
from schedlab.io import atomic_path, write_text_atomic
from schedlab.params import Count, NonNegative, Share, composed, flat
from schedlab.policies import policy_gradient, reinforce, training
from schedlab.policies.deeprm import save_checkpoint
from schedlab.policies.imitation import agreement, clone, deduplicate, demonstrate, split
from schedlab.policies.networks import Logits, make_network
from schedlab.policies.reinforce_config import (
    TrainConfig,
    file_parts,
    make_generator,
    make_jobsets,
)
from schedlab.policies.runtime import training_process
from schedlab.simulator.cluster.batched import BatchedEngine

IMITATION_FILES = ("imitation.pt", "imitation.csv", "imitation.json")


PAPER: dict[str, Any] = {
    "workload": "poisson",
    "load": 1.2915,
    "n_jobsets": 25,
    "eval_jobsets": 50,
    "eval_every": 10,
    "network": "cnn-plus",
}
"""The policy-gradient stage's settings that differ from DeepRM's (§V-A, §V-B)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DeepRMPlusConfig:
    """Everything that determines a DeepRM_Plus run (written flat as ``deeprm_plus.json``): the
    policy-gradient stage's REINFORCE config, whose fields are this config's own (``lr``,
    ``rollouts``, ``load``, ...; :func:`schedlab.params.composed`), and the cloning stage's."""

    rl: TrainConfig = composed(lambda: TrainConfig(**PAPER))
    """The policy-gradient stage: :class:`~schedlab.policies.reinforce_config.TrainConfig` with the
    paper's workload (Poisson at its "140%", 25 jobsets) and its CNN; with ``imitation``, its
    ``init`` is the cloned network."""
    rate: float = 0.0
    """Mean arrivals per step λ; when > 0 it replaces ``load`` (the paper's "140%" is 0.7)."""
    imitation: bool = True
    """Pre-train by behaviour cloning (False: from random weights, the ablation)."""
    expert: str = "sjf"
    """Policy to imitate: a registered name or spec (``tetris:knob=0.3``)."""
    imitation_jobsets: Count = 1000
    """Jobsets the expert schedules for the cloning data (another seed stream)."""
    imitation_threshold: Share = 0.9
    """Test accuracy at which cloning stops (Algorithm 2's ``accu``)."""
    imitation_epochs: Count = 20
    """Most passes over the cloning data."""
    imitation_batch: Count = 256
    """Minibatch of the cloning updates (pairs)."""
    imitation_lr: NonNegative = 1e-3
    """Adam learning rate of the cloning."""
    imitation_holdout: Share = 0.1
    """Share of the distinct pairs held out to test the cloning (the paper: 9:1)."""

    def __post_init__(self) -> None:
        if self.imitation and self.rl.init:
            msg = "init and imitation both give the starting weights: drop one (imitation=false)"
            raise ValueError(msg)

    def offered_load(self) -> float:
        """The offered load of the jobsets: ``load``, or the generator's load for ``rate``."""
        if self.rate <= 0:
            return self.rl.load
        load: float = round(make_generator(self.rl).load_for_rate(self.rate), 12)
        return load

    def reinforce_config(self, init: str = "") -> TrainConfig:
        """The policy-gradient stage's config at :meth:`offered_load`, starting from the
        weights in ``init`` (default: the stage's own ``init``)."""
        return replace(self.rl, load=self.offered_load(), init=init or self.rl.init)


def train(
    config: DeepRMPlusConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    progress: bool = True,
    report: bool = True,
) -> training.TrainResult:
    """Clone the expert (unless ``config.imitation`` is False), then train by REINFORCE from
    the cloned weights; files as in the module docstring. Returns the policy gradient's
    result (``baselines["initial"]`` is the starting policy's validation value)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, config, resume)
    mine = flat(config)
    write_text_atomic(out / "deeprm_plus.json", json.dumps(mine, indent=2))
    if config.rl.jobset_file:
        _file_parts(config)[3].write_parquet(out / "test-jobsets.parquet")
    init = str(out / "imitation.pt") if config.imitation else ""
    rl = config.reinforce_config(init)
    if not (out / "config.json").exists():  # `schedlab train --resume` reads it, even mid-cloning
        spec = {"trainer_config": mine, "train_config": flat(rl)}
        write_text_atomic(out / "config.json", json.dumps(spec, indent=2))
    if config.imitation and not (resume and (out / "imitation.json").exists()):
        imitate(config, out, progress=progress)
    return reinforce.train(
        rl,
        out,
        resume=resume and (out / "last.pt").exists(),
        progress=progress,
        report=report,
        trainer_config=mine,
    )


def _check_config(out: Path, config: DeepRMPlusConfig, resume: bool) -> None:
    saved = out / "deeprm_plus.json"
    if not saved.exists():
        return
    if not resume:
        msg = f"{out} already holds a DeepRM_Plus run; pass resume or choose another directory"
        raise SchedlabError(msg)
    diff = training.config_changes(json.loads(saved.read_text()), config, budget="iterations")
    if diff:
        msg = f"resuming {out} with a different config ({diff}); use the saved one or a new -o"
        raise SchedlabError(msg)


def imitate(
    config: DeepRMPlusConfig, out_dir: str | Path, *, progress: bool = False
) -> dict[str, Any]:
    """Stage 1: clone ``config.expert`` into a fresh CNN; write ``imitation.pt``, ``.csv`` and
    ``.json`` into ``out_dir`` and return the summary (the JSON's content)."""
    from schedlab.registry import make_policy

    t0 = time.perf_counter()
    out = Path(out_dir)
    rl = config.reinforce_config()
    torch.manual_seed(rl.seed)
    training_process(rl.threads)
    _, val_js, _ = make_jobsets(rl)
    demo_js = _imitation_jobsets(config, rl.load)
    expert = make_policy(config.expert)
    engine = BatchedEngine.from_jobset(demo_js, rl.cluster())
    geometry = policy_gradient.engine_geometry(engine, rl)
    demos = demonstrate(engine, expert, policy_gradient.image_view(geometry))
    t1 = time.perf_counter()
    distinct, conflicts = deduplicate(demos)
    rng = np.random.default_rng(np.random.SeedSequence([rl.seed, 0xB10]))
    train_part, test_part = split(distinct, rng, holdout=config.imitation_holdout)
    net = make_network(rl.network, geometry, **rl.network_kwargs())
    logits_fn = Logits(net, geometry, precision=rl.precision)
    result = clone(
        logits_fn,
        train_part,
        test_part,
        threshold=config.imitation_threshold,
        max_epochs=config.imitation_epochs,
        batch_size=config.imitation_batch,
        lr=config.imitation_lr,
        rng=rng,
        progress=progress,
    )
    net.eval()
    summary = {
        "expert": config.expert,
        "decisions": len(demos),
        "distinct_pairs": len(distinct),
        "conflicting_states": conflicts,
        "void_share": float((distinct.actions == 0).mean()) if len(distinct) else float("nan"),
        "train_pairs": len(train_part),
        "test_pairs": len(test_part),
        "threshold": config.imitation_threshold,
        "reached": result.reached,
        "test_accuracy": result.accuracy,
        "epochs": result.curve.height,
        "validation_agreement": agreement(logits_fn, val_js, expert, rl.cluster()),
        "demonstration_s": t1 - t0,
        "seconds": time.perf_counter() - t0,
    }
    spec = {
        "network": rl.network,
        "network_kwargs": rl.network_kwargs(),
        "geometry": geometry.to_json(),
        "mask_invalid": rl.mask_invalid,
        "objective": rl.objective,
        "imitation": summary,
        "deeprm_plus_config": flat(config),
    }
    save_checkpoint(out / "imitation.pt", net, spec)
    with atomic_path(out / "imitation.csv") as tmp:
        result.curve.write_csv(tmp)
    write_text_atomic(out / "imitation.json", json.dumps(summary, indent=2))
    return summary


def _imitation_jobsets(config: DeepRMPlusConfig, load: float) -> Any:
    """The expert's jobsets: same generator and load, a seed stream of their own (or the third
    part of the jobsets file)."""

    rl = config.rl
    if rl.jobset_file:
        return _file_parts(config)[2]
    seed = int(np.random.SeedSequence([rl.seed, 0x1317]).generate_state(1)[0])
    gen = make_generator(rl)
    return gen.generate(load, n_jobsets=config.imitation_jobsets, seed=seed)


def _file_parts(config: DeepRMPlusConfig) -> list[Any]:
    """Validation, training, cloning and test jobsets of ``jobset_file``."""
    rl = config.rl
    sizes = [rl.eval_jobsets, rl.n_jobsets, config.imitation_jobsets]
    return file_parts(rl.jobset_file, rl.seed, sizes)


SMALL = {
    **reinforce.SMALL,
    "workload": "deeprm",
    "load": 1.0,
    "eval_every": 1,
    "imitation_jobsets": 6,
    "imitation_epochs": 1,
}
"""The smallest meaningful run (:attr:`~schedlab.policies.training.Trainer.small`)."""
TRAINER = training.Trainer(config=DeepRMPlusConfig, train=train, budget="iterations", small=SMALL)
"""DeepRM_Plus' cloning + REINFORCE (:data:`schedlab.registry.trainers` ``deeprm-plus``)."""
