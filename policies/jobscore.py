"""A learned priority function over the waiting jobs (RLScheduler's kernel network, Zhang et
al. SC'20): :class:`JobScoreNet`, its checkpoints, and the policy :class:`JobScorePolicy`
(``jobscore:PATH`` or a shipped name, under any discipline: ``jobscore+easy:jobscore-kth``).

The network scores each candidate job of the pick engine (:mod:`schedlab.simulator.pick`) from
its row of the observation (the job's features and the cluster's) with the same small MLP, so it
is indifferent to how many jobs wait and in which order; the policy is the softmax of the scores
over the candidates (masked). A critic (used in training only) embeds every candidate row, pools
the embeddings (mean and max over the candidates) and maps them to a value.

A checkpoint is a ``torch.save`` of plain data read back with ``weights_only=True``:
``{"format": "schedlab.jobscore", "version": 1, "spec": JSON, "state_dict": {...}}``; the spec
holds the network's sizes, the observation's feature names (a checkpoint is refused by a
schedlab whose features differ) and the training config.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from schedlab.policies.base import Sampling, policy_fields
from schedlab.policies.checkpointed import Checkpointed
from schedlab.policies.deeprm import (
    CheckpointError,
    build_network,
    read_checkpoint,
    sample_actions,
    save_checkpoint,
)
from schedlab.policies.pick_agent import PickAgent
from schedlab.simulator.pick.engine import PickQueue, candidates
from schedlab.simulator.pick.features import FEATURES

FORMAT = "schedlab.jobscore"


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class JobScoreNet(nn.Module):
    """Per-job scores and a pooled value.

    Parameters
    ----------
    n_features : int
        F, the columns of an observation row.
    hidden : tuple of int
        Hidden sizes of the scoring MLP (RLScheduler's: 32, 16, 8).
    critic : int
        Width of the critic's row embedding and head.
    """

    def __init__(
        self, n_features: int, hidden: tuple[int, ...] = (32, 16, 8), critic: int = 32
    ) -> None:
        super().__init__()
        self.actor = _mlp([n_features, *hidden, 1])
        self.embed = nn.Sequential(_mlp([n_features, critic, critic]), nn.ReLU())
        self.head = _mlp([2 * critic, critic, 1])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(N, K)`` (-inf outside ``mask``) and values ``(N,)`` of observations ``obs``
        (float32 ``(N, K, F)``) whose candidates are ``mask`` (bool ``(N, K)``, one at least)."""
        return self.logits(obs, mask), self.value(obs, mask)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Scores of the candidates (only their rows go through the MLP), -inf elsewhere."""
        out = torch.full(mask.shape, -torch.inf, dtype=obs.dtype, device=obs.device)
        out[mask] = self.actor(obs[mask]).squeeze(-1)
        return out

    def value(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The critic: mean and max of the candidates' embeddings, then the head."""
        emb = self.embed(obs[mask])
        dense = torch.zeros(*mask.shape, emb.shape[1], dtype=emb.dtype, device=emb.device)
        dense[mask] = emb
        count = mask.sum(dim=1, keepdim=True).clamp(min=1).to(emb.dtype)
        top = dense.masked_fill(~mask[..., None], -torch.inf).amax(dim=1).clamp(min=0.0)
        value: torch.Tensor = self.head(torch.cat([dense.sum(dim=1) / count, top], dim=1)).squeeze(
            -1
        )
        return value


def network_spec(net: JobScoreNet, hidden: tuple[int, ...], critic: int) -> dict[str, Any]:
    """What :func:`load_network` needs to rebuild ``net``."""
    return {
        "network": "jobscore",
        "features": list(FEATURES),
        "hidden": list(hidden),
        "critic": critic,
    }


def save_network(path: str | os.PathLike[str], net: JobScoreNet, spec: dict[str, Any]) -> None:
    """Write ``net`` and ``spec`` (:func:`network_spec` and more) atomically."""
    save_checkpoint(path, net, spec, fmt=FORMAT)


def load_network(path: str | os.PathLike[str]) -> tuple[JobScoreNet, dict[str, Any]]:
    """The network of a checkpoint (weights loaded, eval mode) and its spec.

    Raises
    ------
    CheckpointError
        Unreadable, another format, other features, or weights that do not fit.
    """
    spec, state = read_checkpoint(path, fmt=FORMAT)
    if spec.get("features") != list(FEATURES):
        msg = (
            f"{path}: trained on observation features {spec.get('features')}, but this "
            f"schedlab observes {list(FEATURES)}; retrain it"
        )
        raise CheckpointError(msg)

    def build() -> JobScoreNet:
        hidden, critic = tuple(int(h) for h in spec["hidden"]), int(spec["critic"])
        return JobScoreNet(len(FEATURES), hidden, critic)

    return build_network(path, build, state), spec


@policy_fields
class JobScorePolicy(Checkpointed[JobScoreNet], Sampling, PickAgent):
    """A trained :class:`JobScoreNet` picking jobs from the queue of the pick engine.

    Attributes
    ----------
    checkpoint : str
        A ``.pt`` written by ``schedlab train jobscore``, a run directory (its ``best.pt``) or a
        shipped name (``jobscore-kth``).
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        The discipline around the picks (``jobscore+easy:...``); the whole queue is scheduled
        whatever the cluster's ``slots``.
    greedy : bool
        Pick the highest score (default); false samples from the softmax with ``seed``.
    seed : int
        Seed of the sampling: ``default_rng(seed)``, or ``default_rng([seed, jobset])``.
    visible : int, optional
        K, the candidates it chooses among (default: as trained).
    """

    key: ClassVar[str] = "jobscore"

    checkpoint: str
    queue: PickQueue = "greedy"
    greedy: bool = True
    seed: int = 0
    visible: int | None = None

    def __post_init__(self) -> None:
        self.reset()  # the sampling stream of ``seed``
        self._loaded: tuple[JobScoreNet, dict[str, Any]] | None = None

    def _load(self, path: Path) -> tuple[JobScoreNet, dict[str, Any]]:
        return load_network(path)

    @property
    def candidates(self) -> int:
        """K: ``visible``, else what the network was trained with (128 if not recorded)."""
        if self.visible is not None:
            return int(self.visible)
        return int(self.spec.get("train_config", {}).get("visible", 128))

    def act_batch(self, obs: np.ndarray, *, mask: np.ndarray) -> np.ndarray:
        """Picks (int64 ``(n,)``: ``1 + q`` for candidate ``q``) of observations ``obs``
        (float32 ``(n, K, F)``) whose valid actions are ``mask`` (bool ``(n, K + 1)``)."""
        net, _ = self._model()
        rows = candidates(mask)
        with torch.no_grad():
            logits = net.logits(torch.from_numpy(obs), torch.from_numpy(rows)).double().numpy()
        picks = logits.argmax(axis=1) if self.greedy else sample_actions(logits, self._rng)
        return np.asarray(picks, dtype=np.int64) + 1
