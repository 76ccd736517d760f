"""The Friedman test's p-value below 10 jobsets: exact enumeration or random permutations.

:func:`friedman_p` chooses: from :data:`SMALL_BLOCKS` jobsets on, the Iman–Davenport F
approximation (``"iman-davenport"``); with fewer jobsets, or when every jobset ranks the
policies identically (``W = 1``, F infinite), the exact p (``"exact"``), or a seeded
permutation test (``"permutation"``) where exact enumeration is too large.

Under the null hypothesis of the Friedman test the (mid-)ranks of each jobset are exchangeable:
each row of the ``(n jobsets, k policies)`` rank matrix is permuted over the columns
independently of the other rows, each of its distinct arrangements equally likely. The rank
sums ``R_j`` then have a known distribution, and the statistic increases with
``S = Σ_j R_j²`` (the tie correction depends only on the rows' tie patterns, which
permutations keep), so the p-value is ``P(S >= S_obs)``. Ranks are doubled so that mid-ranks
are integers.

* :func:`exact_sf`: the distribution of the rank-sum vector built jobset by jobset (a
  convolution over rows); states are kept sorted because the distribution is symmetric in the
  policies. Exact (up to float rounding of the probabilities) while a row's states ×
  arrangements stay within :data:`EXACT_WORK`; closed-form when every row is the same.
* :func:`permutation_sf`: :data:`PERMUTATIONS` random within-jobset permutations from a given
  Generator, ``p = (1 + #{S* >= S_obs}) / (1 + B)`` (never 0).
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import numpy as np

SMALL_BLOCKS = 10
"""Below this many jobsets the Friedman p is exact (or a permutation test), not the F's."""
EXACT_WORK = 1_000_000
"""Largest number of candidate states (states × arrangements of one jobset) the exact test
enumerates; above it the permutation test is used."""
PERMUTATIONS = 20_000
"""Random within-jobset permutations of the permutation test."""
Method = Literal["exact", "permutation", "iman-davenport"]
METHOD_LABELS: dict[str, str] = {
    "exact": "exact",
    "permutation": f"permutation ({PERMUTATIONS:,})",
    "iman-davenport": "Iman–Davenport F",
}
"""Short name of each p-value method, for report tables."""


def friedman_p(
    ranks: np.ndarray, p_f: float | None, rng: np.random.Generator | None
) -> tuple[Method, float, str]:
    """Which p-value the Friedman test reports, the p-value, and why (module docstring).

    Parameters
    ----------
    ranks
        Within-jobset (mid-)ranks, shape ``(n, k)``.
    p_f
        The Iman–Davenport p-value, None when F is undefined (``W = 1``).
    rng
        Source of the permutation test (None: ``numpy.random.default_rng(0)``).
    """
    n = ranks.shape[0]
    if n >= SMALL_BLOCKS and p_f is not None:
        return "iman-davenport", p_f, f"{n} jobsets: Iman–Davenport F approximation"
    why = (
        f"{n} jobsets, fewer than {SMALL_BLOCKS}: the χ² and F approximations are unreliable"
        if n < SMALL_BLOCKS
        else "every jobset ranks the policies identically (W = 1), where F is infinite"
    )
    doubled = np.rint(2.0 * ranks).astype(np.int64)
    s_obs = int(np.sum(doubled.sum(axis=0) ** 2))
    p = exact_sf(doubled, s_obs)
    if p is not None:
        return "exact", p, f"{why}; exact permutation distribution of the statistic"
    gen = rng if rng is not None else np.random.default_rng(0)
    p = permutation_sf(doubled, s_obs, gen)
    return "permutation", p, f"{why}; {PERMUTATIONS:,} random within-jobset permutations"


def _arrangements(row: tuple[int, ...]) -> np.ndarray:
    """Distinct orderings of ``row``, shape ``(m, k)`` (``m = k! / Π t!`` for tie sizes t)."""
    return np.unique(np.array(list(itertools.permutations(row)), dtype=np.int64), axis=0)


def exact_sf(doubled: np.ndarray, s_obs: int, *, max_work: int = EXACT_WORK) -> float | None:
    """``P(Σ_j R_j² >= s_obs)`` when each row of ``doubled`` is permuted uniformly at random.

    When every row is the same vector ``r`` (then ``W = 1``), the answer is closed-form:
    ``S`` is largest exactly when all rows take the same arrangement (Cauchy–Schwarz), so
    ``p = m^(1 − n)`` with ``m`` the distinct arrangements of ``r``. Otherwise the distribution
    of the sorted rank-sum vector is built row by row (module docstring).

    Parameters
    ----------
    doubled
        Within-jobset ranks times 2 (integers), shape ``(n, k)``.
    s_obs
        Observed sum of squared column sums of ``doubled``.
    max_work
        Give up (return None) when a row would create more than this many candidate states.

    Returns
    -------
    float or None
        The exact upper-tail probability, or None when the enumeration is too large.
    """
    n, k = doubled.shape
    if np.all(doubled == doubled[0]):
        m = math.factorial(k) // math.prod(
            math.factorial(c) for c in np.unique(doubled[0], return_counts=True)[1]
        )
        return float(m ** (1.0 - n))
    base = int(doubled.max()) * n + 1  # column sums are below it
    if math.factorial(k) > max_work or base ** (k - 1) >= 2**62:
        return None
    place = base ** np.arange(k - 1, dtype=np.int64)  # the last column follows from the sum
    states = np.zeros((1, k), dtype=np.int64)
    prob: np.ndarray = np.ones(1)
    cache: dict[tuple[int, ...], np.ndarray] = {}
    for row in doubled:
        key = tuple(sorted(int(v) for v in row))
        arr = cache.setdefault(key, _arrangements(key))
        if states.shape[0] * arr.shape[0] > max_work:
            return None
        cand = np.sort((states[:, None, :] + arr[None, :, :]).reshape(-1, k), axis=1)
        _, first, inverse = np.unique(cand[:, :-1] @ place, return_index=True, return_inverse=True)
        weights = np.repeat(prob / arr.shape[0], arr.shape[0])
        states, prob = cand[first], np.bincount(inverse, weights=weights, minlength=first.size)
    s = np.sum(states**2, axis=1)
    return float(min(1.0, prob[s >= s_obs].sum()))


def permutation_sf(
    doubled: np.ndarray,
    s_obs: int,
    rng: np.random.Generator,
    n_permutations: int = PERMUTATIONS,
) -> float:
    """Monte Carlo ``P(Σ_j R_j² >= s_obs)``: ``(1 + hits) / (1 + n_permutations)``.

    Each permutation shuffles every row of ``doubled`` (shape ``(n, k)``) independently.
    """
    n, k = doubled.shape
    batch = max(1, min(1000, 2_000_000 // (n * k)))
    hits = 0
    for start in range(0, n_permutations, batch):
        size = min(batch, n_permutations - start)
        shuffled = rng.permuted(np.broadcast_to(doubled, (size, n, k)), axis=2)
        hits += int(np.sum(np.sum(shuffled.sum(axis=1) ** 2, axis=1) >= s_obs))
    return (1 + hits) / (1 + n_permutations)
