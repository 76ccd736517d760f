"""Policy networks over the DeepRM image (Mao et al. 2016, §4.1), made by name
(:func:`make_network`).

A network maps observations to logits over the ``m·M + 1`` actions (void, then slot × machine). It
takes the dense image (float32, shape ``(N, T, W)`` or ``(N, T·W)``) through ``forward``;
networks whose first layer is linear in the image may also set ``supports_sparse = True`` and
implement ``forward_sparse`` over :class:`~schedlab.simulator.views.deeprm_image.SparseObs`
terms, which computes the same function without building images (see
:mod:`schedlab.simulator.views.deeprm_image`).
Convolutional networks see the image as one channel of ``T × W`` pixels; they are built from
the geometry (a ``for_geometry`` class method, registered in :data:`NETWORKS`), and may
evaluate sparse observations themselves (``forward_obs``, :mod:`schedlab.policies.cnn_plus`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np
import torch
from torch import nn

from schedlab.policies.bag_sum import BagSum
from schedlab.policies.cnn_plus import CNNPlusNet
from schedlab.simulator.views.deeprm_image import ObsGeometry, SparseObs


class MLPPolicyNet(nn.Module):
    """DeepRM's network: image → ``hidden`` ReLU units → logits (Mao et al. 2016, §4.1: 20 units).

    Parameters
    ----------
    obs_dim : int
        Image cells ``T · W`` (4480 for the reference geometry).
    n_actions : int
        ``M + 1``.
    hidden : int
        Width of the hidden layer.
    """

    supports_sparse = True

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 20) -> None:
        super().__init__()
        self.fc1 = nn.Linear(obs_dim, hidden)
        self.fc2 = nn.Linear(hidden, n_actions)

    @classmethod
    def for_geometry(cls, geometry: ObsGeometry, *, hidden: int = 20) -> MLPPolicyNet:
        """The MLP over images of ``geometry``."""
        return cls(geometry.n_cells, geometry.n_actions, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, shape ``(N, n_actions)``, of images ``x`` (float32, ``(N, T, W)`` or flat)."""
        logits: torch.Tensor = self.fc2(torch.relu(self.fc1(x.reshape(x.shape[0], -1))))
        return logits

    def input_table(self, dictionary: torch.Tensor) -> torch.Tensor:
        """First-layer response of every dictionary entry, ``A · W₁ᵀ``, shape ``(E, hidden)``.

        ``dictionary`` is ``A`` as a sparse CSR float32 tensor, shape ``(E, T·W)``
        (:func:`dictionary_tensor`). Differentiable in ``W₁``.
        """
        return dictionary @ self.fc1.weight.t()

    def forward_sparse(
        self,
        terms: torch.Tensor,
        weights: torch.Tensor,
        dictionary: torch.Tensor,
        table: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits of sparse observations; equals ``forward`` on their dense images.

        Parameters
        ----------
        terms : int32 or int64, shape ``(N, K)``
        weights : float32, shape ``(N, K)``
        dictionary : sparse CSR float32, shape ``(E, T·W)``
        table : float32, shape ``(E, hidden)``, optional
            :meth:`input_table`, precomputed when the weights do not change between calls.
        """
        table = self.input_table(dictionary) if table is None else table
        h = BagSum.apply(table, terms, weights)
        logits: torch.Tensor = self.fc2(torch.relu(h + self.fc1.bias))
        return logits


def _chen_cnn(geometry: ObsGeometry, **kwargs: Any) -> nn.Module:
    from schedlab.policies.chen_cnn import ChenCNN

    return ChenCNN.for_geometry(geometry, **kwargs)


NETWORKS: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLPPolicyNet.for_geometry,
    "chen-cnn": _chen_cnn,
    "cnn-plus": CNNPlusNet.for_geometry,
}
"""Network name -> constructor ``(geometry, **kwargs)``."""


def make_network(name: str, geometry: ObsGeometry, **kwargs: Any) -> nn.Module:
    """The network ``name`` (:data:`NETWORKS`) for observations of ``geometry``."""
    if name not in NETWORKS:
        msg = f"unknown network {name!r} (known: {', '.join(sorted(NETWORKS))})"
        raise ValueError(msg)
    return NETWORKS[name](geometry, **kwargs)


def dictionary_tensor(geometry: ObsGeometry) -> torch.Tensor:
    """The observation dictionary ``A`` as a sparse CSR float32 tensor, shape ``(E, T·W)``."""
    indptr, cells = geometry.dictionary()
    with warnings.catch_warnings():  # "sparse CSR support is in beta" (once per process)
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.from_numpy(indptr),
            torch.from_numpy(cells),
            torch.ones(cells.size, dtype=torch.float32),
            size=(geometry.n_entries, geometry.n_cells),
            check_invariants=False,
        )


class ObsNetwork(Protocol):
    """A network evaluating sparse observations itself (``forward_obs``, like CNN+)."""

    def forward_obs(self, obs: SparseObs) -> torch.Tensor: ...


class Logits:
    """Logits of a network for :class:`SparseObs` batches, through the fastest exact path.

    Networks with a sparse path (the MLP) are evaluated on the terms. Other networks see each
    distinct observation of a batch once (rollouts of the same jobset often pass through the
    same states; the logits of repeats are gathered, which is the same function, also for
    gradients), in chunks: through their ``forward_obs`` where they have one (the CNN), else
    as rendered images.

    Parameters
    ----------
    net : nn.Module
        A policy network (:data:`NETWORKS`).
    geometry : ObsGeometry
        Geometry of the observations it will see.
    chunk : int
        Observations rendered (and, in training, differentiated) at once by networks without a
        sparse path; bounds memory (the CNN keeps ~0.5 MB of activations per observation).
    precision : ``"float32"`` or ``"bfloat16"``
        Arithmetic of dense networks: ``bfloat16`` runs convolutions and linear layers under
        CPU autocast (about 2–3× faster where the CPU has bf16 instructions; logits are
        returned as float32, rounded to ~3 significant digits).
    """

    def __init__(
        self,
        net: nn.Module,
        geometry: ObsGeometry,
        *,
        chunk: int = 1024,
        precision: str = "float32",
    ) -> None:
        if precision not in PRECISIONS:
            msg = f"precision must be one of {PRECISIONS}, got {precision!r}"
            raise ValueError(msg)
        self.net, self.geometry, self.chunk, self.precision = net, geometry, chunk, precision
        self.sparse = bool(getattr(net, "supports_sparse", False))
        self.from_obs = hasattr(net, "forward_obs")
        self.dictionary = dictionary_tensor(geometry) if self.sparse else None

    def __call__(self, obs: SparseObs, table: torch.Tensor | None = None) -> torch.Tensor:
        """Logits, float32, shape ``(N, M + 1)`` (with gradient if enabled)."""
        if obs.geometry != self.geometry:
            msg = f"observation geometry {obs.geometry} differs from the network's {self.geometry}"
            raise ValueError(msg)
        if self.sparse:
            terms = torch.from_numpy(obs.terms)
            weights = torch.from_numpy(obs.weights)
            assert self.dictionary is not None  # set for sparse networks
            sparse_net = cast(MLPPolicyNet, self.net)
            return sparse_net.forward_sparse(terms, weights, self.dictionary, table)
        first, inverse = unique_observations(obs)
        distinct = obs.take(first)
        bf16 = self.precision == "bfloat16"
        parts = []
        for i in range(0, len(distinct), self.chunk):
            part = distinct.take(slice(i, i + self.chunk))
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                if self.from_obs:
                    parts.append(cast(ObsNetwork, self.net).forward_obs(part).float())
                else:
                    parts.append(self.net(torch.from_numpy(part.dense())).float())
        if not parts:
            return torch.zeros(0, self.geometry.n_actions)
        logits = torch.cat(parts)
        return logits if first.size == len(obs) else logits[torch.from_numpy(inverse)]

    def table(self) -> torch.Tensor | None:
        """The sparse path's first-layer table for the current weights (None: dense network)."""
        if not self.sparse:
            return None
        assert self.dictionary is not None  # set for sparse networks
        return cast(MLPPolicyNet, self.net).input_table(self.dictionary)


PRECISIONS = ("float32", "bfloat16")
"""Arithmetic of dense networks (:class:`Logits`)."""


def unique_observations(
    obs: SparseObs, *, extra: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct observations of a batch: ``(first, inverse)``, int64, such that
    ``obs.take(first)`` holds each distinct observation once (in order of first appearance)
    and observation ``i`` equals ``obs.take(first)[inverse[i]]``. ``extra`` (shape ``(N, k)``,
    integers or booleans, e.g. action masks) joins the key: rows are distinct when it differs.

    Rows are grouped by a 64-bit hash (a fast sort), then checked cell by cell against their
    representative; on a hash collision the rows themselves are sorted, so the result is exact.
    """
    if len(obs) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    parts = [obs.terms.astype(np.int32), obs.weights.view(np.int32)]
    if extra is not None:
        parts.append(np.asarray(extra).reshape(len(obs), -1).astype(np.int32))
    rows = np.concatenate(parts, axis=1)
    salt = np.random.default_rng(0x5EED).integers(1, 2**62, rows.shape[1], dtype=np.int64)
    keys: np.ndarray = rows.astype(np.int64) @ salt  # integer products wrap modulo 2^64: a hash
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if not np.array_equal(rows[first][inverse.ravel()], rows):  # a collision: exact grouping
        rows = np.ascontiguousarray(rows)
        keys = rows.view(np.dtype((np.void, rows.shape[1] * 4))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # distinct rows in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order].astype(np.int64), rank[inverse.ravel()].astype(np.int64)


def masked_log_softmax(logits: torch.Tensor, mask: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Log-probabilities with invalid actions (``mask`` False) at probability 0."""
    m = torch.as_tensor(mask, dtype=torch.bool)
    return torch.log_softmax(logits.masked_fill(~m, float("-inf")), dim=-1)
