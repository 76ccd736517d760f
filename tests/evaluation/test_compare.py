"""Paired statistics against textbook and hand-worked examples (ties and zeros included)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation import compare as cmp

# Demšar (2006), JMLR 7, §3.2.4: q_0.05 = 2.569 and CD = 1.25 for k = 4, N = 14.
# Demšar (2006) Table 5(a): Nemenyi q_0.05 for k = 2 .. 10.
NEMENYI_Q05 = {
    2: 1.960,
    3: 2.343,
    4: 2.569,
    5: 2.728,
    6: 2.850,
    7: 2.949,
    8: 3.031,
    9: 3.102,
    10: 3.164,
}


@pytest.mark.parametrize(("k", "q"), sorted(NEMENYI_Q05.items()))
def test_nemenyi_q_matches_demsar_table(k: int, q: float) -> None:
    assert cmp.nemenyi_q(k, 0.05) == pytest.approx(q, abs=0.0015)


def test_nemenyi_cd_reproduces_demsar() -> None:
    assert cmp.nemenyi_cd(4, 14, 0.05) == pytest.approx(1.25, abs=0.005)


# Hand-worked Wilcoxon with ties and zeros: d = y − x = [0, 0, 1, −1, 2, 2, 3, −4, 5].
# Pratt ranks of |d| (zeros ranked, then dropped): zeros 1.5, 1.5; ±1: 3.5, 3.5; 2s: 5.5, 5.5;
# 3: 7; 4: 8; 5: 9. R+ = 3.5 + 5.5 + 5.5 + 7 + 9 = 30.5, R− = 3.5 + 8 = 11.5, R0 = 3, total 45;
# rank-biserial r = (30.5 − 11.5) / 45 = 19/45.
HAND_D = np.array([0.0, 0.0, 1.0, -1.0, 2.0, 2.0, 3.0, -4.0, 5.0])


def test_wilcoxon_hand_worked_ties_and_zeros() -> None:
    x = np.full(HAND_D.size, 10.0)
    w = cmp.wilcoxon_pair(x, x + HAND_D)  # x is better where d > 0
    assert (w.n, w.n_zero) == (9, 2)
    assert (w.r_plus, w.r_minus) == (30.5, 11.5)
    assert w.rank_biserial == pytest.approx(19 / 45)
    assert cmp.wilcoxon_pair(x + HAND_D, x).rank_biserial == pytest.approx(-19 / 45)
    # n <= 13 with ties: exact null distribution by enumerating the 2^7 sign flips of the
    # non-zero differences (Pratt ranks fixed); two-sided p = 2 · min(P(T >= t), P(T <= t))
    ranks = sps.rankdata(np.abs(HAND_D))[HAND_D != 0]
    t = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s > 0)
        for signs in itertools.product((1, -1), repeat=ranks.size)
    ]
    exact = 2 * min(np.mean(np.array(t) >= 30.5), np.mean(np.array(t) <= 30.5))
    assert exact == pytest.approx(9 / 32)
    assert w.p == pytest.approx(exact)


def test_wilcoxon_normal_approximation_with_pratt_zero_and_tie_corrections() -> None:
    # 62 > 50 non-zero differences: normal approximation. Cureton (1967): mean = n(n+1)/4 −
    # z(z+1)/4, var = n(n+1)(2n+1)/24 − z(z+1)(2z+1)/24 − Σ(t³ − t)/48 over non-zero tie groups
    d = np.tile(HAND_D, 9)[:80]
    assert np.sum(d != 0) > cmp.EXACT_MAX
    n, z = d.size, int(np.sum(d == 0))
    ranks = sps.rankdata(np.abs(d))
    r_plus = ranks[d > 0].sum()
    _, counts = np.unique(np.abs(d[d != 0]), return_counts=True)
    var = (n * (n + 1) * (2 * n + 1) - z * (z + 1) * (2 * z + 1)) / 24 - np.sum(
        counts**3 - counts
    ) / 48
    zstat = (r_plus - (n * (n + 1) - z * (z + 1)) / 4) / math.sqrt(var)
    w = cmp.wilcoxon_pair(np.zeros(n), d)
    assert w.p == pytest.approx(2 * sps.norm.sf(abs(zstat)))


def test_exact_p_matches_brute_force_with_ties_and_scipy_without() -> None:
    rng = np.random.default_rng(7)
    d = rng.integers(-3, 4, size=12).astype(float)  # ties and zeros
    ranks = sps.rankdata(np.abs(d))
    nz = ranks[d != 0]
    r_plus = ranks[d > 0].sum()
    flips = np.array(list(itertools.product((0.0, 1.0), repeat=nz.size)))
    t = flips @ nz
    brute = min(1.0, 2 * min(np.mean(t >= r_plus - 1e-9), np.mean(t <= r_plus + 1e-9)))
    assert cmp.wilcoxon_pair(np.zeros(12), d).p == pytest.approx(brute)
    d2 = rng.permutation(np.arange(1.0, 31.0)) * rng.choice([-1.0, 1.0], 30)  # no ties
    exact = sps.wilcoxon(d2, method="exact").pvalue
    assert cmp.wilcoxon_pair(np.zeros(30), d2).p == pytest.approx(exact)


def test_wilcoxon_all_zero_and_one_sided_extremes() -> None:
    same = cmp.wilcoxon_pair(np.ones(5), np.ones(5))
    assert (same.p, same.rank_biserial, same.n_zero) == (1.0, 0.0, 5)
    better = cmp.wilcoxon_pair(np.arange(1.0, 7.0), np.arange(1.0, 7.0) + 1.0)
    assert better.rank_biserial == 1.0
    assert better.p == pytest.approx(2 / 2**6)  # the smallest exact p with 6 pairs


def test_min_blocks_for_significance_matches_the_exact_bound() -> None:
    assert cmp.min_blocks_for_significance(1, 0.05) == 6  # 2/2^6 = 0.031; 2/2^5 = 0.0625
    assert cmp.min_blocks_for_significance(10, 0.05) == 9  # 10·2/2^9 = 0.039; n=8: 0.078
    assert cmp.wilcoxon_pair(np.zeros(5), np.ones(5)).p > 0.05
    assert cmp.wilcoxon_pair(np.zeros(6), np.ones(6)).p <= 0.05


def test_holm_hand_computed() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4·0.005, 3·0.01, 2·0.03, max(1·0.04, 0.06)
    adj = cmp.holm(np.array([0.01, 0.04, 0.03, 0.005]))
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert cmp.holm(np.array([0.5, 0.9])) == pytest.approx([1.0, 1.0])  # capped at 1
    assert cmp.holm(np.array([])).size == 0


def test_holm_and_bh_do_not_count_tests_that_were_not_run() -> None:
    # a NaN p (test not run) is not in m: the same as adjusting the three real p-values
    p = np.array([0.01, np.nan, 0.04, 0.03])
    adj = cmp.holm(p)
    assert np.isnan(adj[1])
    assert adj[[0, 2, 3]] == pytest.approx(cmp.holm(np.array([0.01, 0.04, 0.03])))
    assert adj[[0, 2, 3]] == pytest.approx([0.03, 0.06, 0.06])  # m = 3, not 4 (0.04, 0.08, ...)
    q = cmp.benjamini_hochberg(p)
    assert np.isnan(q[1])
    assert q[[0, 2, 3]] == pytest.approx([0.03, 0.04, 0.04])
    assert np.isnan(cmp.holm(np.array([np.nan, np.nan]))).all()
    with pytest.raises(ValueError, match=r"in \[0, 1\] or NaN"):
        cmp.holm(np.array([0.1, np.inf]))


def test_benjamini_hochberg_hand_computed() -> None:
    # sorted p·m/i: 0.02, 0.02, 0.04, 0.04; cumulative minimum from the largest
    q = cmp.benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.005]))
    assert q == pytest.approx([0.02, 0.04, 0.04, 0.02])
    q2 = cmp.benjamini_hochberg(np.array([0.01, 0.02, 0.5]))
    assert q2 == pytest.approx([0.03, 0.03, 0.5])


def test_wins_ties_losses_and_probability_of_improvement() -> None:
    x = np.array([1.0, 2.0, 3.0 + 1e-15, 5.0])
    ref = np.array([1.0, 3.0, 3.0, 4.0])
    assert cmp.wins_ties_losses(x, ref) == (1, 2, 1)
    poi, low, high = cmp.prob_improvement(x, ref, rng=np.random.default_rng(0))
    assert poi == pytest.approx((1 + 2 / 2) / 4)
    assert 0.0 <= low <= poi <= high <= 1.0


def test_gm_ratio_on_constructed_examples() -> None:
    ref = np.array([1.0, 2.0, 4.0, 8.0])
    same = cmp.gm_ratio(ref * np.array([2, 0.5, 2, 0.5]), ref, rng=np.random.default_rng(0))
    assert same[0] == pytest.approx(1.0)
    assert same[1] < 1.0 < same[2]
    assert cmp.gm_ratio(2 * ref, ref, rng=np.random.default_rng(0)) == pytest.approx((2, 2, 2))
    # log ratios ~ N(log 1.2, 0.1²), n = 400: CI ≈ exp(log 1.2 ± 1.96·0.1/20)
    rng = np.random.default_rng(1)
    e = rng.normal(math.log(1.2), 0.1, 400)
    base = rng.uniform(1, 10, 400)
    ratio, low, high = cmp.gm_ratio(base * np.exp(e), base, rng=np.random.default_rng(2))
    assert ratio == pytest.approx(math.exp(e.mean()))
    assert low < 1.2 < high
    assert math.log(high / low) / 2 == pytest.approx(1.96 * 0.1 / 20, rel=0.15)
    with pytest.raises(ValueError, match="strictly positive"):
        cmp.gm_ratio(np.array([0.0, 1.0]), np.array([1.0, 1.0]), rng=np.random.default_rng(0))


def test_paired_inputs_are_validated() -> None:
    with pytest.raises(ValueError, match="equal length"):
        cmp.wins_ties_losses(np.ones(3), np.ones(4))
    with pytest.raises(NonFiniteValueError, match=r"first\) must be finite, got nan at index 1"):
        cmp.wilcoxon_pair(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(NonFiniteValueError, match=r"second\) must be finite, got inf at index 0"):
        cmp.wins_ties_losses(np.ones(2), np.array([np.inf, 1.0]))
