"""DeepRM_Plus's first block (conv1, ReLU, 2 × 2 average pooling) computed exactly from sparse
observations, compiled (numba, ``cache=True``): the fast path of
:meth:`schedlab.policies.cnn_plus.CNNPlusNet.forward_obs`.

* every dictionary entry is stored by the **corners** of its indicator image, the non-zeros of
  its 2-D difference ``D[a, b] = I[a, b] − I[a−1, b] − I[a, b−1] + I[a−1, b−1]`` (four per
  rectangle, 8 for the backlog's two rectangles), so an image is ``I = P(D)`` with ``P`` the 2-D
  prefix sum and ``D`` holds ~250 non-zeros;
* convolution commutes with ``P``: ``conv(I, K) = P(conv(D, K))``. The kernel is stamped at each
  corner (250 × 25 × 8 multiply-adds), two prefix-sum passes give the pre-activations of every
  pixel and channel (the second, along each row, in the same loop as bias, ReLU and pooling:
  :func:`layer1_forward`);
* the weight gradient uses the adjoint: ``Σ_{y,x} g[y, x] · I[y+u−p, x+v−p] = Σ_corners d ·
  S(g)[a−u+p, b−v+p]`` with ``S`` the 2-D suffix sum of the pre-activation gradient ``g``
  (:func:`layer1_backward`; the forward pass keeps which pixels were active, 1 byte each).

Both passes walk the same corners through the same kernel offsets (:func:`_stamp`).
"""

from __future__ import annotations

import numba
import numpy as np

Sparse = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]
"""Sparse observations ``(terms, weights, ptr, row, col, sign, T, W)``: per observation ``n``
the dictionary entries ``terms[n]`` (int, 0: none) with their ``weights[n]`` (float32), the
entries' corners (:func:`~schedlab.policies.cnn_plus.corner_table`), and the image's height ``T``
and width ``W``. Flat: a parallel loop takes no nested tuple."""
Conv = tuple[np.ndarray, np.ndarray]
"""conv1's ``(kernel, bias)``, float32 ``(k, k, C)`` and ``(C,)``, or their float64 gradients."""


@numba.njit(cache=True, inline="always")
def _stamp(obs: Sparse, n: int, grid: np.ndarray, kernel: np.ndarray, forward: bool) -> None:
    """Every corner of every dictionary term of observation ``n`` through every kernel offset
    ``(u, v)``: the pixel ``(a, b)`` of the padded ``grid`` (``(·, ·, C)``) it reaches. Forward,
    adds ``d · kernel[u, v]`` to ``grid[a, b]`` (the pre-activations, summed down the columns
    by the caller); backward, adds ``d · grid[a, b]`` to ``kernel[u, v]`` (the kernel's
    gradient from the summed pixel gradients). ``d`` is the corner's sign times the term's
    weight; ``kernel`` is ``(k, k, C)``."""
    terms, weights, ptr, crow, ccol, csign, _, _ = obs
    k, C = kernel.shape[0], kernel.shape[2]
    p = k // 2
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
                    if forward:
                        for c in range(C):
                            grid[a, b, c] += d * kernel[u, v, c]
                    else:
                        for c in range(C):
                            kernel[u, v, c] += d * grid[a, b, c]


@numba.njit(cache=True, inline="always")
def _preactivations(obs: Sparse, n: int, kernel: np.ndarray, buf: np.ndarray) -> None:
    """Pre-activations (without bias) of observation ``n`` into ``buf`` (shape
    ``(T + 2p + 1, W + 2p + 1, C)``), summed down the columns only: pixel ``(y, x)`` is
    ``buf[y + p, :x + p + 1].sum(axis=0)``; the sums along each row are left to the caller's
    loop over the row (:func:`_forward_block`)."""
    k, C, T = kernel.shape[0], kernel.shape[2], obs[-2]
    p = k // 2
    buf[:] = 0.0
    _stamp(obs, n, buf, kernel, True)
    for a in range(1, T + p):
        for b in range(buf.shape[1]):
            for c in range(C):
                buf[a, b, c] += buf[a - 1, b, c]


@numba.njit(cache=True, parallel=True)
def layer1_forward(
    obs: Sparse, conv: Conv, out: np.ndarray, active: np.ndarray, blocks: int
) -> None:
    """With ``conv`` = ``(kernel, bias)`` (float32 ``(k, k, C)`` and ``(C,)``),
    ``out[n, y, x, c]`` = mean over the 2 × 2 block of ReLU(conv1 + bias), shape
    ``(N, ⌊T/2⌋, ⌊W/2⌋, C)``; ``active[n, y, x, c]`` (bool, ``(N, 2⌊T/2⌋, 2⌊W/2⌋, C)``)
    records where the pre-activation is positive (for the backward pass). Observations are
    split into ``blocks`` contiguous blocks, one per thread."""
    N = obs[0].shape[0]
    for blk in numba.prange(blocks):
        lo, hi = blk * N // blocks, (blk + 1) * N // blocks
        _forward_block(obs, conv, out, active, lo, hi)


@numba.njit(cache=True)
def _forward_block(
    obs: Sparse, conv: Conv, out: np.ndarray, active: np.ndarray, lo: int, hi: int
) -> None:
    """:func:`layer1_forward` for observations ``lo:hi`` (a plain loop: outside the parallel
    region, the compiler vectorizes it better)."""
    kernel, bias = conv
    T, W = obs[-2:]
    k, C = kernel.shape[0], kernel.shape[2]
    p = k // 2
    zero, quarter = np.float32(0.0), np.float32(0.25)
    buf = np.zeros((T + 2 * p + 1, W + 2 * p + 1, C), dtype=np.float32)
    acc = np.zeros(C, dtype=np.float32)
    for n in range(lo, hi):
        _preactivations(obs, n, kernel, buf)
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
def layer1_backward(
    obs: Sparse, k: int, active: np.ndarray, grad: np.ndarray, grads: Conv, blocks: int
) -> None:
    """Accumulate into ``grads`` the gradients of conv1's kernel ``(k, k, C)`` and bias ``(C,)``
    (float64) from the gradient of the pooled output ``grad`` (``(N, ⌊T/2⌋, ⌊W/2⌋, C)``) and the
    forward pass's ``active`` pixels. Each of ``blocks`` threads sums one contiguous block of
    observations into its own accumulators; the blocks' sums are added in a fixed order
    (deterministic for a given thread count)."""
    N, C = active.shape[0], grad.shape[3]
    part_k = np.zeros((blocks, k, k, C), dtype=np.float64)
    part_b = np.zeros((blocks, C), dtype=np.float64)
    for blk in numba.prange(blocks):
        lo, hi = blk * N // blocks, (blk + 1) * N // blocks
        _backward_block(obs, k, active, grad, (part_k[blk], part_b[blk]), lo, hi)
    grad_kernel, grad_bias = grads
    for blk in range(blocks):
        grad_kernel += part_k[blk]
        grad_bias += part_b[blk]


@numba.njit(cache=True)
def _backward_block(
    obs: Sparse, k: int, active: np.ndarray, grad: np.ndarray, part: Conv, lo: int, hi: int
) -> None:
    """:func:`layer1_backward` for observations ``lo:hi`` into ``part`` = (kernel gradient,
    bias gradient)."""
    gk, gb = part
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
        _stamp(obs, n, g, gk, False)
