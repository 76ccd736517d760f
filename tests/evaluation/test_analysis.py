"""The tidy comparison tables on constructed per-jobset values with known answers."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation import analysis as an
from schedlab.evaluation import compare as cmp
from schedlab.reports.stats_figures import unjoined_sentence

N = 12


def frame(values: dict[str, np.ndarray], load: float = 1.0) -> pl.DataFrame:
    """Per-jobset rows: one per (policy, jobset); the metric columns all hold ``values``."""
    rows = [
        {
            "policy": p,
            "load": load,
            "seed": 0,
            "jobset": j,
            "slowdown": float(v[j]),
            "completion": 3.0 * float(v[j]),
        }
        for p, v in values.items()
        for j in range(v.size)
    ]
    return pl.DataFrame(rows)


BASE = np.linspace(2.0, 5.0, N)
VALUES = {"a": BASE, "b": 2.0 * BASE, "c": BASE * np.where(np.arange(N) % 2 == 0, 1.1, 0.95)}
CFG = an.AnalysisConfig(reference="a", secondary=("completion",), n_resamples=500)
ORDER = ["a", "b", "c"]


def test_policy_summary_ratio_wtl_and_ranks() -> None:
    s = an.policy_summary(frame(VALUES), CFG, ORDER).filter(pl.col("metric") == "slowdown")
    b = s.filter(pl.col("policy") == "b").row(0, named=True)
    assert b["ratio"] == pytest.approx(2.0)
    assert (b["ratio_low"], b["ratio_high"]) == pytest.approx((2.0, 2.0))
    assert (b["wins"], b["ties"], b["losses"]) == (0, 0, N)
    assert b["p_improve"] == 0.0
    assert b["mean_rank"] == 3.0
    c = s.filter(pl.col("policy") == "c").row(0, named=True)
    assert (c["wins"], c["ties"], c["losses"]) == (N // 2, 0, N // 2)
    assert c["ratio"] == pytest.approx(np.sqrt(1.1 * 0.95))
    a = s.filter(pl.col("policy") == "a").row(0, named=True)
    assert a["ratio"] is None
    assert a["mean"] == pytest.approx(BASE.mean())
    assert a["n_jobsets"] == N


def test_omnibus_and_pairwise_holm() -> None:
    df = frame(VALUES)
    o = an.omnibus(df, CFG, ORDER).row(0, named=True)
    m = np.column_stack([VALUES[p] for p in ORDER])
    assert o["chi2"] == pytest.approx(cmp.friedman(m).chi2)
    assert (o["n_jobsets"], o["k"], o["min_jobsets"]) == (N, 3, 7)
    assert (o["p_method"], o["p"]) == ("iman-davenport", o["p_f"])
    pw = an.pairwise(df, CFG, ORDER)
    assert pw.select("a", "b").rows() == [("a", "b"), ("a", "c"), ("b", "c")]
    raw = pw.get_column("p").to_numpy()
    assert pw.get_column("p_holm").to_numpy() == pytest.approx(cmp.holm(raw))
    ab = pw.row(0, named=True)
    assert ab["p"] == pytest.approx(2 / 2**N)  # every jobset favours a: the exact extreme
    assert ab["rank_biserial"] == 1.0
    assert ab["significant"]


def test_failed_runs_and_missing_jobsets_are_left_out_of_the_pairs() -> None:
    df = frame(VALUES).filter(~((pl.col("policy") == "c") & (pl.col("jobset") == 0)))
    pw = an.pairwise(df, CFG, ORDER)
    assert set(pw.get_column("n").to_list()) == {N - 1}
    null = frame(VALUES).with_columns(  # a null (not NaN) is a missing run too
        slowdown=pl.when((pl.col("policy") == "c") & (pl.col("jobset") == 0))
        .then(None)
        .otherwise(pl.col("slowdown"))
    )
    assert an.pairwise(null, CFG, ORDER).equals(pw)
    without_c = frame({"a": BASE, "b": 2 * BASE})
    assert an.pairwise(without_c, CFG, ORDER).height == 1


def test_conditions_are_analysed_separately() -> None:
    df = pl.concat([frame(VALUES, 0.5), frame(VALUES, 1.5)])
    o = an.omnibus(df, CFG, ORDER)
    assert o.get_column("load").to_list() == [0.5, 1.5]
    pw = an.pairwise(df, CFG, ORDER)
    assert pw.height == 6  # Holm within each load: 3 pairs each


def test_exploratory_uses_bh_within_the_condition() -> None:
    df = frame(VALUES)
    pln = pl.concat(
        [
            frame(VALUES).with_columns(bucket=pl.lit(b).cast(pl.Enum(["short", "long"])))
            for b in ("short", "long")
        ]
    )
    ex = an.exploratory(df, pln, CFG, ORDER)
    assert ex.select("family", "bucket").unique(maintain_order=True).rows() == [
        ("metric", None),
        ("length", "short"),
        ("length", "long"),
    ]
    assert ex.get_column("q").to_numpy() == pytest.approx(
        cmp.benjamini_hochberg(ex.get_column("p").to_numpy())
    )
    comp = ex.filter((pl.col("metric") == "completion") & (pl.col("policy") == "b"))
    assert comp.get_column("ratio").item() == pytest.approx(2.0)


def test_cliques_from_pairwise_significance() -> None:
    ranks = {"a": 1.2, "b": 1.5, "c": 2.4, "d": 3.9}
    pairs = pl.DataFrame(
        {
            "a": ["a", "a", "a", "b", "b", "c"],
            "b": ["b", "c", "d", "c", "d", "d"],
            "significant": [False, True, True, False, True, False],
        }
    )
    assert an.cliques(ranks, pairs) == [["a", "b"], ["b", "c"], ["c", "d"]]
    none_sig = pairs.with_columns(significant=pl.lit(False))
    assert an.cliques(ranks, none_sig) == [["a", "b", "c", "d"]]


def test_a_pair_no_bar_can_join_is_named_for_the_caption() -> None:
    """a and c do not differ, but b (between them in rank) differs from a: no rank-adjacent
    bar joins a and c, so the CD diagram's caption must name the pair."""
    ranks = {"a": 1.2, "b": 1.5, "c": 2.4}
    pairs = pl.DataFrame(
        {
            "a": ["a", "a", "b"],
            "b": ["b", "c", "c"],
            "p_holm": [0.01, 0.076, 0.2],
            "significant": [True, False, False],
        }
    )
    groups = an.cliques(ranks, pairs)
    assert groups == [["b", "c"]]
    assert an.unjoined(groups, pairs) == [("a", "c", 0.076)]
    sentence = unjoined_sentence(an.unjoined(groups, pairs))
    assert "a and c (Holm p = 0.076)" in sentence
    assert (
        unjoined_sentence(an.unjoined(groups, pairs.with_columns(significant=pl.lit(True)))) == ""
    )


