"""REINFORCE's steps on the batched engine (Mao et al. 2016, §3.3, Figure 3): the rollout, the
returns and their baseline, the update.

:func:`collect` runs every environment of a :class:`~schedlab.simulator.cluster.batched.
BatchedEngine` to its end, the network scoring every active env at once, and records the
decisions (:class:`Rollout`); :func:`advantages` is ``v_t − b_t``, the discounted return
minus the mean over the rollouts of the same jobset at the same step (ended episodes count as
0: zero padding, footnote 4); :func:`policy_gradient_step` is one optimizer step on
``−Σ log π(a_t|s_t) · (v_t − b_t) / n_decisions``. The loop that runs them is
:func:`schedlab.policies.reinforce.train`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from schedlab.policies.deeprm import sample_actions
from schedlab.policies.networks import Logits, masked_log_softmax, unique_observations
from schedlab.policies.reinforce_config import TrainConfig
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.model import rollout
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry, SparseObs


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


# -- returns and baseline (Mao et al. 2016, Figure 3) -------------------------------------------
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
    adv: np.ndarray = a[batch.step, batch.env].astype(np.float32)
    return adv


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
    B = engine.n_envs
    engine.reset()
    rows: list[np.ndarray] = []
    parts: list[tuple[SparseObs, np.ndarray, np.ndarray, np.ndarray]] = []

    def act(obs: SparseObs, mask: np.ndarray, active: np.ndarray) -> np.ndarray:
        logits = logits_fn(obs, table).double().numpy()
        if mask_invalid:
            logits = np.where(mask, logits, -np.inf)
        actions = logits.argmax(axis=1) if rng is None else sample_actions(logits, rng)
        if record:
            parts.append((obs, mask, actions, active))
        return actions

    def paid(r: np.ndarray, active: np.ndarray) -> None:
        rows.append(np.zeros(B))
        rows[-1][active] = r

    with torch.no_grad():
        table = logits_fn.table()
        rollout(engine, view=image_view(logits_fn.geometry), act=act, rewards=paid)
    rewards = np.stack(rows) if rows else np.zeros((0, B))
    if not record:
        empty = np.zeros(0, dtype=np.int64)
        return Rollout(None, None, empty, empty, empty, rewards)
    obs = SparseObs.concat([p[0] for p in parts], logits_fn.geometry)
    step = np.concatenate([np.full(p[3].size, t, dtype=np.int64) for t, p in enumerate(parts)])
    return Rollout(
        obs,
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
        step,
        rewards,
    )


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
