"""Per-job simulation results (design.md §7): the table every evaluation starts from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab import io
from schedlab.frames import html_preview
from schedlab.results_check import (
    DAG_RESULT_COLUMNS,
    RESULT_COLUMNS,
    SECONDS_RESULT_COLUMNS,
    check_table,
)

if TYPE_CHECKING:
    import pandas as pd

USER_COLUMN = "user"
"""The JobSet column results keep as it is, where the JobSet has it (an SWF log's user ids)."""


def kept_columns(jobs: pl.DataFrame) -> list[str]:
    """JobSet columns a results builder copies into the results: :data:`USER_COLUMN`."""
    return [USER_COLUMN] if USER_COLUMN in jobs.columns else []


def result_extras(columns: list[str]) -> list[str]:
    """Columns a cluster's results add after :data:`RESULT_COLUMNS`, ``killed`` and the seconds
    columns, for a JobSet with ``columns``: :data:`DAG_RESULT_COLUMNS` for a DAG workload, then
    :func:`kept_columns`."""
    dag = list(DAG_RESULT_COLUMNS) if "dag" in columns else []
    return [*dag, *([USER_COLUMN] if USER_COLUMN in columns else [])]


RESULT_BYTES = 2 * 8 * (len(RESULT_COLUMNS) + len(SECONDS_RESULT_COLUMNS))
"""Memory one result row holds at its peak, in bytes (its 8-byte columns, with the seconds
columns of a trace, twice: the simulator's table and its concatenation), for size estimates
(:mod:`schedlab.sizes`)."""
MIN_RUN_SECONDS = 1.0
"""Shortest run time a slowdown divides by, in seconds: SWF's resolution. A job that ran less
(a 0 s job of a trace) has slowdown ``1 + wait_s / 1 s``."""


def run_seconds(columns: list[str]) -> pl.Expr:
    """Seconds a job ran (float64), the one place that defines it, from a table with
    ``columns``: its recorded ``duration_s``, or ``min(duration_s, estimate_s)`` for a job
    killed at its request (a true ``killed``), so that every seconds metric follows it."""
    if "killed" in columns and "estimate_s" in columns:
        killed = pl.min_horizontal("duration_s", "estimate_s")
        return pl.when(pl.col("killed")).then(killed).otherwise(pl.col("duration_s"))
    return pl.col("duration_s")


def seconds_inputs(jobs: pl.DataFrame, resource: str, capacity: float) -> list[pl.Expr]:
    """Job columns :func:`seconds_results` needs (``arrival_s``, ``duration_s``, ``estimate_s``
    when present, ``share`` of ``resource`` out of ``capacity``), or none without real times."""
    if "arrival_s" not in jobs.columns or "duration_s" not in jobs.columns:
        return []
    times = [c for c in ("arrival_s", "duration_s", "estimate_s") if c in jobs.columns]
    return [*map(pl.col, times), (pl.col(resource) / capacity).alias("share")]


def seconds_results(step: float | None, columns: list[str]) -> list[pl.Expr]:
    """Expressions adding :data:`SECONDS_RESULT_COLUMNS` to a results table from its ``start``
    (steps of ``step`` seconds) and :func:`seconds_inputs`, and replacing the per-job
    ``slowdown`` by its value on the real times, ``1 + wait_s / max(run_s, MIN_RUN_SECONDS)``
    (``completion_s / run_s`` for a job of 1 s or more; >= 1); none without real times
    (``columns``, the table's, lack ``arrival_s``)."""
    if step is None or "arrival_s" not in columns:
        return []
    wait = (pl.col("start") * step - pl.col("arrival_s")).clip(lower_bound=0.0)
    run = run_seconds(columns)
    return [
        pl.col("arrival_s"),
        run.alias("run_s"),
        wait.alias("wait_s"),
        (wait + run).alias("completion_s"),
        pl.col("share"),
        (1.0 + wait / pl.max_horizontal(run, pl.lit(MIN_RUN_SECONDS))).alias("slowdown"),
    ]


@dataclass(frozen=True, slots=True)
class Results:
    """One row per (policy, jobset, job), plus metadata.

    Columns: ``policy`` (str), ``jobset`` (int32), ``load`` (float64, the jobset's target load or
    null), ``seed`` (int64 or null), ``job_id``, ``arrival``, ``start``, ``finish``, ``duration``,
    ``completion = finish − arrival``, ``wait = start − arrival`` (int64, steps) and
    ``slowdown = completion / duration`` (float64, >= 1). When the JobSet has real times (a
    trace), also :data:`SECONDS_RESULT_COLUMNS`, and ``slowdown`` is on the real times
    (:func:`seconds_results`): quantizing to steps may change the schedule, never a metric.
    When the JobSet has a ``user`` column (an SWF log's user ids), the results carry it too
    (:mod:`schedlab.evaluation.users`).

    ``meta`` holds ``jobset`` (the JobSet metadata), ``policies`` (name -> parameters),
    ``config`` (cluster geometry) and ``length_buckets``; for learned policies run on the batched
    engine, ``agent_stats`` (name -> time steps, steps that withheld a fitting job, withheld job
    counts by length, jobs placed by the time-limit fallback).
    """

    table: pl.DataFrame
    meta: dict[str, Any]

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write atomically, metadata in the file."""
        io.write_parquet(self.table, path, {"kind": "results", **self.meta})

    @classmethod
    def read_parquet(cls, path: str | os.PathLike[str]) -> Results:
        """Read a results file written by :meth:`write_parquet`, checked column by column
        (:func:`schedlab.results_check.check_table`: errors name the file, column and row)."""
        df, meta = io.read_parquet(path, "results")
        meta.pop("kind")
        check_table(df, meta, source=str(path))
        return cls(df, meta)

    @classmethod
    def concat(cls, parts: list[Results]) -> Results:
        """Stack results of the same jobsets (e.g. policies simulated separately)."""
        meta = dict(parts[0].meta)
        meta["policies"] = {k: v for p in parts for k, v in p.meta["policies"].items()}
        agents = {k: v for p in parts for k, v in p.meta.get("agent_stats", {}).items()}
        if agents:
            meta["agent_stats"] = agents
        return cls(pl.concat([p.table for p in parts], how="vertical"), meta)

    @property
    def policies(self) -> list[str]:
        """Policy names in the order they were simulated."""
        return list(self.meta["policies"])

    def to_pandas(self) -> pd.DataFrame:
        """The per-job table as a pandas DataFrame."""
        return self.table.to_pandas()

    def _repr_html_(self) -> str:
        t = self.table
        loads = t.get_column("load").drop_nulls().unique().sort().to_list() if t.height else []
        facts = [
            f"policies: {', '.join(self.policies)}",
            f"{t.height:,} job rows, {t.select('jobset').n_unique() if t.height else 0} jobsets",
            f"offered loads: {', '.join(f'{x:g}' for x in loads) or 'not recorded'}",
        ]
        return html_preview("Results", facts, t)
