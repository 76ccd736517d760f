"""Behaviour cloning of a scheduling expert (Guo et al. 2021, §III-C, §IV-C, Algorithm 2).

Demonstrations
--------------
The expert (any registered policy, SJF by default) schedules generated jobsets in the **agent
mode** of the batched engine (:class:`~schedlab.simulator.cluster.batched.BatchedEngine`), the
mode a learned policy acts in. At each decision the engine shows the expert its own view of the
state (the queue view for heuristics) and the learner's view (the DeepRM image); the expert's
``act_batch`` gives the label, which is recorded with the image and the action mask, and the
engine steps with that action. The labels live in the agent's action space:

* **one start = one decision**: action ``1 + q`` (``1 + i·M + q`` on ``m`` machines) starts the
  job of slot ``q``. An allocation does not advance time, so a heuristic that starts three jobs
  at time ``t`` gives three decisions at ``t``, each seeing the occupancy left by the previous
  start (and the backlog job that refilled the slot);
* **void** (action 0) when nothing the expert would start fits now: time advances one step.
  Decisions where only void is valid are skipped by the engine (no choice to learn).

A heuristic's ``act_batch`` picks only jobs that fit *now* for their whole duration; the engine
places an agent's job at its earliest fit, which for such a job is offset 0. Replaying the labels
therefore reproduces the expert's list schedule exactly (tested), and a learner that predicts
every label reproduces it too. For SJF the label is a function of the image (durations, demands
and occupancy are drawn in whole units, ties go to the lowest slot); an expert that reads what
the image does not show (arrival order for FCFS, waiting time for HRRN) may give different labels
to equal images: those conflicts are counted.

Training
--------
Duplicate (image, mask, action) triples are removed (Guo et al. 2021, Remark 3), the rest split
9:1 at random into training and test pairs, and the network is trained by cross-entropy on the
masked softmax (the learner samples among valid actions) with Adam on minibatches, one pass over
the training pairs per epoch, until the test accuracy (argmax among valid actions equals the
label) reaches the threshold (Algorithm 2, lines 13–22) or the epoch budget ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import torch

from schedlab.errors import SchedlabError
from schedlab.jobset import JobSet
from schedlab.policies.networks import Logits, masked_log_softmax, unique_observations
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import rollout
from schedlab.simulator.views.deeprm_image import DeepRMImage, SparseObs


class ImitationError(SchedlabError, ValueError):
    """An expert's decision cannot be imitated (its action is not valid for the agent)."""


@dataclass(frozen=True, slots=True)
class Demonstrations:
    """Expert decisions: what the learner sees and what the expert did."""

    obs: SparseObs
    """Images of the ``n`` decisions."""
    mask: np.ndarray
    """bool, shape ``(n, n_actions)``: valid actions."""
    actions: np.ndarray
    """int64, shape ``(n,)``: the expert's action (0 = void, ``1 + i·M + q`` = start)."""
    env: np.ndarray
    """int64, shape ``(n,)``: the env (jobset, in order) of each decision."""

    def __len__(self) -> int:
        return int(self.actions.size)

    def take(self, rows: np.ndarray | slice) -> Demonstrations:
        """The decisions ``rows``."""
        return Demonstrations(
            self.obs.take(rows), self.mask[rows], self.actions[rows], self.env[rows]
        )


def demonstrate(engine: BatchedEngine, expert: Any, view: DeepRMImage) -> Demonstrations:
    """Run ``expert`` on every env of ``engine`` (agent mode, from a reset) and record each
    decision's image (through ``view``), mask and the expert's action.

    Raises
    ------
    ImitationError
        If the expert chooses an action that is not valid for the agent.
    """
    engine.reset()
    expert.reset(seed=None)
    parts: list[tuple[SparseObs, np.ndarray, np.ndarray, np.ndarray]] = []

    def record(obs: Any, mask: np.ndarray, active: np.ndarray) -> np.ndarray:
        actions = np.asarray(expert.act_batch(obs, mask=mask), dtype=np.int64)
        bad = np.flatnonzero(~mask[np.arange(active.size), actions])
        if bad.size:
            msg = (
                f"expert {expert.name!r} chose action {int(actions[bad[0]])} in env "
                f"{int(active[bad[0]])}, which the agent cannot take (valid: "
                f"{np.flatnonzero(mask[bad[0]]).tolist()})"
            )
            raise ImitationError(msg)
        parts.append((engine.observe(view, active), mask, actions, active.copy()))
        return actions

    rollout(engine, expert, act=record)
    geometry = view.geometry(engine.snapshot())
    return Demonstrations(
        SparseObs.concat([p[0] for p in parts], geometry),
        np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, engine.n_actions), bool),
        np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.int64),
        np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64),
    )


def deduplicate(demos: Demonstrations) -> tuple[Demonstrations, int]:
    """Distinct (image, mask, action) decisions, in order of first appearance, and the number
    of conflicts: distinct (image, mask) states that carry more than one label."""
    keys = np.concatenate([demos.mask, demos.actions[:, None]], axis=1)
    first, _ = unique_observations(demos.obs, extra=keys)
    kept = demos.take(first)
    states, _ = unique_observations(kept.obs, extra=kept.mask)
    return kept, int(len(kept) - states.size)


