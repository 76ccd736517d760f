"""Overviews of a comparison: ratios with their tests at every load, and conditions as blocks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.evaluation import compare as cmp
from schedlab.evaluation.analysis import AnalysisConfig
from schedlab.evaluation.overview import across_conditions, ratio_overview

CFG = AnalysisConfig(reference="ref", secondary=(), alpha=0.05, n_resamples=200)


def summary_rows(rows: list[tuple]) -> pl.DataFrame:
    """policy_summary-like rows: (load, policy, mean_rank, ratio, low, high)."""
    return pl.DataFrame(
        [
            {
                "load": load,
                "policy": p,
                "metric": "slowdown",
                "mean": 1.0,
                "mean_rank": rank,
                "ratio": r,
                "ratio_low": lo,
                "ratio_high": hi,
                "wins": 1,
                "ties": 0,
                "losses": 1,
            }
            for load, p, rank, r, lo, hi in rows
        ],
        schema_overrides={"ratio": pl.Float64, "ratio_low": pl.Float64, "ratio_high": pl.Float64},
    )


def test_ratio_overview_flags_where_ci_and_test_disagree() -> None:
    summary = summary_rows(
        [
            (0.5, "ref", 2.0, None, None, None),
            (0.5, "a", 1.0, 0.8, 0.7, 0.9),  # CI below 1, test significant: agree
            (0.5, "b", 3.0, 1.1, 1.02, 1.2),  # CI above 1, test not significant: disagree
            (0.9, "ref", 1.5, None, None, None),
            (0.9, "a", 1.5, 0.99, 0.9, 1.1),  # CI covers 1, test significant: disagree
        ]
    )
    pairwise = pl.DataFrame(
        {
            "load": [0.5, 0.5, 0.5, 0.9],
            "a": ["ref", "ref", "a", "ref"],
            "b": ["a", "b", "b", "a"],
            "p_holm": [0.01, 0.2, 0.001, 0.03],
        }
    )
    out = ratio_overview(summary, pairwise, CFG)
    assert out.columns[:2] == ["load", "policy"]
    rows = {(r["load"], r["policy"]): r for r in out.iter_rows(named=True)}
    assert set(rows) == {(0.5, "a"), (0.5, "b"), (0.9, "a")}  # the reference is not a row
    assert rows[(0.5, "a")]["p_holm"] == 0.01  # the test against the reference, not a vs b
    assert (rows[(0.5, "a")]["significant"], rows[(0.5, "a")]["disagree"]) == (True, False)
    assert (rows[(0.5, "b")]["ci_excludes_one"], rows[(0.5, "b")]["disagree"]) == (True, True)
    assert (rows[(0.9, "a")]["ci_excludes_one"], rows[(0.9, "a")]["disagree"]) == (False, True)


def test_ratio_overview_without_tests_has_null_p_values() -> None:
    summary = summary_rows([(1.0, "ref", 1.0, None, None, None), (1.0, "a", 2.0, 1.5, 1.2, 1.8)])
    out = ratio_overview(summary, pl.DataFrame(), CFG)
    assert out.get_column("p_holm").to_list() == [None]
    assert out.get_column("significant").to_list() == [None]


def condition_summary(values: dict[tuple[str, float], list[float]]) -> pl.DataFrame:
    """Condition means of policies a, b, c (and d only in the first condition)."""
    rows = []
    for (workload, load), means in values.items():
        for p, m in zip(("a", "b", "c", "d"), means, strict=False):
            rows.append(
                {"workload": workload, "load": load, "policy": p, "metric": "slowdown", "mean": m,
                 "ci_low": 0.9 * m, "ci_high": 1.1 * m, "n_jobsets": 10}
            )  # fmt: skip
    return pl.DataFrame(rows)


def test_across_conditions_ranks_within_conditions_and_tests_over_them() -> None:
    values = {
        ("w1", 0.5): [1.0, 2.0, 3.0, 9.0],
        ("w1", 0.9): [1.5, 1.4, 4.0],
        ("w2", 0.5): [2.0, 3.0, 5.0],
        ("w2", 0.9): [2.0, 3.0, 3.5],
        ("w2", 1.3): [2.5, 3.0, 6.0],
    }
    cfg = AnalysisConfig(reference="a", secondary=())
    out = across_conditions(condition_summary(values), cfg, ["a", "b", "c", "d"])
    assert out.policies == ["a", "b", "c"]
    assert out.left_out == ["d"]
    means = out.means  # every policy where it ran, the left-out one included, in display order
    assert means.get_column("policy").unique(maintain_order=True).to_list() == ["a", "b", "c", "d"]
    assert means.filter(pl.col("policy") == "d").rows() == [("d", "w1", 0.5, 9.0, 8.1, 9.9, 10)]
    assert means.height == 3 * 5 + 1
    ranks = {(r["policy"], r["workload"]): r["mean_rank"] for r in out.ranks.iter_rows(named=True)}
    assert ranks[("a", "w1")] == pytest.approx(1.5)  # ranks 1 and 2
    assert ranks[("b", "w1")] == pytest.approx(1.5)
    assert ranks[("a", "w2")] == pytest.approx(1.0)
    assert ranks[("a", "all")] == pytest.approx(6 / 5)
    assert ranks[("c", "all")] == pytest.approx(3.0)
    assert out.ranks.get_column("policy").unique(maintain_order=True).to_list() == ["a", "b", "c"]
    assert out.ranks.filter(pl.col("workload") == "all").get_column("n_conditions").to_list() == [
        5,
        5,
        5,
    ]
    # 3 policies need 7 conditions for any Holm-adjusted pair to reach 0.05: no test with 5
    assert (out.n_conditions, out.min_conditions) == (5, 7)
    assert out.omnibus.height == 0
    assert out.pairwise.height == 0


def test_across_conditions_tests_where_they_have_power() -> None:
    values = {
        ("w1", 0.5): [1.0, 2.0, 3.0],
        ("w1", 0.9): [1.5, 1.4, 4.0],
        ("w2", 0.5): [2.0, 3.0, 5.0],
        ("w2", 0.9): [2.0, 3.0, 3.5],
        ("w2", 1.3): [2.5, 3.0, 6.0],
        ("w3", 0.5): [1.0, 1.5, 1.2],
        ("w3", 0.9): [3.0, 3.5, 8.0],
    }
    cfg = AnalysisConfig(reference="a", secondary=())
    out = across_conditions(condition_summary(values), cfg, ["a", "b", "c"])
    matrix = np.array(list(values.values()))
    fr = cmp.friedman(matrix)
    o = out.omnibus.row(0, named=True)
    assert o["n_conditions"] == 7
    assert o["k"] == 3
    assert o["chi2"] == pytest.approx(fr.chi2)
    assert o["p"] == pytest.approx(fr.p)
    assert o["min_conditions"] == cmp.min_blocks_for_significance(3, cfg.alpha) == 7
    assert out.pairwise.height == 3
    ac = out.pairwise.filter((pl.col("a") == "a") & (pl.col("b") == "c")).row(0, named=True)
    w = cmp.wilcoxon_pair(np.log(matrix[:, 0]), np.log(matrix[:, 2]))
    assert ac["p"] == pytest.approx(w.p)
    assert ac["rank_biserial"] == pytest.approx(1.0)  # a is lower in every condition


def test_one_condition_is_too_few_for_a_test() -> None:
    cfg = AnalysisConfig(reference="a", secondary=())
    out = across_conditions(condition_summary({("w", 1.0): [1.0, 2.0]}), cfg, ["a", "b"])
    assert out.omnibus.height == 0
    assert out.pairwise.height == 0  # one block: no test could say anything
    assert out.ranks.filter(pl.col("workload") == "all").get_column("mean_rank").to_list() == [
        1.0,
        2.0,
    ]
