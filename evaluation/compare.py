"""Paired comparisons of policies over jobsets: the statistics of a report (design.md §7).

Every function takes **paired** observations: ``x[i]`` and ``ref[i]`` (or row ``i`` of a
``(n_blocks, k)`` matrix) are the per-jobset averages of two policies (or ``k`` policies) on the
same jobset ``i``. Nothing here ever sees pooled per-job values. Lower values are better
(slowdown, completion time).

Definitions
-----------
Ties
    Two per-jobset values are equal when they differ by at most :data:`TIE_RTOL` times the
    largest absolute value of the comparison (:func:`snap`); identical schedules give exactly
    equal averages, but float summation order could otherwise split them.
Geometric-mean ratio (:func:`gm_ratio`)
    ``exp(mean(log(x_i / ref_i)))``; < 1 means ``x`` is lower (better) than the reference. The CI
    is the percentile bootstrap of the mean log ratio over jobsets (pairs resampled together),
    exponentiated; percentile intervals are invariant under the monotone ``exp``.
Wins / ties / losses (:func:`wins_ties_losses`)
    Jobsets where ``x`` is lower / equal / higher than the reference.
Probability of improvement (:func:`prob_improvement`)
    ``(wins + ties / 2) / n``: the chance that ``x`` beats the reference on a random jobset,
    ties counted half, with a percentile-bootstrap CI over jobsets.
Friedman test (:func:`friedman`)
    Ranks within each jobset (1 = lowest value, ties averaged: :func:`within_block_ranks`);
    tie-corrected statistic
    ``chi2 = (12/(n k (k+1)) Σ R_j² − 3 n (k+1)) / (1 − Σ(t³ − t)/(n k (k² − 1)))`` with ``R_j``
    the rank sums (as :func:`scipy.stats.friedmanchisquare`); Kendall's
    ``W = chi2 / (n (k − 1))``; Iman–Davenport ``F = (n − 1) chi2 / (n (k − 1) − chi2)`` on
    ``(k − 1, (k − 1)(n − 1))`` degrees of freedom (Demšar 2006, JMLR 7, §3.2.2), undefined
    (``None``, never infinite) when ``W = 1``. The p-value reported
    (:attr:`FriedmanResult.p`; :attr:`~FriedmanResult.method` says which, and
    :attr:`~FriedmanResult.reason` why; :func:`~schedlab.evaluation.permutation.friedman_p`)
    is the F approximation's from 10 jobsets on; with fewer jobsets (where χ² and F are poor:
    3 jobsets with ``W = 1`` give an infinite F and a χ² p of 0.05 where the exact p is 1/36),
    and whenever ``W = 1``, the **exact** p of the statistic's permutation distribution (each
    jobset's ranks permuted independently, ties kept), or a seeded **permutation** test where
    that enumeration is too large. When every jobset ties every policy,
    ``chi2 = F = W = 0`` and ``p = 1``.
Nemenyi critical difference (:func:`nemenyi_cd`)
    ``CD = q_alpha sqrt(k (k + 1) / (6 n))`` with ``q_alpha`` the studentized range quantile
    over ``sqrt(2)`` (Demšar 2006, Table 5: 2.569 for k = 4 at alpha = 0.05).
Wilcoxon signed-rank (:func:`wilcoxon_pair`)
    Pratt's treatment of zeros (``zero_method="pratt"``: zero differences are ranked with the
    others, then dropped; Pratt 1959). Up to :data:`EXACT_MAX` non-zero differences, the p-value
    is exact: the conditional null distribution of the statistic over all sign assignments of
    the non-zero differences with their (tied) ranks, counted by dynamic programming, so ties
    and zeros are exact too; above that, :func:`scipy.stats.wilcoxon` with
    ``method="asymptotic"`` (normal approximation with Cureton's zero and tie corrections, no
    continuity correction). Matched-pairs **rank-biserial** correlation (Kerby 2014)
    consistent with it:
    ``r = (R+ − R−) / (R+ + R− + R0)`` over the same Pratt ranks, ``R0`` the rank sum of zero
    differences (so zeros count as neither win nor loss and shrink r towards 0; it equals the
    ``zsplit`` convention). Sign: ``r > 0`` means the **first** argument is lower (better).
Holm and Benjamini–Hochberg (:func:`holm`, :func:`benjamini_hochberg`)
    Step-down family-wise and step-up false-discovery adjustments of a family of p-values; a
    NaN p-value (a test that could not be run) is not counted in the family size ``m`` and
    stays NaN.
Non-finite values
    Every test raises :class:`~schedlab.errors.NonFiniteValueError` on NaN or ±inf, naming the
    index; :mod:`schedlab.evaluation.analysis` names the policy, jobset and metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from schedlab.evaluation.friedman import (
    TIED,
    FriedmanResult,
    friedman,
    friedman_from_ranks,
    iman_davenport,
    nemenyi_cd,
    nemenyi_q,
    within_block_ranks,
)
from schedlab.evaluation.settings import DEFAULT_STATS, StatsSettings
from schedlab.evaluation.stats import bootstrap_mean_ci, require_finite
from schedlab.evaluation.ties import DECIMALS, TIE_RTOL, snap

__all__ = [
    "EXACT_MAX",
    "TIED",
    "TIE_RTOL",
    "ZERO_METHOD",
    "FriedmanResult",
    "WilcoxonResult",
    "benjamini_hochberg",
    "friedman",
    "friedman_from_ranks",
    "gm_ratio",
    "holm",
    "iman_davenport",
    "min_blocks_for_significance",
    "nemenyi_cd",
    "nemenyi_q",
    "prob_improvement",
    "snap",
    "wilcoxon_pair",
    "wins_ties_losses",
    "within_block_ranks",
]


ZERO_METHOD = "pratt"
"""How :func:`wilcoxon_pair` treats zero differences (scipy's ``zero_method``)."""

EXACT_MAX = 50
"""Up to this many non-zero differences :func:`wilcoxon_pair` uses the exact distribution."""


def _paired(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Validated pair -> ``ref − x`` over the pair's largest magnitude, rounded (:func:`snap`).

    Positive where ``x`` is lower (better); zero where they tie; dimensionless.
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        msg = (
            f"paired values must be non-empty 1-d arrays of equal length, got {a.shape}, {b.shape}"
        )
        raise ValueError(msg)
    require_finite(a, "paired values (first)")
    require_finite(b, "paired values (second)")
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    return np.zeros(a.size) if scale == 0.0 else np.round((b - a) / scale, DECIMALS)


def wins_ties_losses(x: np.ndarray, ref: np.ndarray) -> tuple[int, int, int]:
    """Jobsets where ``x`` is lower than, equal to, or higher than ``ref`` (lower is better)."""
    d = _paired(x, ref)
    return int(np.sum(d > 0)), int(np.sum(d == 0)), int(np.sum(d < 0))


def gm_ratio(
    x: np.ndarray,
    ref: np.ndarray,
    *,
    rng: np.random.Generator,
    settings: StatsSettings = DEFAULT_STATS,
) -> tuple[float, float, float]:
    """Geometric-mean ratio ``x / ref`` over jobsets and its paired percentile-bootstrap CI.

    Returns
    -------
    tuple of float
        ``(ratio, low, high)``; dimensionless, < 1 when ``x`` is lower than the reference.

    Raises
    ------
    ValueError
        If a value is not strictly positive (the log ratio is undefined).
    """
    a, b = (np.asarray(v, dtype=np.float64) for v in (x, ref))
    if np.any(a <= 0) or np.any(b <= 0):
        msg = "the geometric-mean ratio needs strictly positive values"
        raise ValueError(msg)
    log_ratio = np.log(a) - np.log(b)
    mean, low, high = bootstrap_mean_ci(np.sort(log_ratio), rng=rng, settings=settings)
    return math.exp(mean), math.exp(low), math.exp(high)


def prob_improvement(
    x: np.ndarray,
    ref: np.ndarray,
    *,
    rng: np.random.Generator,
    settings: StatsSettings = DEFAULT_STATS,
) -> tuple[float, float, float]:
    """``P(x < ref)`` on a random jobset, ties counted half, with a percentile-bootstrap CI."""
    d = _paired(x, ref)
    score = np.where(d > 0, 1.0, np.where(d == 0, 0.5, 0.0))
    return bootstrap_mean_ci(np.sort(score), rng=rng, settings=settings)


@dataclass(frozen=True, kw_only=True, slots=True)
class WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test of a pair of policies (see the module docstring)."""

    n: int
    """Jobsets compared (zero differences included)."""
    n_zero: int
    """Jobsets with equal values (zero difference)."""
    r_plus: float
    """Rank sum of jobsets where the first policy is lower (better)."""
    r_minus: float
    """Rank sum of jobsets where the first policy is higher (worse)."""
    p: float
    """Two-sided p-value; 1.0 when every difference is zero."""
    rank_biserial: float
    """``(r_plus − r_minus) / (n (n + 1) / 2)`` in [−1, 1]; > 0: the first policy is better."""


def wilcoxon_pair(x: np.ndarray, y: np.ndarray) -> WilcoxonResult:
    """Wilcoxon signed-rank test of paired ``x`` and ``y`` (``zero_method="pratt"``).

    Parameters
    ----------
    x, y
        Per-jobset values of two policies, shape ``(n,)``, paired by index.
    """
    d = _paired(x, y)  # > 0 where x is lower (better)
    n, n_zero = d.size, int(np.sum(d == 0))
    ranks = sps.rankdata(np.abs(d))
    r_plus, r_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    total = n * (n + 1) / 2
    if n_zero == n:
        return WilcoxonResult(n=n, n_zero=n_zero, r_plus=0.0, r_minus=0.0, p=1.0, rank_biserial=0.0)
    nonzero = ranks[d != 0]
    if nonzero.size <= EXACT_MAX:
        p = _exact_signed_rank_p(nonzero, r_plus)
    else:
        p = float(sps.wilcoxon(d, zero_method=ZERO_METHOD, method="asymptotic").pvalue)
    return WilcoxonResult(
        n=n,
        n_zero=n_zero,
        r_plus=r_plus,
        r_minus=r_minus,
        p=min(1.0, p),
        rank_biserial=(r_plus - r_minus) / total,
    )


def _exact_signed_rank_p(ranks: np.ndarray, r_plus: float) -> float:
    """Two-sided p of ``R+`` under its exact conditional null distribution.

    Under H0 each non-zero difference is positive or negative with probability 1/2, its (Pratt)
    rank fixed: the ``2**n`` sign assignments are counted by dynamic programming over the
    doubled ranks (average ranks are multiples of 1/2, so doubled they are integers).
    ``p = min(1, 2 · min(P(R+ >= r), P(R+ <= r)))``, as scipy's permutation version.
    """
    w = np.rint(2 * ranks).astype(np.int64)
    counts = np.zeros(int(w.sum()) + 1)
    counts[0] = 1.0
    for wi in w:
        shifted = np.zeros_like(counts)
        shifted[wi:] = counts[: counts.size - wi]
        counts += shifted
    probs = counts / counts.sum()
    t = int(np.rint(2 * r_plus))
    return float(min(1.0, 2 * min(probs[t:].sum(), probs[: t + 1].sum())))


def _tested(p_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p_values`` as float64 and the mask of the tests that were run (not NaN).

    Raises
    ------
    ValueError
        If a p-value is outside [0, 1] or infinite.
    """
    p = np.asarray(p_values, dtype=np.float64)
    ok = ~np.isnan(p)
    outside = p[ok][(p[ok] < 0) | (p[ok] > 1)]
    if outside.size:
        msg = f"p-values must be in [0, 1] or NaN (test not run), got {outside[:3].tolist()}"
        raise ValueError(msg)
    return p, ok


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order.

    ``p_adj(i) = max_{j <= i} min(1, (m − j + 1) p_(j))`` over the sorted p-values
    ``p_(1) <= ... <= p_(m)``; reject where ``p_adj <= alpha`` (Holm 1979). NaN p-values (tests
    not run) are not counted in ``m`` and stay NaN.
    """
    p, ok = _tested(p_values)
    out = np.full(p.size, np.nan)
    m = int(ok.sum())
    if m == 0:
        return out
    order = np.argsort(p[ok], kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[ok][order])
    adj = np.empty(m)
    adj[order] = np.maximum.accumulate(scaled)
    out[ok] = adj
    return out


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values), in the input order.

    :func:`scipy.stats.false_discovery_control` with ``method="bh"``:
    ``q_(i) = min_{j >= i} min(1, m p_(j) / j)``; NaN p-values (tests not run) are not counted
    in ``m`` and stay NaN.
    """
    p, ok = _tested(p_values)
    out = np.full(p.size, np.nan)
    if ok.any():
        out[ok] = sps.false_discovery_control(p[ok], method="bh")
    return out


def min_blocks_for_significance(n_pairs: int, alpha: float = DEFAULT_STATS.alpha) -> int:
    """Fewest jobsets for which any pair can be significant after Holm over ``n_pairs`` tests.

    The smallest two-sided exact Wilcoxon p-value with ``n`` non-zero differences is
    ``2 / 2**n`` (all differences of one sign); Holm multiplies the smallest p by ``n_pairs``.
    So at least ``n`` jobsets with ``n_pairs · 2**(1 − n) <= alpha`` are needed.
    """
    n = 1
    while n_pairs * 2.0 ** (1 - n) > alpha:
        n += 1
    return n
