"""Per-job simulation results (design.md §7): the table every evaluation starts from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab import io
from schedlab.frames import html_preview

if TYPE_CHECKING:
    import pandas as pd

RESULT_COLUMNS = (
    "policy", "jobset", "load", "seed", "job_id", "arrival", "start", "finish", "duration",
    "machine", "slowdown", "completion", "wait",
)  # fmt: skip
RESULT_BYTES = 2 * 8 * len(RESULT_COLUMNS)
"""Memory one result row holds at its peak, in bytes (its 8-byte columns, twice: the
simulator's table and its concatenation), for size estimates (:mod:`schedlab.sizes`)."""


@dataclass(frozen=True, slots=True)
class Results:
    """One row per (policy, jobset, job), plus metadata.

    Columns: ``policy`` (str), ``jobset`` (int32), ``load`` (float64, the jobset's target load or
    null), ``seed`` (int64 or null), ``job_id``, ``arrival``, ``start``, ``finish``, ``duration``,
    ``completion = finish − arrival``, ``wait = start − arrival`` (int64, steps) and
    ``slowdown = completion / duration`` (float64, >= 1).

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
        """Read a results file written by :meth:`write_parquet`."""
        df, meta = io.read_parquet(path, "results")
        meta.pop("kind")
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
