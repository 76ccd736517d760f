"""Chen et al.'s convolutional input layer (2017, Table I), evaluated exactly by pattern lookup.

The network: image ``(T, W)`` → 2×2 convolution, 16 filters, stride 1, ReLU → fully connected
softmax over the ``m·M + 1`` actions. (Table I prints an output of 122×18 for a 124×20 input, which
a 2×2 filter at stride 1 cannot give; we use the 2×2 filter and state our shapes: the convolution
outputs ``16 × (T − 1) × (W − 1)``, e.g. 16 × 19 × 143 for two machines and five slots.)

Evaluated directly this is ~650k multiply-adds per decision, on a 43k-value intermediate that
makes a CPU memory-bound: ~1 ms per observation here. But every cell of the image is 0 or 1 except
the last ("extra") column, so a 2×2 patch takes one of 16 **patterns** ``p``, and the convolution
and ReLU of a patch is a table ``R[p, c] = relu(Σ_t k[c, t]·bit_t(p) + b[c])``. The fully
connected layer is linear, so

    logits[a] = Σ_{y,x} Σ_c Wfc[a, c, y, x] · R[p(y, x), c] + bias[a]
              = Σ_{y,x} G[(y, x), p(y, x), a] + bias[a],   G = Wfc ⊗ R   (computed once per batch)

a gather-sum of ``(T − 1)·(W − 2)`` rows of ``G`` per observation (~30k additions instead of 650k
multiply-adds). The patches that touch the extra column are computed directly. It is the same
function as :meth:`ChenCNN.reference` (tested), with gradients for every parameter.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from torch import nn

from schedlab.policies.bag_sum import BagSum, unit_weights
from schedlab.simulator.views.deeprm_image import ObsGeometry

FILTERS = 16
_BITS = torch.tensor([[(p >> t) & 1 for t in range(4)] for p in range(16)], dtype=torch.float32)
"""Pattern ``p`` -> its 2×2 cells in tap order (0,0), (0,1), (1,0), (1,1), shape ``(16, 4)``."""


class ChenCNN(nn.Module):
    """2×2 convolution (16 filters) + ReLU + fully connected logits over images ``(T, W)``.

    Parameters
    ----------
    shape : tuple[int, int]
        ``(T, W)`` of the images.
    n_actions : int
        ``m·M + 1``.
    """

    def __init__(self, shape: tuple[int, int], n_actions: int) -> None:
        super().__init__()
        self.shape = shape
        T, W = shape
        self.conv = nn.Conv2d(1, FILTERS, 2)
        self.fc = nn.Linear(FILTERS * (T - 1) * (W - 1), n_actions)

    @classmethod
    def for_geometry(cls, geometry: ObsGeometry) -> ChenCNN:
        """The network over images of ``geometry``."""
        return cls(geometry.shape, geometry.n_actions)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, n_actions)`` by the plain convolution (slow; the definition)."""
        h = torch.relu(self.conv(x.reshape(-1, 1, *self.shape)))
        logits: torch.Tensor = self.fc(h.flatten(1))
        return logits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, n_actions)`` of images ``x`` (float32, ``(N, T, W)`` or flat), whose
        cells are 0 or 1 except the last column."""
        T, W = self.shape
        x = x.reshape(-1, T, W).contiguous()
        n_actions = self.fc.out_features
        w = self.fc.weight.view(n_actions, FILTERS, T - 1, W - 1)
        k = self.conv.weight.view(FILTERS, 4)
        bias = self.conv.bias
        assert bias is not None  # the convolution is built with a bias
        # patches of the binary columns 0 .. W-2: pattern lookup
        index = np.empty((x.shape[0], (T - 1) * (W - 2)), dtype=np.int32)
        _pattern_index(x.numpy(), index)
        table = torch.relu(_BITS @ k.t() + bias)  # (pattern, filter)
        g = torch.einsum("acm,pc->mpa", w[..., : W - 2].reshape(n_actions, FILTERS, -1), table)
        terms = torch.from_numpy(index)
        main = BagSum.apply(g.reshape(-1, n_actions), terms, unit_weights(terms))
        # patches touching the extra column: directly
        taps = torch.stack(
            [x[:, :-1, W - 2], x[:, :-1, W - 1], x[:, 1:, W - 2], x[:, 1:, W - 1]], dim=-1
        )  # (N, T-1, 4)
        h = torch.relu(taps @ k.t() + bias)  # (N, T-1, 16)
        edge = h.flatten(1) @ w[..., W - 2].permute(2, 1, 0).reshape(-1, n_actions)
        logits: torch.Tensor = main + edge + self.fc.bias
        return logits


@numba.njit(cache=True)
def _pattern_index(x: np.ndarray, out: np.ndarray) -> None:
    """``out[n, y·(W−2) + c] = 16·(y·(W−2) + c) + pattern`` of the patch at ``(y, c)``."""
    T, W = x.shape[1], x.shape[2]
    for n in range(x.shape[0]):
        q = 0
        for y in range(T - 1):
            for c in range(W - 2):
                p = x[n, y, c] + 2 * x[n, y, c + 1] + 4 * x[n, y + 1, c] + 8 * x[n, y + 1, c + 1]
                out[n, q] = 16 * q + int(p)
                q += 1
