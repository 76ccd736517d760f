"""What a user asks of a trace load: :class:`TraceOptions` (light: no polars, for the CLI).

Its fields are the options of ``schedlab load`` (type, bounds, default and help derived by
:func:`~schedlab.cli.config_options.config_options`) and the ``options`` of a spec's trace workload
(checked by :func:`~schedlab.param_checks.check_params`); :mod:`~schedlab.loaders.traces.transform`
applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from schedlab.params import Interval

_POSITIVE = Interval(gt=0)
_AT_LEAST_ONE = Interval(ge=1)


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceOptions:
    """What a user asks of a trace load; every field is recorded in the provenance."""

    time_step: Annotated[float, _POSITIVE] = 1.0
    """Seconds per simulation step."""
    start: float | None = None
    """Keep rows arriving at or after this many seconds since the trace's first arrival."""
    end: float | None = None
    """Keep rows arriving before this many seconds since the trace's first arrival."""
    machines: Annotated[int, _AT_LEAST_ONE] | None = None
    """Machines of the trace's machine size to replay on; default (None): the trace's own
    cluster (the count the loader knows, e.g. about 4,000 for Alibaba v2018; one machine for an
    SWF log, whose parallel jobs span nodes). A job must fit on one machine."""
    slots_per_machine: Annotated[float, _POSITIVE] | None = None
    """Rescale each machine to this many units per resource (DeepRM-style: 10); default (None):
    the trace's native units."""
    sample: Annotated[int, _AT_LEAST_ONE] | None = None
    """Keep a uniform random sample of this many jobs (after the steps above)."""
    seed: Annotated[int, Interval(ge=0)] = 0
    """Seed of the sample (--sample) and of the windows' start points (--windows)."""
    jobset_window: Annotated[float, _POSITIVE] | None = None
    """Split into jobsets of this many seconds each (arrivals relative to the window start)."""
    jobset_size: Annotated[int, _AT_LEAST_ONE] | None = None
    """Split into jobsets of this many consecutive jobs (arrivals relative to the first)."""
    windows: Annotated[int, _AT_LEAST_ONE] | None = None
    """With ``jobset_size`` K: instead of cutting the whole trace, take this many windows of K
    consecutive jobs starting at distinct seeded positions (``seed``), one jobset each, in
    trace order (the sampling protocol of HPC scheduling papers; windows may overlap)."""
    strict: bool = False
    """Raise on the first malformed row (naming file and line) instead of counting it."""
    max_decompressed: Annotated[int, Interval(ge=0)] | None = None
    """Largest size in bytes a compressed file may expand to (0: no limit); default
    ``$SCHEDLAB_MAX_DECOMPRESSED``, else 100 times the file's size or 256 MiB, whichever is
    more (:mod:`schedlab.loaders.traces.archive`)."""

    def __post_init__(self) -> None:
        positive = {
            "time_step (--time-step, seconds)": self.time_step,
            "slots_per_machine (--slots-per-machine)": self.slots_per_machine,
            "jobset_window (--jobset-window, seconds)": self.jobset_window,
        }
        for name, value in positive.items():
            if value is not None and not (math.isfinite(value) and value > 0):
                msg = f"{name} must be a finite number > 0, got {value!r}"
                raise ValueError(msg)
        if self.machines is not None and not (math.isfinite(self.machines) and self.machines >= 1):
            msg = f"machines (--machines) must be >= 1, got {self.machines!r}"
            raise ValueError(msg)
        at_least_one = {
            "sample (--sample)": self.sample,
            "jobset_size (--jobset-size)": self.jobset_size,
            "windows (--windows)": self.windows,
        }
        for name, value in at_least_one.items():
            if value is not None and not (isinstance(value, int) and value >= 1):
                msg = f"{name} must be an integer >= 1, got {value!r}"
                raise ValueError(msg)
        for name, value in {"start (--start)": self.start, "end (--end)": self.end}.items():
            if value is not None and not math.isfinite(value):
                msg = f"{name} must be a finite number of seconds, got {value!r}"
                raise ValueError(msg)
        if self.jobset_window is not None and self.jobset_size is not None:
            msg = "give jobset_window (--jobset-window) or jobset_size (--jobset-size), not both"
            raise ValueError(msg)
        if self.windows is not None and self.jobset_size is None:
            msg = "windows (--windows) needs jobset_size (--jobset-size): the jobs per window"
            raise ValueError(msg)
        if not (isinstance(self.seed, int) and self.seed >= 0):
            msg = f"seed (--seed) must be an integer >= 0, got {self.seed!r}"
            raise ValueError(msg)
        if self.max_decompressed is not None and self.max_decompressed < 0:
            msg = f"max_decompressed must be >= 0 bytes (0: no limit), got {self.max_decompressed}"
            raise ValueError(msg)
