"""The columns that identify one (policy, jobset) run in results and per-jobset tables, and the
order of their policies.

Shared by every per-jobset reduction (:mod:`schedlab.evaluation.metrics`,
:mod:`schedlab.evaluation.jobs`, :mod:`schedlab.evaluation.multicluster`), so that their rows
join and sort alike.
"""

from __future__ import annotations

import polars as pl

from schedlab.results import Results

KEYS = ("policy", "load", "seed", "jobset")
"""Columns identifying one jobset run by one policy (``seed`` and ``load`` may be null).

Results of an experiment also carry a ``workload`` column (str); when present it is a key too,
placed after ``policy`` (:func:`keys`)."""


def policy_order(results: Results) -> list[str]:
    """Policy names in simulation order, then any others found in the table (sorted)."""
    order = list(results.meta.get("policies", {}))
    extra = set(results.table.get_column("policy").unique().to_list()) - set(order)
    return order + sorted(extra)


def keys(table: pl.DataFrame) -> tuple[str, ...]:
    """:data:`KEYS`, with ``workload`` after ``policy`` when ``table`` has that column."""
    return ("policy", "workload", *KEYS[1:]) if "workload" in table.columns else KEYS


def sort_runs(df: pl.DataFrame, order: list[str], extra: tuple[str, ...] = ()) -> pl.DataFrame:
    """``df`` sorted by policy in ``order``, then by the other keys and ``extra`` (nulls last)."""
    rank = pl.col("policy").replace_strict(order, list(range(len(order))), return_dtype=pl.Int64)
    return df.sort(rank, *keys(df)[1:], *extra, nulls_last=True)
