"""DeepRM_Plus's CNN (Guo et al. 2021, Table I, Fig. 3) and its exact fast first layer.

The network (:class:`CNNPlusNet`, registered as ``"cnn-plus"`` in
:data:`schedlab.policies.networks.NETWORKS`) reads the DeepRM image as one channel. Its first
block — conv1 (5 × 5, "same" zero padding), ReLU, 2 × 2 average pooling — dominates the cost on a
CPU (the 8 × 20 × 224 feature map is twice the size of conv2's), and its input is a sum of a few
dozen rectangles (:mod:`schedlab.simulator.views.deeprm_image`). :meth:`CNNPlusNet.forward_obs`
computes that block from the sparse terms without building images: the kernel is stamped at the
corners of each dictionary entry (:func:`corner_table`) and two prefix sums give every pixel; the
weight gradient is its adjoint (:mod:`schedlab.policies.cnn_plus_layer1`, compiled).

Both are exact in real arithmetic; in float32 they differ from the dense convolution by rounding
(~1e-6 relative; tested against :meth:`CNNPlusNet.forward` on rendered images).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numba
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from schedlab.policies.cnn_plus_layer1 import Sparse, layer1_backward, layer1_forward
from schedlab.simulator.views.deeprm_image import ObsGeometry, SparseObs


class CNNPlusNet(nn.Module):
    """DeepRM_Plus's CNN over the image as one channel (Guo et al. 2021, Table I).

    For the reference geometry (``T × W = 20 × 224``, ``M = 10``) the shapes are, per
    observation (channels × rows × columns):

    ======  =============================================  ======================
    layer   operation                                      output
    ======  =============================================  ======================
    input   image                                          1 × 20 × 224
    conv1   5 × 5, 8 filters, stride 1, padding 2, ReLU    8 × 20 × 224
    pool1   2 × 2 average, stride 2                        8 × 10 × 112
    conv2   5 × 5 × 8, 16 filters, padding 2, ReLU         16 × 10 × 112
    pool2   2 × 2 average, stride 2                        16 × 5 × 56 (4480)
    fc1     linear, tanh                                   69
    fc2     linear (the softmax is applied outside)        M + 1 = 11
    ======  =============================================  ======================

    Other geometries keep the layers; pooling floors odd sizes, so ``fc1`` has
    ``16 · ⌊⌊T/2⌋/2⌋ · ⌊⌊W/2⌋/2⌋`` inputs. About 4.8 M multiply-adds per observation for the
    reference geometry (conv1 0.9 M, conv2 3.6 M, fc1 0.3 M); 313,383 parameters. Tensors are
    kept channels-last, oneDNN's fast layout for these convolutions on CPU.

    Parameters
    ----------
    rows, cols : int
        ``T`` and ``W`` of the image.
    n_actions : int
        ``m·M + 1``.
    channels : tuple of int
        Filters of conv1 and conv2.
    kernel : int
        Side of the square kernels (odd; "same" zero padding).
    hidden : int
        Units of fc1.
    """

    def __init__(
        self,
        rows: int,
        cols: int,
        n_actions: int,
        *,
        channels: tuple[int, int] = (8, 16),
        kernel: int = 5,
        hidden: int = 69,
    ) -> None:
        super().__init__()
        if rows < 4 or cols < 4 or kernel % 2 == 0:
            msg = (
                "CNNPlusNet needs an image of at least 4 × 4 and an odd kernel, got "
                f"{rows} × {cols} and kernel {kernel}"
            )
            raise ValueError(msg)
        self.rows, self.cols = rows, cols
        pad = kernel // 2
        self.conv1 = nn.Conv2d(1, channels[0], kernel, padding=pad)
        self.conv2 = nn.Conv2d(channels[0], channels[1], kernel, padding=pad)
        self.fc1 = nn.Linear(channels[1] * (rows // 2 // 2) * (cols // 2 // 2), hidden)
        self.fc2 = nn.Linear(hidden, n_actions)
        self.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch stubs lack memory_format

    @classmethod
    def for_geometry(cls, geometry: ObsGeometry, **kwargs: Any) -> CNNPlusNet:
        """The network for images of ``geometry`` (``T × W``, ``m·M + 1`` actions)."""
        return cls(geometry.horizon, geometry.width, geometry.n_actions, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, shape ``(N, n_actions)``, of images ``x`` (float32, ``(N, T, W)`` or flat)."""
        x = x.reshape(x.shape[0], 1, self.rows, self.cols)
        x = x.contiguous(memory_format=torch.channels_last)
        return self._head(F.avg_pool2d(torch.relu(self.conv1(x)), 2))

    def forward_obs(self, obs: SparseObs) -> torch.Tensor:
        """Logits of sparse observations without rendering them: the same function as
        :meth:`forward` on ``obs.dense()`` (up to float rounding), differentiable in every
        weight."""
        if obs.geometry.shape != (self.rows, self.cols):
            msg = (
                f"observations of shape {obs.geometry.shape}, network for {(self.rows, self.cols)}"
            )
            raise ValueError(msg)
        pooled = SparseConvPool.apply(
            self.conv1.weight,
            self.conv1.bias,
            torch.from_numpy(obs.terms),
            torch.from_numpy(obs.weights),
            obs.geometry,
        )
        return self._head(pooled)

    def _head(self, pooled: torch.Tensor) -> torch.Tensor:
        """Logits from the first block's output (``(N, C1, ⌊T/2⌋, ⌊W/2⌋)``)."""
        x = F.avg_pool2d(torch.relu(self.conv2(pooled)), 2)  # channels-last
        n, c, h, w = x.shape
        # fc1 reads the map in channel-major order (its weight's layout); the map is read in its
        # memory order instead, with fc1's columns permuted to match: the same function, and
        # the gradient reaches the pooling as a channels-last map (oneDNN's fast backward).
        weight = self.fc1.weight.view(-1, c, h, w).permute(0, 2, 3, 1).reshape(-1, c * h * w)
        hidden = F.linear(x.permute(0, 2, 3, 1).reshape(n, -1), weight, self.fc1.bias)
        logits: torch.Tensor = self.fc2(torch.tanh(hidden))
        return logits


