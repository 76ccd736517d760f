"""Per-jobset and per-length aggregates on tiny hand-made results."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from schedlab.evaluation.metrics import length_buckets, per_jobset, per_length
from schedlab.results import RESULT_COLUMNS, Results

BUCKETS = {"short": [1, 3], "long": [10, 15]}


def make_results(
    rows: list[tuple[str, int, float | None, int, int, int]],
    *,
    policies: list[str],
    buckets: dict[str, list[int]] | None = None,
) -> Results:
    """Results from ``(policy, jobset, load, arrival, start, duration)`` rows."""
    df = pl.DataFrame(
        rows,
        schema={
            "policy": pl.String, "jobset": pl.Int32, "load": pl.Float64,
            "arrival": pl.Int64, "start": pl.Int64, "duration": pl.Int64,
        },
        orient="row",
    )  # fmt: skip
    table = (
        df.with_columns(
            seed=pl.lit(7, pl.Int64),
            job_id=pl.int_range(pl.len()).over("policy", "jobset").cast(pl.Int64),
            finish=pl.col("start") + pl.col("duration"),
            machine=pl.lit(0, pl.Int64),
        )
        .with_columns(
            completion=pl.col("finish") - pl.col("arrival"),
            wait=pl.col("start") - pl.col("arrival"),
        )
        .with_columns(slowdown=pl.col("completion") / pl.col("duration"))
        .select(RESULT_COLUMNS)
    )
    meta: dict[str, Any] = {
        "policies": {p: {} for p in policies},
        "length_buckets": BUCKETS if buckets is None else buckets,
    }
    return Results(table, meta)


# policy "b" is simulated first, so it must come first in every table.
ROWS = [
    # jobset 0 under "a": slowdowns 1, 3, 1.2; completions 2, 3, 12; waits 0, 2, 2
    ("a", 0, 0.5, 0, 0, 2),
    ("a", 0, 0.5, 0, 2, 1),
    ("a", 0, 0.5, 1, 3, 10),
    # jobset 1 under "a": one job of duration 5 (in no DeepRM bucket), slowdown 2
    ("a", 1, 0.5, 0, 5, 5),
    # jobset 0 under "b": slowdowns 1, 1, 1
    ("b", 0, 0.5, 0, 0, 2),
    ("b", 0, 0.5, 0, 0, 1),
    ("b", 0, 0.5, 1, 1, 10),
]


def test_per_jobset_matches_hand_computed_means() -> None:
    out = per_jobset(make_results(ROWS, policies=["b", "a"]))
    assert out.columns == [
        "policy", "load", "seed", "jobset", "n_jobs", "slowdown", "completion", "wait",
        "max_slowdown", "bounded_slowdown", "p95_slowdown", "max_wait", "p95_wait", "p99_wait",
        "jct", "job_slowdown", "p95_job_slowdown",
    ]  # fmt: skip
    assert out.select("policy", "jobset").rows() == [("b", 0), ("a", 0), ("a", 1)]
    a0 = out.row(1, named=True)
    assert a0["n_jobs"] == 3
    assert a0["slowdown"] == pytest.approx((1 + 3 + 1.2) / 3)
    assert a0["completion"] == pytest.approx((2 + 3 + 12) / 3)
    assert a0["wait"] == pytest.approx(4 / 3)
    assert a0["max_slowdown"] == pytest.approx(3.0)
    assert out.row(2, named=True)["slowdown"] == pytest.approx(2.0)
    assert out.row(0, named=True)["slowdown"] == pytest.approx(1.0)
    # bounded slowdown max(1, C / max(T, 10)): 2/10 -> 1, 3/10 -> 1, 12/10 = 1.2
    assert a0["bounded_slowdown"] == pytest.approx((1 + 1 + 1.2) / 3)
    # p95 of slowdowns [1, 1.2, 3], linear: 1.2 + 0.9 · (3 − 1.2)
    assert a0["p95_slowdown"] == pytest.approx(2.82)
    # waits [0, 2, 2] in steps (synthetic results: no real times, no utilisation)
    assert (a0["max_wait"], a0["p95_wait"], a0["p99_wait"]) == (2.0, 2.0, 2.0)
    # without DAGs every job is a one-task job: its completion time and slowdown
    assert (a0["jct"], a0["job_slowdown"]) == (a0["completion"], a0["slowdown"])


def test_bounded_slowdown_threshold_and_workload_key() -> None:
    res = make_results(ROWS, policies=["b", "a"])
    out = per_jobset(res, bsld_threshold=2.0)
    # 2/max(2,2) = 1, 3/max(1,2) = 1.5, 12/max(10,2) = 1.2
    assert out.row(1, named=True)["bounded_slowdown"] == pytest.approx((1 + 1.5 + 1.2) / 3)
    with pytest.raises(ValueError, match="bsld_threshold"):
        per_jobset(res, bsld_threshold=0)
    two = Results(
        pl.concat([res.table.with_columns(workload=pl.lit(w)) for w in ("x", "y")]), res.meta
    )
    out2 = per_jobset(two)
    assert out2.columns[:2] == ["policy", "workload"]
    assert out2.height == 2 * out.height


def test_per_jobset_keeps_null_load() -> None:
    rows = [(p, j, None, a, s, d) for p, j, _, a, s, d in ROWS]
    out = per_jobset(make_results(rows, policies=["b", "a"]))
    assert out.height == 3
    assert out.get_column("load").null_count() == 3


def test_per_length_assigns_buckets_and_drops_the_rest() -> None:
    out = per_length(make_results(ROWS, policies=["b", "a"]))
    assert out.get_column("bucket").dtype == pl.Enum(["short", "long"])
    got = out.select("policy", "jobset", pl.col("bucket").cast(pl.String), "n_jobs").rows()
    # duration-5 job of ("a", 1) is in no bucket: that jobset has no row here
    assert got == [("b", 0, "short", 2), ("b", 0, "long", 1), ("a", 0, "short", 2),
                   ("a", 0, "long", 1)]  # fmt: skip
    a_short = out.filter(policy="a", bucket="short").row(0, named=True)
    assert a_short["slowdown"] == pytest.approx((1 + 3) / 2)
    assert a_short["completion"] == pytest.approx((2 + 3) / 2)
    a_long = out.filter(policy="a", bucket="long").row(0, named=True)
    assert a_long["slowdown"] == pytest.approx(1.2)


def test_length_buckets_from_meta_are_ordered_by_lower_bound() -> None:
    res = make_results(ROWS, policies=["a", "b"], buckets={"long": [10, 15], "short": [1, 3]})
    assert list(length_buckets(res).items()) == [("short", (1, 3)), ("long", (10, 15))]


def test_length_buckets_fall_back_to_terciles() -> None:
    rows = [("a", 0, None, 0, 0, d) for d in (1, 1, 1, 2, 2, 2, 3, 3, 3)]
    res = make_results(rows, policies=["a"], buckets={})
    assert length_buckets(res) == {"short": (1, 1), "medium": (2, 2), "long": (3, 3)}
    out = per_length(res)
    assert out.get_column("bucket").cast(pl.String).to_list() == ["short", "medium", "long"]
    assert out.get_column("n_jobs").to_list() == [3, 3, 3]


def test_tercile_buckets_left_empty_by_ties_are_omitted() -> None:
    rows = [("a", 0, None, 0, 0, 5)] * 4
    res = make_results(rows, policies=["a"], buckets={})
    assert length_buckets(res) == {"short": (5, 5)}
