"""Policy networks over the DeepRM image (seed 000 §4.1), made by name (:func:`make_network`).

A network maps observations to logits over the ``m·M + 1`` actions (void, then slot × machine). It
takes the dense image (float32, shape ``(N, T, W)`` or ``(N, T·W)``) through ``forward``;
networks whose first layer is linear in the image may also set ``supports_sparse = True`` and
implement ``forward_sparse`` over :class:`~schedlab.simulator.views.deeprm_image.SparseObs`
terms, which computes the same function without building images (see
:mod:`schedlab.simulator.views.deeprm_image`).
The next learned policies add convolutional networks here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import torch
from torch import nn

from schedlab.simulator.views.deeprm_image import ObsGeometry, SparseObs


class MLPPolicyNet(nn.Module):
    """DeepRM's network: image → ``hidden`` ReLU units → logits (seed 000 §4.1: 20 units).

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
        return self.fc2(torch.relu(self.fc1(x.reshape(x.shape[0], -1))))

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
        return self.fc2(torch.relu(h + self.fc1.bias))


class BagSum(torch.autograd.Function):
    """``out[i] = Σ_k weights[i, k] · table[terms[i, k]]`` with a compiled scatter-add backward
    (torch's embedding_bag backward sorts all indices: ~10× slower on CPU here)."""

    @staticmethod
    def forward(
        ctx: Any, table: torch.Tensor, terms: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """Gather-sum, float32, shape ``(N, hidden)``."""
        t = table.detach().contiguous()
        out = np.zeros((terms.shape[0], t.shape[1]), dtype=np.float32)
        _bag_sum(t.numpy(), terms.numpy(), weights.numpy(), out)
        ctx.save_for_backward(terms, weights)
        ctx.n_entries = t.shape[0]
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        """Gradient with respect to the table only."""
        terms, weights = ctx.saved_tensors
        g = grad.contiguous().numpy()
        out = np.zeros((ctx.n_entries, g.shape[1]), dtype=np.float32)
        _bag_scatter(g, terms.numpy(), weights.numpy(), out)
        return torch.from_numpy(out), None, None


@numba.njit(cache=True)
def _bag_sum(table: np.ndarray, terms: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    for i in range(terms.shape[0]):
        for k in range(terms.shape[1]):
            w = weights[i, k]
            row = table[terms[i, k]]
            for h in range(out.shape[1]):
                out[i, h] += w * row[h]


@numba.njit(cache=True)
def _bag_scatter(grad: np.ndarray, terms: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    for i in range(terms.shape[0]):
        for k in range(terms.shape[1]):
            w = weights[i, k]
            row = out[terms[i, k]]
            for h in range(grad.shape[1]):
                row[h] += w * grad[i, h]


def _chen_cnn(geometry: ObsGeometry, **kwargs: Any) -> nn.Module:
    from schedlab.policies.chen_cnn import ChenCNN

    return ChenCNN.for_geometry(geometry, **kwargs)


NETWORKS: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLPPolicyNet.for_geometry,
    "chen-cnn": _chen_cnn,
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


class Logits:
    """Logits of a network for :class:`SparseObs` batches, through the fastest exact path.

    Parameters
    ----------
    net : nn.Module
        A policy network (:data:`NETWORKS`).
    geometry : ObsGeometry
        Geometry of the observations it will see.
    chunk : int
        Observations rendered at once for networks without a sparse path.
    """

    def __init__(self, net: nn.Module, geometry: ObsGeometry, *, chunk: int = 4096) -> None:
        self.net, self.geometry, self.chunk = net, geometry, chunk
        self.sparse = bool(getattr(net, "supports_sparse", False))
        self.dictionary = dictionary_tensor(geometry) if self.sparse else None

    def __call__(self, obs: SparseObs, table: torch.Tensor | None = None) -> torch.Tensor:
        """Logits, float32, shape ``(N, M + 1)`` (with gradient if enabled)."""
        if obs.geometry != self.geometry:
            msg = f"observation geometry {obs.geometry} differs from the network's {self.geometry}"
            raise ValueError(msg)
        if self.sparse:
            terms = torch.from_numpy(obs.terms)
            weights = torch.from_numpy(obs.weights)
            return self.net.forward_sparse(terms, weights, self.dictionary, table)
        parts = [
            self.net(torch.from_numpy(obs.take(slice(i, i + self.chunk)).dense()))
            for i in range(0, len(obs), self.chunk)
        ]
        return torch.cat(parts) if parts else torch.zeros(0, self.geometry.n_actions)

    def table(self) -> torch.Tensor | None:
        """The sparse path's first-layer table for the current weights (None: dense network)."""
        return self.net.input_table(self.dictionary) if self.sparse else None


def masked_log_softmax(logits: torch.Tensor, mask: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Log-probabilities with invalid actions (``mask`` False) at probability 0."""
    m = torch.as_tensor(mask, dtype=torch.bool)
    return torch.log_softmax(logits.masked_fill(~m, float("-inf")), dim=-1)
