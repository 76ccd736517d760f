"""Randomness only through explicit :class:`numpy.random.Generator` objects (style.md §2)."""

from __future__ import annotations

import numpy as np

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """A Generator for ``seed``: an int, a SeedSequence, a Generator, or None (OS entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
