"""Sums of table rows picked by index (torch's ``embedding_bag`` in ``sum`` mode), compiled, with
a compiled scatter-add backward: torch's own backward sorts all indices, ~10× slower on CPU
here. The first layers of the MLP over sparse observations
(:meth:`~schedlab.policies.networks.MLPPolicyNet.forward_sparse`: weighted dictionary terms) and
of Chen et al.'s CNN by pattern lookup (:mod:`schedlab.policies.chen_cnn`: unit weights) are
such sums.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import torch


class BagSum(torch.autograd.Function):
    """``out[i] = Σ_k weights[i, k] · table[terms[i, k]]``, float32, differentiable in ``table``
    only (:func:`unit_weights` for a plain sum)."""

    @staticmethod
    def forward(
        ctx: Any, table: torch.Tensor, terms: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """Gather-sum, float32, shape ``(N, hidden)`` for ``terms`` and ``weights`` ``(N, K)``
        and ``table`` ``(E, hidden)``."""
        t = table.detach().contiguous()
        out = np.zeros((terms.shape[0], t.shape[1]), dtype=np.float32)
        _bag(t.numpy(), terms.numpy(), weights.numpy(), out, False)
        ctx.save_for_backward(terms, weights)
        ctx.n_entries = t.shape[0]
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        """Gradient with respect to the table only: the scatter-add of ``weights · grad``."""
        terms, weights = ctx.saved_tensors
        g = grad.contiguous().numpy()
        out = np.zeros((ctx.n_entries, g.shape[1]), dtype=np.float32)
        _bag(g, terms.numpy(), weights.numpy(), out, True)
        return torch.from_numpy(out), None, None


def unit_weights(terms: torch.Tensor) -> torch.Tensor:
    """Weights 1 (float32, the shape of ``terms``): :class:`BagSum` as a plain sum of rows (the
    products by 1 are exact)."""
    return torch.ones(terms.shape, dtype=torch.float32)


@numba.njit(cache=True)
def _bag(
    src: np.ndarray, terms: np.ndarray, weights: np.ndarray, dst: np.ndarray, scatter: bool
) -> None:
    """Gather: ``dst[i] += weights[i, k] · src[terms[i, k]]``; its adjoint, ``scatter``:
    ``dst[terms[i, k]] += weights[i, k] · src[i]``; in ``(i, k)`` order."""
    for i in range(terms.shape[0]):
        for k in range(terms.shape[1]):
            w = weights[i, k]
            to, row = (dst[terms[i, k]], src[i]) if scatter else (dst[i], src[terms[i, k]])
            for h in range(dst.shape[1]):
                to[h] += w * row[h]
