"""The comparison section shows how the omnibus p was computed, paired means, and named NaNs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.errors import NonFiniteValueError
from schedlab.evaluation.analysis import AnalysisConfig
from schedlab.reports.comparison import blocks, figures
from schedlab.reports.comparison_data import compare_policies
from schedlab.reports.palette import policy_palette
from schedlab.reports.tables import omnibus_table, summary_table

POLICIES = ["a", "b", "c"]
CFG = AnalysisConfig(reference="a", secondary=(), n_resamples=200)


def per_jobset(n: int, skip: dict[str, int] | None = None) -> pl.DataFrame:
    """``n`` jobsets where a < c < b on every jobset; ``skip[p]``: drop p's last jobsets."""
    base = np.linspace(2.0, 4.0, n)
    values = {"a": base, "b": 2.0 * base, "c": 1.5 * base}
    skip = skip or {}
    rows = [
        {"policy": p, "load": 0.9, "seed": 0, "jobset": j, "slowdown": float(v[j])}
        for p, v in values.items()
        for j in range(n - skip.get(p, 0))
    ]
    return pl.DataFrame(rows)


def test_three_jobsets_report_the_exact_p_in_the_table_and_the_cd_caption() -> None:
    pj = per_jobset(3)
    comp = compare_policies(pj, pl.DataFrame(), CFG, POLICIES, focus=0.9)
    table = omnibus_table(comp)
    row = dict(zip(table.header, table.rows[0], strict=True))
    assert row["p"] == "0.028"  # 1/36, not "<0.001"
    assert row["p method"] == "exact"
    assert "inf" not in row["Iman–Davenport F (df)"]
    caption = figures(comp, pj, policy_palette(POLICIES))["cd_diagram.png"][1]
    assert "p = 0.028 (3 jobsets, fewer than 10" in caption
    assert "exact permutation distribution" in caption


def test_a_policy_on_fewer_jobsets_is_compared_by_its_paired_mean_only() -> None:
    # b is missing the 4 jobsets with the largest values: its raw mean looks better than c's
    pj = per_jobset(12, skip={"b": 4})
    comp = compare_policies(pj, pl.DataFrame(), CFG, POLICIES, focus=0.9)
    table = summary_table(comp)
    assert "paired mean (8 common jobsets)" in table.header
    col = table.header.index("paired mean (8 common jobsets)")
    best = [i for i, r in enumerate(table.rows) if r[1].startswith("a")]
    assert table.bold == {(best[0], col)}  # the paired mean is bold, the raw means are not
    raw = table.header.index("mean [95% CI] (jobsets)")
    assert all(r[raw].endswith(f"({n})") for r, n in zip(table.rows, (12, 12, 8), strict=True))
    text = " ".join(str(b[1]) for b in blocks(comp, {}, {}) if b[0] == "p")
    assert "Policies ran on different jobsets" in text
    same = summary_table(compare_policies(per_jobset(12), pl.DataFrame(), CFG, POLICIES, 0.9))
    assert not any(h.startswith("paired mean") for h in same.header)
    # no jobset in common: nothing is compared at all
    a = pl.col("policy") == "a"
    apart = per_jobset(12).filter((a & (pl.col("jobset") >= 6)) | (~a & (pl.col("jobset") < 6)))
    disjoint = summary_table(compare_policies(apart, pl.DataFrame(), CFG, POLICIES, 0.9))
    assert "paired mean (0 common jobsets)" in disjoint.header
    assert disjoint.bold == set()


def test_a_nan_stops_the_comparison_naming_the_cell() -> None:
    pj = per_jobset(12).with_columns(
        slowdown=pl.when((pl.col("policy") == "b") & (pl.col("jobset") == 7))
        .then(np.nan)
        .otherwise(pl.col("slowdown"))
    )
    with pytest.raises(NonFiniteValueError, match=r"slowdown .*nan for policy 'b'.*jobset 7"):
        compare_policies(pj, pl.DataFrame(), CFG, POLICIES, focus=0.9)
