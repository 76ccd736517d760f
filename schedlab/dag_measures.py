"""Linear passes over a precedence graph (:class:`schedlab.dag.Graph`): ranks, earliest starts,
critical paths, levels and shapes.

Each pass walks the rows once in the graph's topological order (numba), so the full v2018
trace (14.3M rows) takes a fraction of a second. :func:`upward_rank` is the key of
critical-path-first orders; :func:`earliest_starts` is the unlimited-machines schedule an
engine enforcing precedence must reproduce when capacity never binds; :func:`critical_paths`
and :func:`shapes` measure DAG jobs (tasks, depth, width).
"""

from __future__ import annotations

import numba
import numpy as np
import polars as pl

from schedlab.dag import Graph, graph

Walk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""What a compiled pass reads of a :class:`~schedlab.dag.Graph`: ``(order, task, child_offsets,
children)``."""


def _walk(g: Graph) -> Walk:
    return g.order, g.task, g.child_offsets, g.children


def upward_rank(g: Graph, duration: np.ndarray) -> np.ndarray:
    """Per row, the longest path from its start to its dag's end, including its own duration.

    ``rank(r) = duration(r) + max(rank(c) for c waiting for r's task)`` (0 without children):
    the remaining critical path once ``r`` starts, the key of critical-path-first orders.

    Parameters
    ----------
    g
        The graph of the rows.
    duration
        int, shape ``(n_rows,)``: durations in steps.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n_rows,)``, steps.
    """
    rank: np.ndarray = _rank(_walk(g), np.asarray(duration, np.int64))
    return rank


def earliest_starts(g: Graph, release: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Per row, its start with unlimited machines: ``max(release, its parent tasks' finish)``.

    With ``release`` = each row's own arrival this is the ``trace`` release rule; with its DAG
    job's arrival (its first task's) for every row, the ``dag`` rule, under which each job's
    completion time equals its critical path exactly (:func:`critical_paths`).

    Parameters
    ----------
    g
        The graph of the rows.
    release, duration
        int, shape ``(n_rows,)``: when each row may start at the earliest, and its duration
        (steps).

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n_rows,)``, steps.
    """
    release = np.asarray(release, np.int64)
    duration = np.asarray(duration, np.int64)
    start: np.ndarray = _earliest(_walk(g), release, duration)
    return start


def critical_paths(jobs: pl.DataFrame, g: Graph | None = None) -> pl.DataFrame:
    """Per DAG job, its length with unlimited machines: the largest :func:`upward_rank`.

    Parameters
    ----------
    jobs
        A jobs table with ``dag`` (and ``parents``; without it every row is independent).
    g
        Its graph (built when not given).

    Returns
    -------
    polars.DataFrame
        Columns ``jobset`` (int32), ``dag`` (int64), ``tasks`` (uint32, rows of the dag) and
        ``critical_path`` (int64, steps), sorted by jobset and dag.
    """
    if "dag" not in jobs.columns:
        msg = f"critical paths need the dag column (the DAG job of each row); have {jobs.columns}"
        raise ValueError(msg)
    g = graph(jobs) if g is None else g
    rank = upward_rank(g, jobs.get_column("duration").to_numpy())
    return (
        jobs.select("jobset", "dag")
        .with_columns(pl.Series("critical_path", rank))
        .group_by("jobset", "dag")
        .agg(pl.len().alias("tasks"), pl.col("critical_path").max())
        .sort("jobset", "dag")
    )


def levels(g: Graph) -> np.ndarray:
    """Per row, its level: the most tasks on a path from a root of its dag to it (roots: 0),
    which is its :func:`earliest_starts` when every row is released at 0 and runs one step.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n_rows,)``.
    """
    n = g.task.size
    return earliest_starts(g, np.zeros(n, np.int64), np.ones(n, np.int64))


def shapes(jobs: pl.DataFrame, g: Graph | None = None) -> pl.DataFrame:
    """The shape of every DAG job: its tasks, its depth (levels) and its width.

    A task's level is :func:`levels` of its rows; the width is the most tasks on one level.

    Returns
    -------
    polars.DataFrame
        Columns ``jobset`` (int32), ``dag`` (int64), ``tasks`` (uint32, distinct tasks; rows
        at task granularity), ``depth`` and ``width`` (int64), sorted by jobset and dag.
    """
    if "dag" not in jobs.columns:
        msg = f"DAG shapes need the dag column (the DAG job of each row); have {jobs.columns}"
        raise ValueError(msg)
    g = graph(jobs) if g is None else g
    per_task = (
        jobs.select("jobset", "dag")
        .with_columns(pl.Series("_t", g.task), pl.Series("_level", levels(g)))
        .unique(["_t"], keep="first")
    )
    per_level = per_task.group_by("jobset", "dag", "_level").agg(pl.len().alias("n"))
    return (
        per_level.group_by("jobset", "dag")
        .agg(
            pl.col("n").sum().alias("tasks"),
            (pl.col("_level").max() + 1).alias("depth"),
            pl.col("n").max().cast(pl.Int64).alias("width"),
        )
        .sort("jobset", "dag")
    )


@numba.njit(cache=True)
def _rank(walk: Walk, duration: np.ndarray) -> np.ndarray:
    order, task, offsets, children = walk
    rank = np.zeros(order.size, np.int64)
    for i in range(order.size - 1, -1, -1):
        r = order[i]
        t = task[r]
        best = 0
        for e in range(offsets[t], offsets[t + 1]):
            best = max(best, rank[children[e]])
        rank[r] = duration[r] + best
    return rank


@numba.njit(cache=True)
def _earliest(walk: Walk, release: np.ndarray, duration: np.ndarray) -> np.ndarray:
    order, task, offsets, children = walk
    start = release.copy()
    for r in order:  # a row's start is final once every row before it in the order is placed
        t = task[r]
        end = start[r] + duration[r]
        for e in range(offsets[t], offsets[t + 1]):
            c = children[e]
            start[c] = max(start[c], end)
    return start
