"""DeepRM_Plus's CNN (Guo et al. 2021, Table I, Fig. 3) and its exact fast first layer.

The network (:class:`CNNPlusNet`, registered as ``"cnn-plus"`` in
:data:`schedlab.policies.networks.NETWORKS`) reads the DeepRM image as one channel. Its first
block — conv1 (5 × 5, "same" zero padding), ReLU, 2 × 2 average pooling — dominates the cost on a
CPU (the 8 × 20 × 224 feature map is twice the size of conv2's), and its input is a sum of a few
dozen rectangles (:mod:`schedlab.simulator.views.deeprm_image`). :meth:`CNNPlusNet.forward_obs`
computes that block from the sparse terms without building images:

* every dictionary entry is stored by the **corners** of its indicator image, the non-zeros of
  its 2-D difference ``D[a, b] = I[a, b] − I[a−1, b] − I[a, b−1] + I[a−1, b−1]`` (four per
  rectangle, 8 for the backlog's two rectangles), so an image is ``I = P(D)`` with ``P`` the 2-D
  prefix sum and ``D`` holds ~250 non-zeros;
* convolution commutes with ``P``: ``conv(I, K) = P(conv(D, K))``. The kernel is stamped at each
  corner (250 × 25 × 8 multiply-adds), two prefix-sum passes give the pre-activations of every
  pixel and channel (the second, along each row, in the same loop as bias, ReLU and pooling:
  :func:`_layer1_forward`);
* the weight gradient uses the adjoint: ``Σ_{y,x} g[y, x] · I[y+u−p, x+v−p] = Σ_corners d ·
  S(g)[a−u+p, b−v+p]`` with ``S`` the 2-D suffix sum of the pre-activation gradient ``g``
  (:func:`_layer1_backward`; the forward pass keeps which pixels were active, 1 byte each).

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
            self.conv1.weight, self.conv1.bias, torch.from_numpy(obs.terms),
            torch.from_numpy(obs.weights), obs.geometry,
        )  # fmt: skip
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
        return self.fc2(torch.tanh(hidden))


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
    threads = max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]  # numba sets its config at run time
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
        table = corner_table(geometry)
        k = _kernel(weight)
        b = bias.detach().float().contiguous().numpy()
        n, c = terms.shape[0], k.shape[2]
        out = np.empty((n, T // 2, W // 2, c), dtype=np.float32)
        active = np.empty((n, 2 * (T // 2), 2 * (W // 2), c), dtype=np.bool_)
        _layer1_forward(terms.numpy(), weights.numpy(), *table, k, b, T, W, out, active, _blocks(n))
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
        _layer1_backward(
            terms.numpy(), weights.numpy(), *corner_table(ctx.geometry), k, ctx.active, g,
            grad_k, grad_b, _blocks(len(terms)),
        )  # fmt: skip
        grad_w = torch.from_numpy(grad_k).permute(2, 0, 1).reshape(weight.shape)
        return grad_w.to(weight.dtype), torch.from_numpy(grad_b).to(bias.dtype), None, None, None


def _kernel(weight: torch.Tensor) -> np.ndarray:
    """conv1's weight ``(C, 1, k, k)`` as a contiguous float32 array ``(k, k, C)``."""
    return weight.detach().float()[:, 0].permute(1, 2, 0).contiguous().numpy()


@numba.njit(cache=True, inline="always")
def _preactivations(
    terms: np.ndarray, weights: np.ndarray, n: int, ptr: np.ndarray, crow: np.ndarray,
    ccol: np.ndarray, csign: np.ndarray, kernel: np.ndarray, T: int, W: int, buf: np.ndarray,
) -> None:  # fmt: skip
    """Pre-activations (without bias) of observation ``n`` into ``buf`` (shape
    ``(T + 2p + 1, W + 2p + 1, C)``), summed down the columns only: pixel ``(y, x)`` is
    ``buf[y + p, :x + p + 1].sum(axis=0)``; the sums along each row are left to the caller's
    loop over the row (:func:`_forward_block`)."""
    k, C = kernel.shape[0], kernel.shape[2]
    p = k // 2
    buf[:] = 0.0
    for t in range(terms.shape[1]):
        e = terms[n, t]
        w = weights[n, t]
        if e == 0 or w == 0.0:
            continue
        for q in range(ptr[e], ptr[e + 1]):
            d = csign[q] * w
            for u in range(k):
                a = crow[q] - u + 2 * p
                for v in range(k):
                    b = ccol[q] - v + 2 * p
                    for c in range(C):
                        buf[a, b, c] += d * kernel[u, v, c]
    for a in range(1, T + p):
        for b in range(buf.shape[1]):
            for c in range(C):
                buf[a, b, c] += buf[a - 1, b, c]


@numba.njit(cache=True, parallel=True)
def _layer1_forward(
    terms: np.ndarray, weights: np.ndarray, ptr: np.ndarray, crow: np.ndarray,
    ccol: np.ndarray, csign: np.ndarray, kernel: np.ndarray, bias: np.ndarray, T: int, W: int,
    out: np.ndarray, active: np.ndarray, blocks: int,
) -> None:  # fmt: skip
    """``out[n, y, x, c]`` = mean over the 2 × 2 block of ReLU(conv1 + bias), shape
    ``(N, ⌊T/2⌋, ⌊W/2⌋, C)``; ``active[n, y, x, c]`` (bool, ``(N, 2⌊T/2⌋, 2⌊W/2⌋, C)``)
    records where the pre-activation is positive (for the backward pass). Observations are
    split into ``blocks`` contiguous blocks, one per thread."""
    N = terms.shape[0]
    for blk in numba.prange(blocks):
        lo, hi = blk * N // blocks, (blk + 1) * N // blocks
        _forward_block(
            terms, weights, ptr, crow, ccol, csign, kernel, bias, T, W, out, active, lo, hi
        )


