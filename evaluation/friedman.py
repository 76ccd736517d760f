"""The Friedman test over k policies on n jobsets, its Iman–Davenport correction and Kendall's W,
and the Nemenyi critical difference of average ranks.

The definitions (ties, the tie-corrected statistic, the p-value reported and why) are those of
:mod:`schedlab.evaluation.compare`, which re-exports every name here. Values are per-jobset
averages, lower is better; ranks are within each jobset after
:func:`~schedlab.evaluation.ties.snap`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from schedlab.evaluation.permutation import Method, friedman_p
from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.evaluation.stats import require_finite
from schedlab.evaluation.ties import snap

TIED = "every jobset ties every policy: the statistic is 0 under every permutation"
"""The :attr:`FriedmanResult.reason` when no jobset separates any two policies (p = 1)."""


def within_block_ranks(matrix: np.ndarray) -> np.ndarray:
    """Ranks within each row (1 = lowest), ties averaged, after :func:`snap`; shape kept."""
    m = np.asarray(matrix, dtype=np.float64)
    ranks: np.ndarray = sps.rankdata(snap(m), axis=1)
    return ranks


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
    tied = denom <= 1e-12  # every jobset ties every policy: the statistic is 0
    stat = 12.0 / (n * k * (k + 1)) * float(np.sum(rank_sums**2)) - 3.0 * n * (k + 1)
    chi2 = 0.0 if tied else max(stat / denom, 0.0)
    f, p_f = iman_davenport(chi2, n, k)
    exact: tuple[Method, float, str] = ("exact", 1.0, TIED)
    method, p, reason = exact if tied else friedman_p(ranks, p_f, rng)
    return FriedmanResult(
        n_blocks=n,
        k=k,
        mean_ranks=tuple(float(v) for v in rank_sums / n),
        df1=k - 1,
        df2=(k - 1) * (n - 1),
        chi2=chi2,
        p_chi2=float(sps.chi2.sf(chi2, k - 1)),
        f=f,
        p_f=p_f,
        p=p,
        method=method,
        reason=reason,
        kendall_w=min(1.0, chi2 / (n * (k - 1))),
    )


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


def nemenyi_q(k: int, alpha: float = DEFAULT_STATS.alpha) -> float:
    """Nemenyi ``q_alpha``: the studentized range quantile (k groups, infinite df) / sqrt(2)."""
    if k < 2:
        msg = f"need at least 2 policies, got {k}"
        raise ValueError(msg)
    return float(sps.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)


def nemenyi_cd(k: int, n_blocks: int, alpha: float = DEFAULT_STATS.alpha) -> float:
    """Nemenyi critical difference of average ranks, ``q_alpha sqrt(k (k + 1) / (6 n))``."""
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_blocks))
