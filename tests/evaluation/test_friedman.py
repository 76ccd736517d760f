"""The Friedman omnibus test: textbook values, exact small-n p-values, permutation fallback."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation import compare as cmp
from schedlab.evaluation import permutation as perm

# Demšar (2006), JMLR 7, §3.2.4 and Table 6: four C4.5 variants on 14 data sets, average ranks
# 3.143, 2.000, 2.893, 1.964 (rank sums 44, 28, 40.5, 27.5): chi2_F = 9.28, F_F = 3.69.
DEMSAR_RANKS = np.array([44.0, 28.0, 40.5, 27.5]) / 14


def brute_force_p(matrix: np.ndarray) -> float:
    """P(S >= S_obs) over every combination of each row's distinct rank arrangements."""
    ranks = cmp.within_block_ranks(matrix)
    s_obs = np.sum(ranks.sum(axis=0) ** 2)
    options = [sorted(set(itertools.permutations(row))) for row in ranks]
    hits = total = 0
    for combo in itertools.product(*options):
        total += 1
        hits += np.sum(np.sum(combo, axis=0) ** 2) >= s_obs - 1e-9
    return hits / total


def test_friedman_and_iman_davenport_reproduce_demsar() -> None:
    chi2, f = cmp.friedman_from_ranks(DEMSAR_RANKS, 14)
    assert chi2 == pytest.approx(9.28, abs=0.005)
    assert f == pytest.approx(3.69, abs=0.005)
    # the F critical value Demšar quotes: F(3, 39) at 0.05 = 2.85, so the test rejects
    assert sps.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=0.01)


def test_friedman_hand_worked_three_by_three() -> None:
    # within-block ranks (lower value = rank 1): [1,2,3], [1,3,2], [2,1,3]; rank sums 4, 6, 8
    # chi2 = 12/(3·3·4)·(16+36+64) − 3·3·4 = 8/3; W = chi2/(3·2) = 4/9;
    # F = (3−1)·(8/3) / (3·2 − 8/3) = 1.6 on (2, 4) df. With 3 jobsets the p reported is the
    # exact one: of the 6³ = 216 equally likely arrangements, 78 have Σ R² >= 116 (13/36).
    m = np.array([[10.0, 20.0, 30.0], [1.0, 3.0, 2.0], [5.0, 4.0, 6.0]])
    res = cmp.friedman(m)
    assert res.mean_ranks == pytest.approx((4 / 3, 2.0, 8 / 3))
    assert res.chi2 == pytest.approx(8 / 3)
    assert res.kendall_w == pytest.approx(4 / 9)
    assert res.f == pytest.approx(1.6)
    assert (res.df1, res.df2) == (2, 4)
    assert res.p_f == pytest.approx(sps.f.sf(1.6, 2, 4))
    assert res.p_chi2 == pytest.approx(sps.chi2.sf(8 / 3, 2))
    assert res.method == "exact"
    assert "3 jobsets, fewer than 10" in res.reason
    assert res.p == pytest.approx(13 / 36, rel=1e-12)
    assert res.p == pytest.approx(brute_force_p(m), rel=1e-12)


def test_exact_p_of_the_issue_never_infinite_f() -> None:
    two = cmp.friedman(np.array([[1.0, 2.0], [1.0, 2.0]]))
    assert two.p == pytest.approx(0.5, rel=1e-12)
    assert (two.method, two.kendall_w, two.f, two.p_f) == ("exact", 1.0, None, None)
    three = cmp.friedman(np.tile([1.0, 2.0, 3.0], (3, 1)))
    assert three.p == pytest.approx(1 / 36, rel=1e-12)
    assert three.method == "exact"
    assert three.f is None


@pytest.mark.parametrize(("n", "k", "seed"), [(4, 3, 0), (3, 4, 1), (5, 3, 2), (2, 5, 3)])
def test_exact_p_matches_brute_force_with_ties(n: int, k: int, seed: int) -> None:
    m = np.random.default_rng(seed).integers(0, 3, size=(n, k)).astype(float)  # many ties
    m[0] = np.arange(k)  # at least one row without ties, so not every jobset ties
    res = cmp.friedman(m)
    assert res.method == "exact"
    assert res.p == pytest.approx(brute_force_p(m), rel=1e-12)