def test_omnibus_with_few_jobsets_reports_the_exact_p_and_why() -> None:
    # 3 jobsets ranking 3 policies identically: the case, exact p = 1/36
    few = {p: v[:3] for p, v in VALUES.items() if p != "c"} | {"c": 1.5 * BASE[:3]}
    o = an.omnibus(frame(few), CFG, ORDER).row(0, named=True)
    assert o["kendall_w"] == pytest.approx(1.0)
    assert o["p"] == pytest.approx(1 / 36, rel=1e-12)
    assert (o["p_method"], o["f"], o["p_f"]) == ("exact", None, None)
    assert "3 jobsets, fewer than 10" in o["p_reason"]


def test_a_policy_on_fewer_jobsets_gets_a_paired_mean_over_the_common_ones() -> None:
    df = frame(VALUES).filter(~((pl.col("policy") == "b") & (pl.col("jobset") >= N - 2)))
    s = an.policy_summary(df, CFG, ORDER).filter(pl.col("metric") == "slowdown")
    rows = {r["policy"]: r for r in s.iter_rows(named=True)}
    assert rows["b"]["n_jobsets"] == N - 2
    assert rows["a"]["n_jobsets"] == N
    assert {r["n_paired"] for r in rows.values()} == {N - 2}
    assert rows["a"]["mean"] == pytest.approx(BASE.mean())
    assert rows["a"]["paired_mean"] == pytest.approx(BASE[: N - 2].mean())
    assert rows["b"]["paired_mean"] == pytest.approx(rows["b"]["mean"])
    full = an.policy_summary(frame(VALUES), CFG, ORDER)
    assert (full.get_column("n_paired") == full.get_column("n_jobsets")).all()
    assert full.get_column("paired_mean").to_numpy() == pytest.approx(
        full.get_column("mean").to_numpy()
    )


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_names_its_policy_jobset_and_metric(bad: float) -> None:
    df = frame(VALUES).with_columns(
        slowdown=pl.when((pl.col("policy") == "c") & (pl.col("jobset") == 5))
        .then(bad)
        .otherwise(pl.col("slowdown"))
    )
    where = rf"slowdown must be finite, got {bad}.*policy 'c', load 1.0, seed 0, jobset 5"
    for call in (
        lambda: an.policy_summary(df, CFG, ORDER),
        lambda: an.omnibus(df, CFG, ORDER),
        lambda: an.pairwise(df, CFG, ORDER),
    ):
        with pytest.raises(NonFiniteValueError, match=where):
            call()
    cfg = an.AnalysisConfig(reference="a", primary="completion", secondary=("slowdown",))
    with pytest.raises(NonFiniteValueError, match=where):
        an.exploratory(df, df.clear(), cfg, ORDER)


def test_a_non_finite_value_in_a_length_bucket_names_the_bucket() -> None:
    pln = frame(VALUES).with_columns(
        bucket=pl.lit("long").cast(pl.Enum(["short", "long"])),
        slowdown=pl.when(pl.col("jobset") == 2).then(np.nan).otherwise(pl.col("slowdown")),
    )
    with pytest.raises(NonFiniteValueError, match=r"jobset 2, bucket 'long'"):
        an.exploratory(frame(VALUES), pln, CFG, ORDER)