def split(
    demos: Demonstrations, rng: np.random.Generator, *, holdout: float = 0.1
) -> tuple[Demonstrations, Demonstrations]:
    """Random (training, test) split with ``holdout`` of the decisions in the test part
    (Guo et al. 2021: 9:1)."""
    if not 0 < holdout < 1:
        msg = f"holdout must be in (0, 1), got {holdout}"
        raise ValueError(msg)
    order = rng.permutation(len(demos))
    n_test = max(1, round(holdout * len(demos))) if len(demos) > 1 else 0
    return demos.take(np.sort(order[n_test:])), demos.take(np.sort(order[:n_test]))


def greedy_actions(logits_fn: Logits, obs: SparseObs, mask: np.ndarray) -> np.ndarray:
    """The most probable valid action of each observation, int64, shape ``(n,)``."""
    with torch.no_grad():
        logits = logits_fn(obs).double().numpy()
    best: np.ndarray = np.where(mask, logits, -np.inf).argmax(axis=1)
    return best


def accuracy(logits_fn: Logits, demos: Demonstrations) -> float:
    """Fraction of decisions whose greedy action is the expert's (nan when empty)."""
    if len(demos) == 0:
        return float("nan")
    return float((greedy_actions(logits_fn, demos.obs, demos.mask) == demos.actions).mean())


@dataclass(frozen=True, slots=True)
class CloneResult:
    """What :func:`clone` returns."""

    curve: pl.DataFrame
    """One row per epoch: ``epoch``, ``train_loss`` (mean cross-entropy), ``train_accuracy``
    (on the minibatches, before each step), ``test_accuracy`` (after the epoch), ``seconds``
    and ``samples_per_s`` (training pairs per second of the epoch's updates)."""
    reached: bool
    """The test accuracy reached the threshold."""
    accuracy: float
    """Test accuracy of the returned weights."""


def clone(
    logits_fn: Logits,
    train: Demonstrations,
    test: Demonstrations,
    *,
    threshold: float,
    max_epochs: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    rng: np.random.Generator,
    progress: bool = False,
) -> CloneResult:
    """Train ``logits_fn.net`` by cross-entropy on ``train`` until its accuracy on ``test``
    reaches ``threshold`` (Algorithm 2), at most ``max_epochs`` passes; the weights are changed
    in place. Minibatches of ``batch_size`` pairs in a new random order each epoch (``rng``)."""
    from tqdm import tqdm

    net = logits_fn.net
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    rows: list[dict[str, float]] = []
    acc = accuracy(logits_fn, test)
    bar = tqdm(total=max_epochs, desc="imitate", unit="epoch", disable=not progress or None)
    for epoch in range(1, max_epochs + 1):
        t0 = time.perf_counter()
        loss_sum = correct = 0.0
        for idx in np.array_split(rng.permutation(len(train)), max(1, len(train) // batch_size)):
            batch = train.take(np.sort(idx))
            logits = logits_fn(batch.obs)
            logp = masked_log_softmax(logits, batch.mask)
            labels = torch.from_numpy(batch.actions)
            loss = torch.nn.functional.nll_loss(logp, labels, reduction="sum")
            optimizer.zero_grad()
            (loss / len(batch)).backward()
            optimizer.step()
            loss_sum += float(loss.detach())
            correct += float((logp.argmax(dim=1) == labels).sum())
        seconds = time.perf_counter() - t0
        acc = accuracy(logits_fn, test)
        rows.append(
            {
                "epoch": epoch,
                "train_loss": loss_sum / max(len(train), 1),
                "train_accuracy": correct / max(len(train), 1),
                "test_accuracy": acc,
                "seconds": seconds,
                "samples_per_s": len(train) / seconds if seconds > 0 else float("nan"),
            }
        )
        bar.update(1)
        bar.set_postfix(loss=f"{rows[-1]['train_loss']:.3f}", test=f"{acc:.3f}")
        if acc >= threshold:
            break
    bar.close()
    schema = {k: pl.Float64 for k in ("train_loss", "train_accuracy", "test_accuracy")}
    curve = pl.DataFrame(rows, schema_overrides=schema | {"epoch": pl.Int64})
    return CloneResult(curve, bool(acc >= threshold), float(acc))


def agreement(
    logits_fn: Logits, jobset: JobSet, expert: Any, cluster: ClusterConfig
) -> dict[str, float]:
    """How closely the greedy learner follows ``expert`` on ``jobset`` (held-out jobsets).

    Returns
    -------
    dict
        ``decision_accuracy``: fraction of the expert's decisions (along its own trajectory)
        where the learner's greedy action is the expert's; ``same_start``: fraction of jobs that
        start at the same step when the greedy learner schedules on its own; ``same_schedule``:
        fraction of jobsets scheduled identically; ``slowdown_learner``, ``slowdown_expert``:
        mean over jobsets of the mean slowdown.
    """
    from schedlab.policies.policy_gradient import collect, image_view

    view = image_view(logits_fn.geometry)
    engine = BatchedEngine.from_jobset(jobset, cluster)
    demos = demonstrate(engine, expert, view)
    expert_start = engine.all_starts()
    expert_slowdown = float(np.nanmean(engine.job_means()[0]))
    collect(engine, logits_fn, None, mask_invalid=True, record=False)
    learner_start = engine.all_starts()
    same = learner_start == expert_start
    per_env = np.split(same, np.cumsum(engine.state.hi - engine.state.lo)[:-1])
    return {
        "decision_accuracy": accuracy(logits_fn, demos),
        "same_start": float(same.mean()) if same.size else float("nan"),
        "same_schedule": float(np.mean([s.all() for s in per_env])),
        "slowdown_learner": float(np.nanmean(engine.job_means()[0])),
        "slowdown_expert": expert_slowdown,
    }
