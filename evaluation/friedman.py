"""The Friedman omnibus test over policies, paired by jobset, with a p-value fit for few jobsets.

Statistic
---------
Ranks within each jobset (1 = lowest value, ties averaged:
:func:`~schedlab.evaluation.compare.within_block_ranks`); tie-corrected statistic
``chi2 = (12/(n k (k+1)) Σ R_j² − 3 n (k+1)) / (1 − Σ(t³ − t)/(n k (k² − 1)))`` with ``R_j``
the rank sums (as :func:`scipy.stats.friedmanchisquare`); Kendall's ``W = chi2 / (n (k − 1))``;
Iman–Davenport ``F = (n − 1) chi2 / (n (k − 1) − chi2)`` on ``(k − 1, (k − 1)(n − 1))``
degrees of freedom (Demšar 2006, JMLR 7, §3.2.2), undefined (``None``, never infinite) when
``W = 1``.

p-value
-------
Under the null hypothesis the (mid-)ranks of each jobset are exchangeable: each row's ranks are
permuted over the ``k`` policies independently of the other rows, each distinct arrangement
equally likely. The tie correction depends only on the rows' tie patterns, which permutations
keep, so ``chi2`` increases with ``S = Σ_j R_j²`` and ``p = P(S >= S_obs)``.
:attr:`FriedmanResult.method` says which p-value :attr:`FriedmanResult.p` is and
:attr:`FriedmanResult.reason` why:

``"exact"``
    Below :data:`SMALL_BLOCKS` jobsets (where the χ² and F approximations are poor: with 3
    jobsets and ``W = 1`` the F is infinite and χ² gives 0.05 where the exact p is 1/36), and
    whenever ``W = 1``. The null distribution of the rank-sum vector is built jobset by jobset
    (a convolution over rows, on doubled ranks so mid-ranks are integers); states are kept sorted
    because the distribution is symmetric in the policies. Used while a row's states ×
    arrangements stay within :data:`EXACT_WORK`.
``"permutation"``
    Where that enumeration is too large (many policies): :data:`PERMUTATIONS` random
    within-jobset permutations from a seeded Generator, ``p = (1 + #{S* >= S_obs}) / (1 + B)``
    (never 0).
``"iman-davenport"``
    From :data:`SMALL_BLOCKS` jobsets on, the F approximation (less conservative than χ²).

When every jobset ties every policy, ``S`` is the same under every permutation: ``chi2 = F =
W = 0`` and ``p = 1`` (exact).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from schedlab.evaluation.compare import within_block_ranks
from schedlab.evaluation.stats import require_finite

SMALL_BLOCKS = 10
"""Below this many jobsets the p-value is exact (or a permutation test), not the F approximation."""
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


@dataclass(frozen=True, kw_only=True, slots=True)
class FriedmanResult:
    """Friedman test, Iman–Davenport correction, Kendall's W and the p-value used (module doc)."""

    n_blocks: int
    """Jobsets (blocks), n."""
    k: int
    """Policies (treatments)."""
    mean_ranks: tuple[float, ...]
    """Average rank of each policy over jobsets (1 = lowest value = best), in column order."""
    chi2: float
    """Tie-corrected Friedman statistic."""
    p_chi2: float
    """p-value of ``chi2`` against chi-square with k − 1 degrees of freedom (approximation)."""
    f: float | None
    """Iman–Davenport statistic; None when every jobset ranks the policies identically (W = 1)."""
    df1: int
    """Numerator degrees of freedom, k − 1."""
    df2: int
    """Denominator degrees of freedom, (k − 1)(n − 1)."""
    p_f: float | None
    """p-value of the Iman–Davenport F (approximation); None when ``f`` is None."""
    p: float
    """The omnibus p-value reported, computed by :attr:`method`."""
    method: Method
    """How :attr:`p` was computed: ``"exact"``, ``"permutation"`` or ``"iman-davenport"``."""
    reason: str
    """Why that method, in words (for reports)."""
    kendall_w: float
    """Kendall's coefficient of concordance in [0, 1]."""


