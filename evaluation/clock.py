"""What a schedule's time steps are in seconds, and on the calendar.

A synthetic workload is defined in steps; a trace's JobSet records the seconds per step
(``time_step_seconds``) and, for an SWF log, the log's start on the calendar (``UnixStartTime``
and ``TimeZoneString`` of its header, kept in the provenance). Step 0 of a jobset is the trace's
first kept arrival (``trace_start_s`` after the ``start`` option) plus the jobset's own origin:
0 when the trace is one jobset, ``jobset × arrival_window`` steps for time windows. Jobsets cut by
job counts (``jobset_size``, ``windows``) start at their first job, whose date the JobSet does
not keep: they get no calendar (their times are still seconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class Clock:
    """How to read a jobset's time steps."""

    step: float | None
    """Seconds per step; None: a workload defined in steps."""
    origin: float | None = None
    """Unix time (seconds) of step 0; None when not known."""
    zone: str | None = None
    """IANA time zone of the log (e.g. ``"Europe/Stockholm"``), when the trace names one."""

    def seconds(self, steps: float) -> float:
        """``steps`` in seconds (steps themselves without a step length)."""
        return steps * (self.step or 1.0)


def clock(meta: Mapping[str, Any], jobset: int | None = None) -> Clock:
    """The :class:`Clock` of ``jobset`` of a JobSet with metadata ``meta`` (its JSON form, as
    results keep it under ``meta["jobset"]``).

    Parameters
    ----------
    meta
        JobSet metadata (``time_step_seconds``, ``arrival_window``, ``provenance``).
    jobset
        The jobset; None for a JobSet of one jobset.
    """
    step = meta.get("time_step_seconds")
    step = float(step) if step else None
    provenance = meta.get("provenance") or {}
    swf = provenance.get("swf") or {}
    unix = swf.get("unix_start_time")
    if step is None or not isinstance(unix, int | float):
        return Clock(step=step)
    options = provenance.get("options") or {}
    if options.get("jobset_size") is not None or options.get("windows") is not None:
        return Clock(step=step)
    own = 0.0
    window = meta.get("arrival_window")
    if options.get("jobset_window") is not None and window:
        own = float(jobset or 0) * float(window) * step
    first = float(provenance.get("trace_start_s") or 0.0) + float(options.get("start") or 0.0)
    zone = swf.get("time_zone_string")
    return Clock(
        step=step, origin=float(unix) + first + own, zone=zone if isinstance(zone, str) else None
    )
