"""Time axes people read: the log's calendar dates, else hours or days, else steps.

A figure of a schedule over time takes times in steps; :class:`TimeAxis` turns them into what
the x axis shows: dates and times of day in the log's own time zone when the trace gives its
start (:class:`~schedlab.evaluation.clock.Clock`), else seconds since the jobset's start in the
unit that suits the span (minutes, hours or days), else steps for a workload defined in steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from schedlab.evaluation.clock import Clock

NICE_SECONDS = (60, 300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
"""Bin and window widths in seconds (a minute to a week), for a trace with real times."""
UNITS = (("days", 86_400.0), ("hours", 3_600.0), ("minutes", 60.0), ("seconds", 1.0))
"""Units of a time axis without dates, largest first, with their length in seconds."""


@dataclass(frozen=True, slots=True)
class TimeAxis:
    """How to draw times (steps) of one clock over a span (steps)."""

    clock: Clock
    span: float
    """Length of the time drawn (steps), which picks the unit."""

    @property
    def dated(self) -> bool:
        """Whether the axis shows calendar dates."""
        return self.clock.origin is not None

    @property
    def unit(self) -> tuple[str, float]:
        """Name and length in steps of the axis unit (``("days", 86400.0)`` at 1 s steps)."""
        if self.clock.step is None:
            return "steps", 1.0
        seconds = self.span * self.clock.step
        for name, length in UNITS:
            if seconds >= 3 * length or name == "seconds":
                return name, length / self.clock.step
        return "seconds", 1.0 / self.clock.step  # unreachable: seconds always matches

    def values(self, steps: np.ndarray) -> np.ndarray:
        """x values of ``steps``: datetimes (naive, the log's local time) or numbers in
        :attr:`unit`."""
        steps = np.asarray(steps, dtype=np.float64)
        if self.clock.origin is None:
            return steps / self.unit[1]
        seconds = self.clock.origin + steps * (self.clock.step or 1.0)
        stamps = pd.to_datetime(pd.Series(seconds), unit="s", utc=True)
        if self.clock.zone:
            stamps = stamps.dt.tz_convert(self.clock.zone)
        return stamps.dt.tz_localize(None).to_numpy()

    def label(self, what: str = "Time") -> str:
        """The axis label: ``"Date (Europe/Stockholm)"``, ``"Time (days since the start)"``,
        ``"Time (steps)"``."""
        if self.dated:
            return f"Date ({self.clock.zone or 'UTC'})"
        name = self.unit[0]
        return f"{what} ({name})" if name == "steps" else f"{what} ({name} since the start)"

    def span_text(self, steps: float) -> str:
        """A duration in words with its unit: ``"3.5 hours"``, ``"12 steps"``."""
        if self.clock.step is None:
            return f"{steps:,.0f} steps"
        seconds = steps * self.clock.step
        for name, length in UNITS:
            if seconds >= length or name == "seconds":
                value = seconds / length
                text = f"{value:,.{0 if value >= 10 else 1}f}".removesuffix(".0")
                return f"{text} {name[:-1] if text == '1' else name}"
        return f"{seconds:g} seconds"

    def format(self, ax: Axes, *, label: bool = True) -> None:
        """Date ticks that fit (concise, e.g. ``Oct``/``Nov`` or hours of a day) on a dated axis,
        and the axis label."""
        if self.dated:
            locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        if label:
            ax.set_xlabel(self.label())


def nice_width(steps: float, clk: Clock) -> float:
    """A width of about ``steps`` steps that reads well: a round number of minutes, hours or
    days (the largest of :data:`NICE_SECONDS` not above it) with real times, else whole steps."""
    if clk.step is None:
        return float(max(1, round(steps)))
    seconds = steps * clk.step
    fit = [s for s in NICE_SECONDS if s <= seconds] or [NICE_SECONDS[0]]
    return max(fit[-1] / clk.step, 1.0)
