"""Demands: the empirical joint distribution of the demand vectors, per duration class.

Traces request resources in few distinct amounts (plan_cpu in half cores, processors as
integers), so no continuous family is forced on them: the model is the table of distinct demand
vectors with their frequencies. To keep the dependence between length and size (long jobs of a
trace are often the big ones, which matters to SJF and Tetris), the table is kept separately for
``n_classes`` duration classes cut at the duration quantiles; a class with fewer than
:data:`MIN_CLASS_JOBS` jobs is merged with its neighbour. A class with more than ``max_values``
distinct vectors keeps the most frequent ones (renormalised) and records the share it kept as
its ``coverage``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from schedlab.loaders.workload.components import DemandModel

MIN_CLASS_JOBS = 200
"""Fewest jobs a duration class may hold."""


def class_edges(duration: pl.Series, n_classes: int) -> tuple[int, ...]:
    """Upper bounds (steps, inclusive) of the first ``n_classes - 1`` duration classes.

    Cut at the ``k / n_classes`` quantiles (lower interpolation, so a bound is an observed
    duration); equal bounds collapse and classes under :data:`MIN_CLASS_JOBS` jobs merge.
    """
    if n_classes <= 1 or duration.len() == 0:
        return ()
    top = int(duration.max())  # type: ignore[arg-type]
    qs = [
        int(duration.quantile(k / n_classes, interpolation="lower"))  # type: ignore[arg-type]
        for k in range(1, n_classes)
    ]
    edges = sorted({q for q in qs if q < top})
    values, counts = np.unique(duration.to_numpy(), return_counts=True)
    cum = np.concatenate([[0], np.cumsum(counts)])

    def size(lo: float, hi: float) -> int:  # jobs with lo < d <= hi
        return int(
            cum[np.searchsorted(values, hi, side="right")]
            - cum[np.searchsorted(values, lo, side="right")]
        )

    kept: list[int] = []
    for e in edges:
        if size(kept[-1] if kept else 0, e) >= MIN_CLASS_JOBS:
            kept.append(e)
    while kept and size(kept[-1], top) < MIN_CLASS_JOBS:
        kept.pop()
    return tuple(kept)


def fit_demands(
    jobs: pl.DataFrame,
    resources: Sequence[str],
    *,
    n_classes: int = 4,
    max_values: int = 5000,
) -> tuple[DemandModel, pl.DataFrame]:
    """Empirical demand tables of ``jobs`` (columns ``duration`` and ``resources``).

    Returns
    -------
    model
        The :class:`~schedlab.loaders.workload.model.DemandModel`.
    table
        Tidy frame: ``class`` (int), ``lo``/``hi`` (duration bounds, steps), ``jobs`` (in the
        class), the resources, ``count`` and ``prob`` of each kept demand vector (most frequent
        first).
    """
    edges = class_edges(jobs.get_column("duration"), n_classes)
    res = list(resources)
    above = [(pl.col("duration") > e).cast(pl.Int64) for e in edges]  # = DemandModel.classes
    cls = pl.sum_horizontal(above) if above else pl.lit(0, pl.Int64)
    frame = jobs.select(cls.cast(pl.Int64).alias("class"), *res)
    counts = (
        frame.group_by("class", *res)
        .len("count")
        .sort(["class", "count", *res], descending=[False, True, *([False] * len(res))])
    )
    counts = counts.with_columns(
        pl.col("count").sum().over("class").alias("jobs"),
        pl.int_range(pl.len()).over("class").alias("_rank"),
    )
    kept = counts.filter(pl.col("_rank") < max_values).drop("_rank")
    bounds = [0, *edges, int(jobs.get_column("duration").max() or 1)]  # type: ignore[arg-type]
    values, probs, coverage = [], [], []
    for c in range(len(edges) + 1):
        part = kept.filter(pl.col("class") == c)
        n = part.get_column("count").to_numpy().astype(np.float64)
        values.append(part.select(res).to_numpy().astype(np.float64))
        probs.append(n / n.sum())
        coverage.append(float(n.sum() / part.get_column("jobs")[0]))
    ids = list(range(len(edges) + 1))
    table = kept.with_columns(
        pl.col("class").replace_strict(ids, [b + 1 for b in bounds[:-1]]).alias("lo"),
        pl.col("class").replace_strict(ids, bounds[1:]).alias("hi"),
        (pl.col("count") / pl.col("jobs")).alias("prob"),
    ).select("class", "lo", "hi", "jobs", *res, "count", "prob")
    model = DemandModel(
        class_edges=edges, values=tuple(values), probs=tuple(probs), coverage=tuple(coverage)
    )
    return model, table
