"""The DAG shape of a trace: tasks per job, depth and width, and the model the generator uses.

:func:`fit_dag_shape` measures every DAG job of a JobSet (:func:`schedlab.dag_measures.shapes`) and
fits the level-by-level model of :mod:`schedlab.loaders.workload.dag_shape` by its empirical
distributions: the depth of every job, the width of every level of every job, and the parents of
every task below its job's first level (a task's parents count, whatever their level). The model
draws level widths independently; :func:`dag_shape_summary` sets the trace's tasks per job and
widths beside the model's expectations, so the cost of that assumption is visible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from schedlab import dag, dag_measures
from schedlab.jobset import JobSet
from schedlab.loaders.workload.dag_shape import DagShape, pmf


@dataclass(frozen=True, slots=True)
class DagShapeFit:
    """A fitted DAG shape model and what it was fitted to."""

    model: DagShape
    jobs: pl.DataFrame
    """Per DAG job (:func:`schedlab.dag_measures.shapes`): jobset, dag, tasks, depth, width."""
    level_widths: np.ndarray
    """int64: tasks on every level of every job."""
    parents: np.ndarray
    """int64: parents of every task below its job's first level."""


def fit_dag_shape(jobset: JobSet) -> DagShapeFit:
    """Fit the DAG shape model to the DAG jobs of ``jobset`` (needs ``parents`` and ``dag``).

    Raises
    ------
    ValueError
        If the JobSet has no DAG columns.
    """
    jobs = jobset.jobs
    if "parents" not in jobs.columns or "dag" not in jobs.columns:
        msg = f"the JobSet has no DAGs (parents and dag columns); it has {jobs.columns}"
        raise ValueError(msg)
    g = dag.graph(jobs)
    per_task = (
        jobs.select("jobset", "dag")
        .with_columns(
            pl.Series("_t", g.task),
            pl.Series("_level", dag_measures.levels(g)),
            pl.Series("_parents", g.n_parents),
        )
        .unique(["_t"], keep="first")
    )
    widths = per_task.group_by("jobset", "dag", "_level").len().get_column("len").to_numpy()
    parents = per_task.filter(pl.col("_level") > 0).get_column("_parents").to_numpy()
    shapes = dag_measures.shapes(jobs, g)
    model = DagShape(
        depth=pmf(shapes.get_column("depth").to_numpy()),
        width=pmf(widths),
        parents=pmf(parents) if parents.size else (1.0,),
        source=dict(jobset.meta.provenance),
    )
    return DagShapeFit(model, shapes, widths.astype(np.int64), parents.astype(np.int64))


def dag_shape_summary(fit: DagShapeFit) -> pl.DataFrame:
    """Summary of the trace's DAG shapes and the model's expectations.

    Returns
    -------
    polars.DataFrame
        One row per quantity (``tasks per job``, ``depth``, ``width`` (widest level),
        ``tasks per level``, ``parents per task`` (below the first level)): ``n``, ``mean``,
        ``median``, ``p95``, ``max`` over the trace, and ``model_mean`` (the fitted model's
        expectation; for tasks per job E[depth] · E[tasks per level]; none for the width).
    """
    m = fit.model
    parts = {
        "tasks per job": (fit.jobs.get_column("tasks").to_numpy(), m.mean_tasks()),
        "depth": (fit.jobs.get_column("depth").to_numpy(), m.mean("depth")),
        "width": (fit.jobs.get_column("width").to_numpy(), None),
        "tasks per level": (fit.level_widths, m.mean("width")),
        "parents per task": (fit.parents, m.mean("parents")),
    }
    rows = [
        {
            "quantity": name,
            "n": int(v.size),
            "mean": float(v.mean()) if v.size else None,
            "median": float(np.median(v)) if v.size else None,
            "p95": float(np.quantile(v, 0.95)) if v.size else None,
            "max": int(v.max()) if v.size else None,
            "model_mean": model,
        }
        for name, (v, model) in parts.items()
    ]
    return pl.DataFrame(
        rows,
        schema={
            "quantity": pl.Utf8,
            "n": pl.Int64,
            "mean": pl.Float64,
            "median": pl.Float64,
            "p95": pl.Float64,
            "max": pl.Int64,
            "model_mean": pl.Float64,
        },
    )
