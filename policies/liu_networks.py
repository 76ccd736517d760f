"""Liu et al.'s value networks and the policy that acts with them (ICPP'20, §4.3, Figure 3).

Both networks read Liu's state (:class:`~schedlab.simulator.multicluster.views.LiuState`) of a
job and estimate, for each of the ``C`` clusters, the value of dispatching the job there:

* :class:`LSFC` (**RL-LSFC**): each cluster's occupation history, traversed into 10 overlapping
  segments of 15 steps (Figure 4), runs through one LSTM (input 15, ``lstm`` hidden units,
  shared by the clusters); its last hidden states join the non-temporal values (5 per cluster
  and the job's 64) into a shared fully connected layer of 800 ReLU units; three heads (200 ReLU
  units, then ``C`` outputs) estimate ``v1``, ``v2`` and ``v3``
  (:mod:`schedlab.simulator.multicluster.values`) — partial network sharing for multi-target
  regression; the decision uses their weighted sum ``Σ w_k V_k``;
* :class:`FC` (**RL-FC**, "roughly following" Liu's reference [12]): the 839-value state of
  Table 1 through fully connected layers (800, 200 ReLU units) to ``C`` outputs estimating the
  weighted sum directly (one target).

The paper does not give the LSTM size; 32 hidden units is our default. Outputs are in units of
``scale`` (a buffer set once from the first training targets' standard deviations), so the
regression targets are of order one.

:class:`LiuValuePolicy` loads a checkpoint (``torch.load(weights_only=True)``) and dispatches,
at every moment, the (buffered job, cluster) pair of highest estimated value — the outer
iterator over the global buffer of §4.4, batched over jobs × clusters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from schedlab.policies.base import ParamsMixin
from schedlab.policies.checkpointed import Checkpointed
from schedlab.policies.deeprm import CheckpointError, build_network, read_checkpoint
from schedlab.simulator.multicluster.views import (
    CLUSTER_FEATURES,
    SEGMENT,
    STRIDE,
    LiuState,
    LiuStateView,
    job_features,
    segments,
    state_size,
)

FORMAT = "schedlab.liu"
"""Checkpoint format tag."""


def traverse(history: torch.Tensor) -> torch.Tensor:
    """Figure 4 on tensors: ``(..., H)`` -> ``(..., n_segments, 15)`` (as the view's numpy
    ``traverse``)."""
    return history.unfold(-1, SEGMENT, STRIDE)


def cluster_part(history: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
    """The clusters' values of Liu's state (Table 1 layout, without the job's):
    ``(n, C, H)``, ``(n, C, 5)`` -> ``(n, C·(5 + 15·segments))``."""
    seg = traverse(history).flatten(2)
    per_cluster = torch.cat([clusters[:, :, :4], seg, clusters[:, :, 4:]], dim=2)
    return per_cluster.reshape(history.shape[0], -1)


def table1(history: torch.Tensor, clusters: torch.Tensor, job: torch.Tensor) -> torch.Tensor:
    """Liu's 839-value state (Table 1 layout) from its parts: ``(n, C, H)``, ``(n, C, 5)``,
    ``(n, 4 + 12·C)`` -> ``(n, state_size)``."""
    return torch.cat([cluster_part(history, clusters), job], dim=1)


class ValueNetwork(nn.Module):
    """What both networks share: :meth:`forward` encodes each env's clusters once
    (:meth:`encode`), gives each job its env's encoding beside its own values and estimates
    from both (:meth:`values`), in units of ``scale``."""

    scale: torch.Tensor
    """Output units per head (a buffer, see the module docstring)."""

    def encode(self, history: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
        """Per env, the clusters' part of the input, ``(n, ·)``."""
        raise NotImplementedError

    def values(self, x: torch.Tensor) -> torch.Tensor:
        """Per job, the unscaled values ``(J, heads, C)`` from its env's encoding and its own
        values, ``(J, ·)``."""
        raise NotImplementedError

    def forward(
        self,
        history: torch.Tensor,
        clusters: torch.Tensor,
        job: torch.Tensor,
        env: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Values of dispatching each job to each cluster, ``(J, heads, C)``; ``env[j]`` is the
        row of ``history``/``clusters`` of job ``j`` (default: row ``j``)."""
        z = self.encode(history, clusters)
        z = z if env is None else z[env]
        return self.values(torch.cat([z, job], dim=1)) * self.scale[None, :, None]


class LSFC(ValueNetwork):
    """RL-LSFC (module docstring); ``forward`` gives ``(J, 3, C)`` scaled values."""

    def __init__(
        self,
        *,
        n_clusters: int = 5,
        history: int = 105,
        lstm: int = 32,
        fc: int = 800,
        head: int = 200,
        heads: int = 3,
    ) -> None:
        super().__init__()
        segments(history)  # checks the traverse fits
        self.lstm = nn.LSTM(SEGMENT, lstm, batch_first=True)
        n_in = n_clusters * (lstm + CLUSTER_FEATURES) + job_features(n_clusters)
        self.shared = nn.Linear(n_in, fc)
        self.heads = nn.ModuleList(
            nn.Sequential(nn.Linear(fc, head), nn.ReLU(), nn.Linear(head, n_clusters))
            for _ in range(heads)
        )
        self.register_buffer("scale", torch.ones(heads))

    def encode(self, history: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
        """Per env: LSTM states of every cluster's traversed history and the cluster values,
        ``(n, C·(lstm + 5))``."""
        n, c = history.shape[:2]
        seg = traverse(history).reshape(n * c, -1, SEGMENT)
        _, (h, _) = self.lstm(seg)
        return torch.cat([h[-1].reshape(n, -1), clusters.reshape(n, -1)], dim=1)

    def values(self, x: torch.Tensor) -> torch.Tensor:
        """The shared layer, then the three heads: ``(J, 3, C)``."""
        z = torch.relu(self.shared(x))
        return torch.stack([h(z) for h in self.heads], dim=1)


class FC(ValueNetwork):
    """RL-FC (module docstring); ``forward`` gives ``(J, 1, C)`` scaled values."""

    def __init__(
        self, *, n_clusters: int = 5, history: int = 105, fc: int = 800, head: int = 200
    ) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(state_size(n_clusters, history), fc),
            nn.ReLU(),
            nn.Linear(fc, head),
            nn.ReLU(),
            nn.Linear(head, n_clusters),
        )
        self.register_buffer("scale", torch.ones(1))

    def encode(self, history: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
        """Per env, the clusters' part of Table 1's state (:func:`cluster_part`)."""
        return cluster_part(history, clusters)

    def values(self, x: torch.Tensor) -> torch.Tensor:
        """Table 1's state through the fully connected layers: ``(J, 1, C)``."""
        value: torch.Tensor = self.net(x)[:, None, :]
        return value


NETWORKS: dict[str, type[ValueNetwork]] = {"lsfc": LSFC, "fc": FC}
"""Networks by name (the checkpoint's ``network``)."""


def make_network(name: str, **kwargs: Any) -> nn.Module:
    """A network of :data:`NETWORKS`."""
    if name not in NETWORKS:
        msg = f"unknown Liu network {name!r}; known: {sorted(NETWORKS)}"
        raise ValueError(msg)
    return NETWORKS[name](**kwargs)


def load_network(path: str | os.PathLike[str]) -> tuple[nn.Module, dict[str, Any]]:
    """The network of a Liu checkpoint, weights loaded, in eval mode; and its spec."""
    spec, state = read_checkpoint(path, fmt=FORMAT)

    def build() -> nn.Module:
        return make_network(spec["network"], **spec["network_kwargs"])

    return build_network(path, build, state), spec


def best_actions(
    net: nn.Module, state: LiuState, weights: torch.Tensor, slots: int
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy actions ``1 + i·M + q`` of the highest scalarised value over every buffered job
    ``q`` and cluster ``i`` of each env (ties: first job, then lower cluster), int64 ``(n,)``;
    and the values, float64 ``(n, M, C)`` (-inf where no job)."""
    env, pos = np.nonzero(state.valid)
    with torch.no_grad():
        out = net(
            torch.from_numpy(state.history),
            torch.from_numpy(state.clusters),
            torch.from_numpy(state.jobs[env, pos]),
            torch.from_numpy(env),
        )
        scalar = (out * weights[None, :, None]).sum(dim=1).double().numpy()
    n, m = state.valid.shape
    values = np.full((n, m, scalar.shape[1]), -np.inf)
    values[env, pos] = scalar
    best = np.argmax(values.reshape(n, -1), axis=1)  # index q·C + i
    q, i = best // scalar.shape[1], best % scalar.shape[1]
    return (1 + i * slots + q).astype(np.int64), values


class LiuValuePolicy(Checkpointed[nn.Module], ParamsMixin):
    """A trained Liu value network (RL-LSFC, RL-LSFCb or RL-FC) as a greedy global scheduler.

    Parameters
    ----------
    checkpoint : str
        A ``.pt`` written by the ``liu`` trainer, its run directory, or a shipped name
        (``liu-lsfc``).
    weights : tuple of float, optional
        Objective weights ``w`` of ``Σ w_k V_k`` (default: the checkpoint's; an FC network has
        one output and ignores them).
    """

    models: ClassVar[frozenset[str]] = frozenset({"multicluster"})
    view: ClassVar[LiuStateView] = LiuStateView()

    def __init__(self, *, checkpoint: str, weights: tuple[float, ...] | None = None) -> None:
        self.checkpoint = checkpoint
        self.weights = weights
        self._loaded: tuple[nn.Module, dict[str, Any]] | None = None

    def _load(self, path: Path) -> tuple[nn.Module, dict[str, Any]]:
        return load_network(path)

    @property
    def name(self) -> str:
        """The checkpoint's label (``rl-lsfc``, ``rl-fc``, ...), or one given by assignment."""
        return getattr(self, "_label", None) or str(self._model()[1].get("label", "liu-rl"))

    @name.setter
    def name(self, value: str) -> None:
        self._label = value

    def reset(self, *, seed: int | None = None) -> None:
        """Greedy: nothing to reset."""

    def act_batch(self, obs: LiuState, *, mask: np.ndarray | None = None) -> np.ndarray:
        """The best (job, cluster) of each env's buffer (never void)."""
        net, spec = self._model()
        c = obs.clusters.shape[1]
        if (c, obs.history.shape[2]) != (spec["n_clusters"], spec["history"]):
            msg = (
                f"policy {self.checkpoint} was trained on {spec['n_clusters']} clusters and "
                f"{spec['history']} steps of history, the model has {c} and "
                f"{obs.history.shape[2]}"
            )
            raise CheckpointError(msg)
        w = self.weights if self.weights is not None else spec["weights"]
        w = torch.tensor(w if spec["network"] == "lsfc" else [1.0], dtype=torch.float32)
        return best_actions(net, obs, w, obs.valid.shape[1])[0]