def test_tie_correction_matches_scipy_and_many_jobsets_use_the_f() -> None:
    rng = np.random.default_rng(4)
    m = rng.integers(0, 4, size=(30, 5)).astype(float)  # many ties within blocks
    res = cmp.friedman(m)
    ref = sps.friedmanchisquare(*m.T)
    assert res.chi2 == pytest.approx(ref.statistic)
    assert res.p_chi2 == pytest.approx(ref.pvalue)
    assert res.kendall_w == pytest.approx(ref.statistic / (30 * 4))
    assert res.method == "iman-davenport"
    assert res.p == res.p_f


def test_extremes_all_tied_and_identical_rankings() -> None:
    all_tied = cmp.friedman(np.ones((6, 3)))
    assert (all_tied.chi2, all_tied.p, all_tied.kendall_w, all_tied.method) == (
        0.0,
        1.0,
        0.0,
        "exact",
    )
    # 12 jobsets (>= 10) ranking 3 policies identically: F is infinite, so the p is exact:
    # every jobset takes the same of the 3! arrangements, p = 6 · 6^-12 = 6^-11
    perfect = cmp.friedman(np.tile([1.0, 2.0, 3.0], (12, 1)))
    assert perfect.kendall_w == pytest.approx(1.0)
    assert perfect.f is None
    assert perfect.method == "exact"
    assert "W = 1" in perfect.reason
    assert perfect.p == pytest.approx(6.0**-11, rel=1e-12)
    tied_pair = cmp.friedman(np.tile([1.0, 1.0, 2.0], (4, 1)))  # 3 arrangements per jobset
    assert tied_pair.p == pytest.approx(3.0**-3, rel=1e-12)
    assert tied_pair.p == pytest.approx(brute_force_p(np.tile([1.0, 1.0, 2.0], (4, 1))))
    # float noise does not break a tie: identical schedules averaged in another order
    noisy = cmp.friedman(np.array([[1.0, 1.0 + 1e-15, 2.0], [1.0, 1.0, 2.0], [2.0, 2.0, 1.0]]))
    assert noisy.mean_ranks[0] == noisy.mean_ranks[1]
    with pytest.raises(ValueError, match="at least 2 jobsets"):
        cmp.friedman(np.ones((1, 3)))


def test_permutation_test_when_enumeration_is_too_large() -> None:
    rng = np.random.default_rng(5)
    m = rng.normal(size=(6, 7)) + np.linspace(0, 1.5, 7)  # 7! = 5040 arrangements per jobset
    res = cmp.friedman(m, rng=np.random.default_rng(1))
    assert res.method == "permutation"
    assert "20,000 random" in res.reason
    again = cmp.friedman(m, rng=np.random.default_rng(1))
    assert again.p == res.p  # seeded
    assert res.p > 0
    # the Monte Carlo p agrees with the exact one where both can be computed
    small = rng.normal(size=(5, 4)) + np.linspace(0, 1, 4)
    doubled = np.rint(2 * cmp.within_block_ranks(small)).astype(np.int64)
    s_obs = int(np.sum(doubled.sum(axis=0) ** 2))
    exact = perm.exact_sf(doubled, s_obs)
    assert exact is not None
    assert perm.exact_sf(doubled, s_obs, max_work=10) is None
    mc = perm.permutation_sf(doubled, s_obs, np.random.default_rng(2))
    assert mc == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / perm.PERMUTATIONS))


def test_non_finite_values_are_named() -> None:
    m = np.ones((3, 3))
    m[2, 1] = np.nan
    with pytest.raises(NonFiniteValueError, match=r"got nan at index \[2, 1\]"):
        cmp.friedman(m)
    m[2, 1] = -np.inf
    with pytest.raises(NonFiniteValueError, match=r"rows: jobsets, columns: policies"):
        cmp.friedman(m)