@lru_cache(maxsize=16)
def corner_table(geometry: ObsGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Corners of every dictionary entry: ``(ptr, row, col, sign)``; entry ``e`` has corners
    ``ptr[e]:ptr[e + 1]`` (int64 ``ptr``, int64 rows ``0..T`` and columns ``0..W``, float32
    signs ±1): the non-zeros of the 2-D difference of its indicator image."""
    indptr, cells = geometry.dictionary()
    T, W = geometry.shape
    counts = np.diff(indptr)
    owner = np.repeat(np.arange(counts.size), counts)
    ptr, rows, cols, signs = [np.zeros(1, np.int64)], [], [], []
    for lo in range(0, counts.size, 256):
        hi = min(lo + 256, counts.size)
        img = np.zeros((hi - lo, T + 1, W + 1), np.int8)
        pick = (owner >= lo) & (owner < hi)
        img[owner[pick] - lo, cells[pick] // W, cells[pick] % W] = 1
        diff = img.astype(np.int16)
        diff[:, 1:] -= img[:, :-1]
        diff[:, :, 1:] -= img[:, :, :-1]
        diff[:, 1:, 1:] += img[:, :-1, :-1]
        e, r, c = np.nonzero(diff)
        rows.append(r)
        cols.append(c)
        signs.append(diff[e, r, c].astype(np.float32))
        ptr.append(np.bincount(e, minlength=hi - lo).astype(np.int64))
    ptr_all = np.cumsum(np.concatenate(ptr))
    return (
        ptr_all.astype(np.int64),
        np.concatenate(rows).astype(np.int64),
        np.concatenate(cols).astype(np.int64),
        np.concatenate(signs),
    )


def _blocks(n: int) -> int:
    """Blocks of observations for the first layer's compiled loops, one per thread: as many
    threads as torch uses (the trainer's ``threads``; one in evaluation workers)."""
    torch_threads = torch.get_num_threads()
    threads: int = max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]  # numba sets its config at run time
    numba.set_num_threads(threads)
    # The first call starts numba's OpenMP pool, which resets the OpenMP thread count torch
    # reads back as its own (to all the cores): keep the process's setting.
    if torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    return max(1, min(n, threads))


class SparseConvPool(torch.autograd.Function):
    """conv1 → ReLU → 2 × 2 average pooling of sparse observations (module docstring);
    output float32, shape ``(N, C, ⌊T/2⌋, ⌊W/2⌋)``, channels-last."""

    @staticmethod
    def forward(
        ctx: Any,
        weight: torch.Tensor,
        bias: torch.Tensor,
        terms: torch.Tensor,
        weights: torch.Tensor,
        geometry: ObsGeometry,
    ) -> torch.Tensor:
        """The pooled feature map of the observations ``(terms, weights)``."""
        T, W = geometry.shape
        k = _kernel(weight)
        b = bias.detach().float().contiguous().numpy()
        n, c = terms.shape[0], k.shape[2]
        out = np.empty((n, T // 2, W // 2, c), dtype=np.float32)
        active = np.empty((n, 2 * (T // 2), 2 * (W // 2), c), dtype=np.bool_)
        layer1_forward(_sparse(terms, weights, geometry), (k, b), out, active, _blocks(n))
        ctx.save_for_backward(terms, weights)
        ctx.geometry, ctx.active, ctx.shapes = geometry, active, (weight, bias)
        return torch.from_numpy(out).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """Gradients of conv1's weight and bias (the observations are data)."""
        terms, weights = ctx.saved_tensors
        weight, bias = ctx.shapes
        k = weight.shape[-1]
        g = grad.float().permute(0, 2, 3, 1).contiguous().numpy()
        grad_k = np.zeros((k, k, weight.shape[0]), dtype=np.float64)
        grad_b = np.zeros(weight.shape[0], dtype=np.float64)
        obs = _sparse(terms, weights, ctx.geometry)
        layer1_backward(obs, k, ctx.active, g, (grad_k, grad_b), _blocks(len(terms)))
        grad_w = torch.from_numpy(grad_k).permute(2, 0, 1).reshape(weight.shape)
        return grad_w.to(weight.dtype), torch.from_numpy(grad_b).to(bias.dtype), None, None, None


def _sparse(terms: torch.Tensor, weights: torch.Tensor, geometry: ObsGeometry) -> Sparse:
    """The observations ``(terms, weights)`` as the compiled layer takes them."""
    T, W = geometry.shape
    return terms.numpy(), weights.numpy(), *corner_table(geometry), T, W


def _kernel(weight: torch.Tensor) -> np.ndarray:
    """conv1's weight ``(C, 1, k, k)`` as a contiguous float32 array ``(k, k, C)``."""
    return weight.detach().float()[:, 0].permute(1, 2, 0).contiguous().numpy()