def friedman(matrix: np.ndarray, *, rng: np.random.Generator | None = None) -> FriedmanResult:
    """Friedman test over the columns of ``matrix`` (n jobsets × k policies), lower = better.

    Parameters
    ----------
    matrix
        Per-jobset values, shape ``(n, k)`` with ``n >= 2`` and ``k >= 2``, finite.
    rng
        Source of the permutation test's randomness (used only when :attr:`FriedmanResult.method`
        is ``"permutation"``); None: ``numpy.random.default_rng(0)``, so results reproduce.

    Raises
    ------
    ValueError
        If the shape is wrong; :class:`~schedlab.errors.NonFiniteValueError` on NaN or ±inf
        (naming the row = jobset index and column = policy index).
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 2 or m.shape[1] < 2:
        msg = f"need at least 2 jobsets and 2 policies, got shape {m.shape}"
        raise ValueError(msg)
    require_finite(m, "per-jobset values (rows: jobsets, columns: policies)")
    n, k = m.shape
    ranks = within_block_ranks(m)
    rank_sums = ranks.sum(axis=0)
    ties = sum(
        float(np.sum(c**3 - c)) for c in (np.unique(r, return_counts=True)[1] for r in ranks)
    )
    denom = 1.0 - ties / (n * k * (k * k - 1))
    common = {
        "n_blocks": n,
        "k": k,
        "mean_ranks": tuple(float(v) for v in rank_sums / n),
        "df1": k - 1,
        "df2": (k - 1) * (n - 1),
    }
    if denom <= 1e-12:
        return FriedmanResult(
            **common,
            chi2=0.0,
            p_chi2=1.0,
            f=0.0,
            p_f=1.0,
            p=1.0,
            method="exact",
            reason="every jobset ties every policy: the statistic is 0 under every permutation",
            kendall_w=0.0,
        )
    chi2 = (12.0 / (n * k * (k + 1)) * float(np.sum(rank_sums**2)) - 3.0 * n * (k + 1)) / denom
    chi2 = max(chi2, 0.0)
    f, p_f = iman_davenport(chi2, n, k)
    method, p, reason = _omnibus_p(ranks, p_f, rng)
    return FriedmanResult(
        **common,
        chi2=chi2,
        p_chi2=float(sps.chi2.sf(chi2, k - 1)),
        f=f,
        p_f=p_f,
        p=p,
        method=method,
        reason=reason,
        kendall_w=min(1.0, chi2 / (n * (k - 1))),
    )


def _omnibus_p(
    ranks: np.ndarray, p_f: float | None, rng: np.random.Generator | None
) -> tuple[Method, float, str]:
    """Method, p-value and reason for within-jobset ``ranks`` (module docstring)."""
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
    states, prob = np.zeros((1, k), dtype=np.int64), np.ones(1)
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


def iman_davenport(chi2: float, n_blocks: int, k: int) -> tuple[float | None, float | None]:
    """Iman–Davenport ``F`` from a Friedman ``chi2`` and its p-value on (k−1, (k−1)(n−1)) df.

    Returns ``(None, None)`` when ``chi2`` reaches its maximum ``n (k − 1)`` (``W = 1``), where
    ``F`` is infinite and its approximate p-value (0) meaningless.
    """
    n = n_blocks
    gap = n * (k - 1) - chi2
    if gap <= 1e-12 * n * (k - 1):
        return None, None
    f = (n - 1) * chi2 / gap
    return f, float(sps.f.sf(f, k - 1, (k - 1) * (n - 1)))


def friedman_from_ranks(mean_ranks: np.ndarray, n_blocks: int) -> tuple[float, float | None]:
    """Friedman ``chi2`` (no tie correction) and Iman–Davenport ``F`` from average ranks.

    Demšar (2006) eq. in §3.2.2: ``chi2 = 12 n / (k (k + 1)) (Σ R_j² − k (k + 1)² / 4)``.
    """
    r = np.asarray(mean_ranks, dtype=np.float64)
    k, n = r.size, n_blocks
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(r**2)) - k * (k + 1) ** 2 / 4.0)
    return chi2, iman_davenport(chi2, n, k)[0]