@numba.njit(cache=True)
def _forward_block(
    terms: np.ndarray, weights: np.ndarray, ptr: np.ndarray, crow: np.ndarray,
    ccol: np.ndarray, csign: np.ndarray, kernel: np.ndarray, bias: np.ndarray, T: int, W: int,
    out: np.ndarray, active: np.ndarray, lo: int, hi: int,
) -> None:  # fmt: skip
    """:func:`_layer1_forward` for observations ``lo:hi`` (a plain loop: outside the parallel
    region, the compiler vectorizes it better)."""
    k, C = kernel.shape[0], kernel.shape[2]
    p = k // 2
    zero, quarter = np.float32(0.0), np.float32(0.25)
    buf = np.zeros((T + 2 * p + 1, W + 2 * p + 1, C), dtype=np.float32)
    acc = np.zeros(C, dtype=np.float32)
    for n in range(lo, hi):
        _preactivations(terms, weights, n, ptr, crow, ccol, csign, kernel, T, W, buf)
        for y in range(T // 2):
            pooled = out[n, y]
            pooled[:] = zero
            for dy in range(2):
                row, on = buf[2 * y + dy + p], active[n, 2 * y + dy]
                acc[:] = zero  # prefix sum along the row, pixel by pixel
                for b in range(p):
                    for c in range(C):
                        acc[c] += row[b, c]
                for x in range(2 * (W // 2)):
                    for c in range(C):
                        acc[c] += row[x + p, c]
                        v = acc[c] + bias[c]
                        on[x, c] = v > zero
                        pooled[x >> 1, c] += quarter * max(v, zero)


@numba.njit(cache=True, parallel=True)
def _layer1_backward(
    terms: np.ndarray, weights: np.ndarray, ptr: np.ndarray, crow: np.ndarray,
    ccol: np.ndarray, csign: np.ndarray, k: int, active: np.ndarray, grad: np.ndarray,
    grad_kernel: np.ndarray, grad_bias: np.ndarray, blocks: int,
) -> None:  # fmt: skip
    """Accumulate the gradients of conv1's kernel ``(k, k, C)`` and bias ``(C,)`` (float64)
    from the gradient of the pooled output ``grad`` (``(N, ⌊T/2⌋, ⌊W/2⌋, C)``) and the
    forward pass's ``active`` pixels. Each of ``blocks`` threads sums one contiguous block of
    observations into its own accumulators; the blocks' sums are added in a fixed order
    (deterministic for a given thread count)."""
    N, C = active.shape[0], grad.shape[3]
    part_k = np.zeros((blocks, k, k, C), dtype=np.float64)
    part_b = np.zeros((blocks, C), dtype=np.float64)
    for blk in numba.prange(blocks):
        lo, hi = blk * N // blocks, (blk + 1) * N // blocks
        _backward_block(
            terms, weights, ptr, crow, ccol, csign, k, active, grad, part_k[blk], part_b[blk],
            lo, hi,
        )  # fmt: skip
    for blk in range(blocks):
        grad_kernel += part_k[blk]
        grad_bias += part_b[blk]


@numba.njit(cache=True)
def _backward_block(
    terms: np.ndarray, weights: np.ndarray, ptr: np.ndarray, crow: np.ndarray,
    ccol: np.ndarray, csign: np.ndarray, k: int, active: np.ndarray, grad: np.ndarray,
    gk: np.ndarray, gb: np.ndarray, lo: int, hi: int,
) -> None:  # fmt: skip
    """:func:`_layer1_backward` for observations ``lo:hi`` into ``gk`` and ``gb``."""
    C = grad.shape[3]
    p = k // 2
    T2, W2 = active.shape[1], active.shape[2]
    zero, quarter = np.float32(0.0), np.float32(0.25)
    g = np.zeros((T2 + 2 * p + 2, W2 + 2 * p + 2, C), dtype=np.float32)
    acc = np.zeros(C, dtype=np.float32)
    for n in range(lo, hi):
        g[:p] = zero  # the only cells the previous observation's sums left behind
        for y in range(T2):  # pixel gradients, summed along the row from the right
            row, on, pooled = g[y + p], active[n, y], grad[n, y >> 1]
            acc[:] = zero
            for x in range(W2 - 1, -1, -1):
                for c in range(C):
                    gv = quarter * pooled[x >> 1, c] if on[x, c] else zero
                    gb[c] += gv
                    acc[c] += gv
                    row[x + p, c] = acc[c]
            for b in range(p):
                for c in range(C):
                    row[b, c] = acc[c]
        for a in range(T2 + p - 1, -1, -1):  # then along the columns: S[a, b] = Σ_{i≥a, j≥b} g
            for b in range(g.shape[1]):
                for c in range(C):
                    g[a, b, c] += g[a + 1, b, c]
        for t in range(terms.shape[1]):
            e = terms[n, t]
            w = weights[n, t]
            if e == 0 or w == 0.0:
                continue
            for q in range(ptr[e], ptr[e + 1]):
                d = csign[q] * w
                for u in range(k):
                    a = crow[q] - u + 2 * p
                    for v in range(k):
                        b = ccol[q] - v + 2 * p
                        for c in range(C):
                            gk[u, v, c] += d * g[a, b, c]
