"""Liu's metrics TMDL, AJER, S_log and F/S/N on hand-made episodes (ICPP'20, §5)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.multicluster import (
    PAPER_BY_WORKLOAD,
    dominance,
    paper_rows,
    paper_table,
    per_episode,
    s_log,
    summary,
)
from schedlab.evaluation.settings import StatsSettings
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.multicluster.run import LIU_COLUMNS


def _results(rows: list[tuple[str, int, int, float]]) -> Results:
    """Per-job rows ``(policy, jobset, missed, exec_ratio)``; other columns filler."""
    n = len(rows)
    table = pl.DataFrame(
        {
            "policy": [r[0] for r in rows],
            "jobset": pl.Series([r[1] for r in rows], dtype=pl.Int32),
            "load": [0.8] * n, "seed": [0] * n, "job_id": list(range(n)), "arrival": [0] * n,
            "start": [0] * n, "finish": [1] * n, "duration": [1] * n, "machine": [0] * n,
            "slowdown": [1.0] * n, "completion": [1] * n, "wait": [0] * n,
            "category": ["critical"] * n, "deadline": [5] * n, "executions": [1] * n,
            "missed": [r[2] for r in rows], "exec_ratio": [r[3] for r in rows], "dispatch": [0] * n,
        }
    ).select(*RESULT_COLUMNS, *LIU_COLUMNS)  # fmt: skip
    policies = {name: {} for name in dict.fromkeys(r[0] for r in rows)}
    return Results(table, {"policies": policies, "length_buckets": {}})


def test_s_log_by_hand() -> None:
    # paper, Table 3: TMDL 61.70, AJER 90.30 -> S = -61.7 + 50·9.7 = 423.3
    assert s_log(61.7, 90.3) == pytest.approx(math.log10(423.3))
    assert s_log(500.0, 99.0) == pytest.approx(-math.log10(450.0))
    np.testing.assert_array_equal(s_log(np.array([0.0, 1.0]), np.array([100.0, 99.99])), [0, 0])


def test_per_episode_sums_misses_and_averages_ratios() -> None:
    res = _results([
        ("A", 0, 2, 0.9), ("A", 0, 0, 1.1), ("A", 1, 5, 0.8),
        ("B", 0, 1, 1.0), ("B", 0, 0, 1.0), ("B", 1, 0, 0.7),
    ])  # fmt: skip
    pe = per_episode(res)
    assert pe.get_column("policy").to_list() == ["A", "A", "B", "B"]
    assert pe.get_column("tmdl").to_list() == [2.0, 5.0, 1.0, 0.0]
    np.testing.assert_allclose(pe.get_column("ajer"), [100.0, 80.0, 100.0, 70.0])
    np.testing.assert_allclose(pe.get_column("s_log"), s_log(pe["tmdl"], pe["ajer"]))
    pj = per_jobset(res)
    np.testing.assert_array_equal(pj.get_column("tmdl"), pe.get_column("tmdl"))
    plain = Results(res.table.drop(*LIU_COLUMNS), res.meta)
    assert "tmdl" not in per_jobset(plain).columns
    with pytest.raises(ValueError, match="multi-cluster results"):
        per_episode(plain)


def _per_ep(values: dict[str, list[tuple[float, float]]]) -> pl.DataFrame:
    rows = [
        {"policy": p, "workload": "w", "load": 0.8, "jobset": j, "tmdl": t, "ajer": a}
        for p, vs in values.items()
        for j, (t, a) in enumerate(vs)
    ]
    df = pl.DataFrame(rows)
    return df.with_columns(pl.Series("s_log", s_log(df["tmdl"], df["ajer"])))


def test_dominance_counts_strictly_better_metrics_ties_are_not_better() -> None:
    pe = _per_ep({
        "RL": [(10, 90), (10, 95), (50, 90), (50, 95), (20, 92)],
        "MAF": [(20, 92), (20, 92), (20, 92), (20, 92), (20, 92)],
    })  # fmt: skip
    assert dominance(pe, "RL", "MAF") == (1, 2, 2)
    two = pl.concat([pe, pe.with_columns(pl.lit("v").alias("workload"))])
    with pytest.raises(ValueError, match="per condition"):
        dominance(two, "RL", "MAF")


def test_summary_has_means_cis_and_fsn_against_the_reference() -> None:
    rng = np.random.default_rng(0)
    pe = _per_ep({
        "MAF": [(float(t), 92.0) for t in rng.integers(200, 400, 12)],
        "RL": [(float(t), 89.0) for t in rng.integers(20, 80, 12)],
    })  # fmt: skip
    s = summary(pe, "MAF", settings=StatsSettings(n_resamples=200))
    assert s.get_column("policy").to_list() == ["MAF", "RL"]
    rl = s.filter(pl.col("policy") == "RL").row(0, named=True)
    assert rl["n_episodes"] == 12
    assert (rl["F"], rl["S"], rl["N"]) == (12, 0, 0)
    assert rl["tmdl_low"] <= rl["tmdl"] <= rl["tmdl_high"]
    assert rl["s_log"] == pytest.approx(pe.filter(pl.col("policy") == "RL")["s_log"].mean())
    assert s.filter(pl.col("policy") == "MAF")["F"].to_list() == [None]


def test_paper_numbers_are_indexed_by_table_and_workload() -> None:
    t3 = paper_rows("table3 (uniform b=33)")
    assert t3.row(0, named=True) == {
        "policy": "RL-LSFC", "tmdl": 61.70, "ajer": 90.30, "s_log": 2.57, "fsn": "46/4/0",
    }  # fmt: skip
    tables = set(paper_table().get_column("table"))
    assert all(t in tables for keys in PAPER_BY_WORKLOAD.values() for t in keys)
    assert paper_rows("table6 (uniform b=33)", ["RL-FC"]).get_column("fsn").to_list() == ["29/21/0"]
