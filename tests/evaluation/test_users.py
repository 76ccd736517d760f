"""Per-user waits and bounded slowdowns, Jain's fairness index, the worst-served users."""

from __future__ import annotations

import polars as pl
import pytest

from schedlab.evaluation.users import MIN_JOBS, fairness, per_user, users_of, worst_served
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.policies.heuristics import FCFS, SJF
from schedlab.results import Results
from schedlab.simulator.run import simulate


def results(users: list[str | None], waits: list[int], durations: list[int]) -> Results:
    """One policy, one jobset: jobs arrive at 0 and wait ``waits`` steps (τ = 10 steps)."""
    n = len(users)
    table = pl.DataFrame(
        {
            "policy": ["p"] * n,
            "jobset": pl.Series([0] * n, dtype=pl.Int32),
            "load": pl.Series([None] * n, dtype=pl.Float64),
            "job_id": list(range(n)),
            "arrival": [0] * n,
            "start": waits,
            "duration": durations,
            "finish": [w + d for w, d in zip(waits, durations, strict=True)],
            "wait": waits,
            "completion": [w + d for w, d in zip(waits, durations, strict=True)],
            "slowdown": [(w + d) / d for w, d in zip(waits, durations, strict=True)],
            "user": pl.Series(users, dtype=pl.String),
        }
    )
    return Results(table, {"policies": {"p": {}}})


def test_per_user_averages_each_users_jobs() -> None:
    res = results(["a", "a", "b", None], [0, 20, 90, 5], [10, 10, 10, 10])
    u = per_user(res, bsld_threshold=10.0)
    assert u is not None
    rows = {r["user"]: r for r in u.iter_rows(named=True)}
    assert rows["a"]["n_jobs"] == 2
    assert rows["a"]["wait"] == pytest.approx(10.0)
    assert rows["a"]["bounded_slowdown"] == pytest.approx((1.0 + 3.0) / 2)  # (0+10)/10, (20+10)/10
    assert rows["b"]["bounded_slowdown"] == pytest.approx(10.0)
    assert rows[None]["n_jobs"] == 1  # jobs without a user id: one row, no user


def test_jains_index_and_the_worst_user() -> None:
    users = ["a"] * MIN_JOBS + ["b"] * MIN_JOBS + ["c"]
    waits = [0] * MIN_JOBS + [30] * MIN_JOBS + [500]
    u = per_user(results(users, waits, [10] * len(users)), bsld_threshold=10.0)
    assert u is not None
    f = fairness(u).row(0, named=True)
    x = [1.0, 4.0, 51.0]  # users' mean bounded slowdowns
    assert f["n_users"] == 3
    assert f["jain"] == pytest.approx(sum(x) ** 2 / (3 * sum(v * v for v in x)))
    assert f["mean_user_bsld"] == pytest.approx(sum(x) / 3)
    # c has one job only: not ranked; the worst user with enough jobs is b
    assert (f["worst_user"], f["worst_bsld"]) == ("b", pytest.approx(4.0))
    w = worst_served(u, "p", [])
    assert w.get_column("user").to_list() == ["b", "a"]
    assert w.get_column("bsld p").to_list() == pytest.approx([4.0, 1.0])
    even = per_user(results(["a", "b"], [5, 5], [10, 10]), bsld_threshold=10.0)
    assert even is not None
    assert fairness(even).get_column("jain").item() == pytest.approx(1.0)


def test_users_come_from_the_results_or_their_jobset() -> None:
    jobs = pl.DataFrame(
        {
            "jobset": pl.Series([0, 0, 0], dtype=pl.Int32),
            "job_id": [0, 1, 2],
            "arrival": [0, 0, 1],
            "duration": [3, 2, 2],
            "cpu": [6.0, 6.0, 2.0],
            "user": ["7", "9", "7"],
        }
    )
    js = JobSet.create(jobs, JobSetMeta(resources=("cpu",), capacity=(10.0,)))
    res = simulate(js, [FCFS(), SJF()])
    assert res.table.get_column("user").to_list()[:3] == ["7", "9", "7"]  # results keep them
    u = per_user(Results(res.table.drop("user"), res.meta), js)  # older results: from the JobSet
    assert u is not None
    assert set(u.get_column("user")) == {"7", "9"}
    assert u.height == 4  # 2 users x 2 policies
    assert per_user(Results(res.table.drop("user"), res.meta)) is None
    unknown = res.table.with_columns(pl.lit(None, pl.String).alias("user"))
    assert users_of(Results(unknown, res.meta)) is None  # every id unknown: no users
