"""Convergence over training seeds: final values, iterations to 95% and to a baseline level."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import SchedlabError
from schedlab.evaluation.convergence import over_seeds, per_run, read_curves


def _run(tmp_path: Path, name: str, values: list[float | None], sjf: float) -> Path:
    d = tmp_path / name
    d.mkdir()
    n = len(values)
    pl.DataFrame({
        "iteration": list(range(1, n + 1)), "val_slowdown": values,
        "rollout_s": [1.0] * n, "update_s": [0.5] * n, "eval_s": [0.5] * n,
    }).write_csv(d / "curve.csv")  # fmt: skip
    (d / "baselines.json").write_text(json.dumps({"sjf": sjf, "initial": 5.0}))
    return d


def test_hand_computed_convergence(tmp_path: Path) -> None:
    # improvement 5 -> 3 (2.0); 95% of it is reached at <= 3.1: iteration 4 (3.05)
    a = _run(tmp_path, "a-s0", [4.0, None, 3.5, 3.05, 3.0, 3.2], sjf=3.5)
    b = _run(tmp_path, "a-s1", [4.5, 4.0, 3.9, 3.8], sjf=3.5)  # never reaches SJF
    runs = per_run(read_curves({"a": [a, b]}))
    first = runs.row(0, named=True)
    assert (first["final"], first["it_95"], first["s_95"]) == (3.0, 4, 8.0)
    assert (first["it_target"], first["s_target"]) == (3, 6.0)  # 3.5 <= sjf at iteration 3
    second = runs.row(1, named=True)
    assert second["it_target"] is None
    assert second["it_95"] == 4  # 5 - 3.8 = 1.2 of 1.2
    seeds = over_seeds(runs).row(0, named=True)
    assert seeds["runs"] == 2
    assert seeds["final"] == pytest.approx(3.4)
    assert seeds["final_low"] < 3.4 < seeds["final_high"]
    assert (seeds["it_target"], seeds["it_target_n"]) == (3.0, 1)


def test_the_initial_policy_is_iteration_0_after_the_cloning_time(tmp_path: Path) -> None:
    cloned = _run(tmp_path, "cloned", [3.4, 3.0], sjf=3.5)
    (cloned / "baselines.json").write_text(json.dumps({"sjf": 3.5, "initial": 3.45}))
    (cloned / "imitation.json").write_text(json.dumps({"seconds": 100.0}))
    scratch = _run(tmp_path, "scratch", [4.0, 3.0], sjf=3.5)
    runs = per_run(read_curves({"bc": [cloned], "rl": [scratch]}))
    bc, rl = runs.row(0, named=True), runs.row(1, named=True)
    assert (bc["it_target"], bc["s_target"], bc["pretrain_s"]) == (0, 100.0, 100.0)
    assert (bc["final"], bc["it_95"], bc["s_95"]) == (3.0, 2, 104.0)
    assert (rl["it_target"], rl["s_target"], rl["pretrain_s"]) == (2, 4.0, 0.0)


def test_a_variant_whose_runs_never_reach_the_target_says_so(tmp_path: Path) -> None:
    from schedlab.reports.sweep import summary_rows

    runs = [_run(tmp_path, f"s{k}", [4.5, 4.0 - k / 10], sjf=3.5) for k in range(3)]
    seeds = over_seeds(per_run(read_curves({"": runs})))
    row = seeds.row(0, named=True)
    assert (row["it_target_n"], row["it_target"], row["s_target_n"]) == (0, None, 0)
    summary = seeds.rename({"variant": "point", "runs": "seeds"})
    none = pl.DataFrame(schema={"point": pl.String, "policy": pl.String, "value": pl.Float64})
    table = summary_rows(summary, none)
    cells = dict(zip(table.header, table.rows[0], strict=True))
    assert cells["it to sjf"] == cells["s to sjf"] == "never (0/3)"
    # every seed: its last value is its best, so the interval is one point and prints as it
    assert cells["it 95%"] == "2.00"
    half = summary.with_columns(it_target=pl.lit(4.0), it_target_n=pl.lit(2))
    cells = dict(zip(table.header, summary_rows(half, none).rows[0], strict=True))
    assert cells["it to sjf"].endswith("(2/3)")


def test_a_directory_that_is_not_a_run_is_named(tmp_path: Path) -> None:
    with pytest.raises(SchedlabError, match="not a training run"):
        read_curves({"x": [tmp_path]})
