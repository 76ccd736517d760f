"""The unit a report shows times in: seconds, minutes, hours or days, picked for the values.

A trace's metrics are in seconds (:func:`~schedlab.evaluation.metrics.time_unit`); an average
wait of 353,943 s reads better as 98.3 h. :func:`display_scale` picks one unit for a whole report
from the reference policy's primary metric, so every table and axis of the report agrees;
workloads defined in steps stay in steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from schedlab.evaluation.metrics import SECONDS, TIME_METRICS

SCALES = (("d", 86_400.0, 2 * 86_400.0), ("h", 3_600.0, 3_600.0), ("min", 60.0, 120.0))
"""(name, seconds per unit, smallest value shown in it), largest first; below, seconds."""


@dataclass(frozen=True, slots=True)
class TimeScale:
    """Times shown in ``name``: one unit is ``factor`` of the results' time unit."""

    name: str
    """``"s"``, ``"min"``, ``"h"``, ``"d"`` or ``"steps"``."""
    factor: float = 1.0
    """Results' time units per shown unit (3600 for hours of seconds)."""

    def frame(self, df: pl.DataFrame, columns: tuple[str, ...] | None = None) -> pl.DataFrame:
        """``df`` with its time metric columns (default :data:`TIME_METRICS`) in this unit."""
        cols = [c for c in (columns or tuple(TIME_METRICS)) if c in df.columns]
        if self.factor == 1.0 or not cols:
            return df
        return df.with_columns(pl.col(c) / self.factor for c in cols)


def display_scale(value: float | None, unit: str) -> TimeScale:
    """The unit to show times of about ``value`` (in the results' ``unit``): days from 2 days,
    hours from 1 hour, minutes from 2 minutes, else seconds; steps stay steps."""
    if unit != SECONDS:
        return TimeScale(unit)
    for name, factor, least in SCALES:
        if value is not None and abs(value) >= least:
            return TimeScale(name, factor)
    return TimeScale(SECONDS)


def reference_value(pj: pl.DataFrame, metric: str, reference: str) -> float | None:
    """The reference's mean of ``metric`` over its jobsets (the magnitude to pick a unit for);
    None if ``metric`` is not a time."""
    if metric not in TIME_METRICS or metric not in pj.columns:
        metric = "wait" if "wait" in pj.columns else metric
    if metric not in pj.columns:
        return None
    rows = pj.filter(pl.col("policy") == reference).get_column(metric)
    return float(rows.mean()) if rows.len() else None  # type: ignore[arg-type]
