"""Liu et al.'s knowledge buffer (ICPP'20, §4.2–§4.4): the decisions of ε-greedy rollouts with
their action values, and the update on samples of them.

:func:`collect` runs every episode of a model with the ε-greedy policy (perturbed by MAF's action
with probability ``guide``, else by a uniformly random pair) and records each dispatch with its
``v1, v2, v3`` computed after the fact (:class:`Decisions`); :class:`KnowledgeBuffer` keeps the
most recent ones and samples them uniformly; :func:`update` is one Adam step on the squared error
of the dispatched cluster's estimates. The training loop is :mod:`schedlab.policies.liu_value`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from schedlab.policies.liu_baselines import MAF
from schedlab.policies.liu_networks import best_actions
from schedlab.simulator.model import rollout
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.values import ValueParams, action_values, scalarise
from schedlab.simulator.multicluster.views import LiuStateView


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
        return Decisions(
            self.history[i], self.clusters[i], self.job[i], self.cluster[i], self.values[i]
        )

    def state_dict(self) -> dict[str, Any]:
        """Tensors and counters (for ``buffer.pt``)."""
        arrays = ("history", "clusters", "job", "cluster", "values")
        return {
            "size": self.size,
            "head": self.head,
            **{k: torch.from_numpy(getattr(self, k)) for k in arrays},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict`."""
        self.size, self.head = int(state["size"]), int(state["head"])
        for k in ("history", "clusters", "job", "cluster", "values"):
            getattr(self, k)[:] = state[k].numpy()


def collect(
    model: MultiClusterModel,
    net: torch.nn.Module,
    weights: torch.Tensor,
    *,
    epsilon: float,
    guide: float,
    rng: np.random.Generator,
    params: ValueParams,
) -> Decisions:
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
    net: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Decisions,
    weights: tuple[float, float, float],
) -> float:
    """One Adam step on the squared error of the dispatched cluster's estimates (in units of
    the network's ``scale``); returns the loss."""
    out = net(*(torch.from_numpy(x) for x in (batch.history, batch.clusters, batch.job)))
    pred = out[torch.arange(out.shape[0]), :, torch.from_numpy(batch.cluster)]
    target = torch.from_numpy(head_targets(batch.values, out.shape[1], weights)).float()
    loss = (((pred - target) / net.scale) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def head_targets(values: np.ndarray, heads: int, weights: tuple[float, float, float]) -> np.ndarray:
    """Per head: the three components, or their weighted sum (one head)."""
    return values if heads == 3 else scalarise(values, weights)[:, None]
