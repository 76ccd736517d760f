"""The tables of a training sweep: per run, per seed, per grid point, curves and baselines.

Read from the sweep directory as it stands (complete runs only in the values,
:func:`~schedlab.evaluation.sweep_runs.is_complete`); :func:`write_tables` writes ``runs.csv``
and ``summary.csv``. The statistics over seeds are :mod:`schedlab.evaluation.convergence`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from schedlab import io
from schedlab.evaluation.convergence import over_seeds, per_run, read_curves
from schedlab.evaluation.sweep_runs import DONE, SweepRun, is_complete, point_label
from schedlab.policies.training import Selection, read_selection


def sweep_curves(runs: Sequence[SweepRun], out: Path) -> pl.DataFrame:
    """Validation curves of the complete runs
    (:func:`~schedlab.evaluation.convergence.read_curves`): ``variant`` is the run's grid point
    (:func:`point_label`, "" without a grid), ``value`` the metric the run selected its policy
    on (:class:`~schedlab.policies.training.Selection`)."""
    parts = [
        read_curves({point_label(r.point, ""): [out / r.name]}) for r in runs if is_complete(r, out)
    ]
    if not parts:
        return pl.DataFrame(schema=CURVE_SCHEMA)
    return pl.concat(parts, how="diagonal_relaxed")


CURVE_SCHEMA = {
    "variant": pl.String,
    "run": pl.String,
    "iteration": pl.Int64,
    "value": pl.Float64,
    "seconds": pl.Float64,
    "initial": pl.Float64,
    "higher_is_better": pl.Boolean,
}
"""Columns of :func:`sweep_curves` when no run is complete."""


def per_seed(curves: pl.DataFrame) -> pl.DataFrame:
    """One row per complete run: :func:`~schedlab.evaluation.convergence.per_run` (``final``
    is the best validation value, the policy ``best.pt`` keeps; ``it_95``/``s_95``;
    ``it_target``/``s_target`` to the SJF baseline) and ``last``, the value at the last
    validation; its ``iterations`` column is left out (the config has it)."""
    if curves.is_empty():
        return pl.DataFrame(
            schema={"variant": pl.String, "run": pl.String, "final": pl.Float64, "last": pl.Float64}
        )
    last = curves.sort("iteration").group_by("run").agg(last=pl.col("value").last())
    return per_run(curves).drop("iterations").join(last, on="run", how="left")


def run_table(runs: Sequence[SweepRun], out: Path, seeds: pl.DataFrame) -> pl.DataFrame:
    """One row per run: ``run``, the grid fields, ``seed``, ``status`` (done, failed,
    pending), ``best_iteration`` and ``seconds`` (training time), then the columns of
    :func:`per_seed` (null for a run not complete)."""
    rows = []
    for r in runs:
        row: dict[str, Any] = {"run": r.name, **r.point, "seed": r.seed}
        if is_complete(r, out):
            done = json.loads((out / r.name / DONE).read_text())
            row |= {
                "status": "done",
                "best_iteration": done["best_iteration"],
                "seconds": done["seconds"],
            }
        else:
            failed = (out / "errors" / f"{r.name}.json").is_file()
            row["status"] = "failed" if failed else "pending"
        rows.append(row)
    schema = {"best_iteration": pl.Int64, "seconds": pl.Float64}
    table = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    for name, dtype in schema.items():
        if name not in table.columns:
            table = table.with_columns(pl.lit(None, dtype).alias(name))
    return table.join(seeds.drop("variant"), on="run", how="left", maintain_order="left")


def summary_table(runs: Sequence[SweepRun], seeds: pl.DataFrame) -> pl.DataFrame:
    """One row per grid point: ``point``, the grid fields, ``seeds`` (complete runs), and the
    mean with its Student-t interval over seeds of every column of :func:`per_seed`
    (:func:`~schedlab.evaluation.convergence.over_seeds`: ``final``, ``final_low``,
    ``final_high``, ``final_n``, ``last``, ... at the default statistics' confidence level)."""
    points = pl.DataFrame(
        [{"point": point_label(r.point, ""), **r.point} for r in runs], infer_schema_length=None
    ).unique("point", keep="first", maintain_order=True)
    if seeds.is_empty():
        nulls = [f"{c}{s}" for c in ("final", "last") for s in ("", "_low", "_high")]
        return points.with_columns(
            pl.lit(0).alias("seeds"), *(pl.lit(None, pl.Float64).alias(c) for c in nulls)
        )
    stats = over_seeds(seeds).rename({"variant": "point", "runs": "seeds"})
    table = points.join(stats, on="point", how="left", maintain_order="left")
    return table.with_columns(pl.col("seeds").fill_null(0))


def baseline_table(curves: pl.DataFrame) -> pl.DataFrame:
    """Heuristics on the runs' validation jobsets (the ``baseline_<name>`` columns of
    :func:`sweep_curves`), averaged over the complete seeds of each point: ``point``,
    ``policy``, ``value``."""
    names = [c for c in curves.columns if c.startswith("baseline_")]
    per_run_values = curves.group_by("variant", "run", maintain_order=True).agg(
        pl.col(names).first()
    )
    return (
        per_run_values.unpivot(names, index=["variant", "run"], variable_name="policy")
        .drop_nulls("value")
        .group_by("variant", "policy", maintain_order=True)
        .agg(pl.col("value").mean().cast(pl.Float64))
        .select(
            pl.col("variant").alias("point"),
            pl.col("policy").str.strip_prefix("baseline_"),
            "value",
        )
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepTables:
    """The tables of a sweep directory, as they stand (complete runs only in the values)."""

    runs: pl.DataFrame
    """:func:`run_table`."""
    seeds: pl.DataFrame
    """:func:`per_seed`."""
    summary: pl.DataFrame
    """:func:`summary_table`."""
    curves: pl.DataFrame
    """:func:`sweep_curves`."""
    baselines: pl.DataFrame
    """:func:`baseline_table`."""
    selection: Selection | None
    """What the runs selected their policy on (None before a run is complete)."""


def collect_sweep(runs: Sequence[SweepRun], out: Path) -> SweepTables:
    """Every table of the sweep ``runs`` in ``out``."""
    curves = sweep_curves(runs, out)
    seeds = per_seed(curves)
    done = [r for r in runs if is_complete(r, out)]
    return SweepTables(
        runs=run_table(runs, out, seeds),
        seeds=seeds,
        summary=summary_table(runs, seeds),
        curves=curves,
        baselines=baseline_table(curves),
        selection=read_selection(out / done[0].name) if done else None,
    )


def write_tables(runs: Sequence[SweepRun], out: Path) -> SweepTables:
    """Write ``runs.csv`` and ``summary.csv`` (:func:`collect_sweep`); returns the tables."""
    tables = collect_sweep(runs, out)
    for name, df in (("runs.csv", tables.runs), ("summary.csv", tables.summary)):
        with io.atomic_path(out / name) as tmp:
            df.write_csv(tmp)
    return tables
