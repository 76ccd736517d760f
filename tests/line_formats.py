"""The line-oriented trace formats as the loader tests use them: SWF (Parallel Workloads Archive)
and Alibaba cluster-trace-v2017 ``batch_task``. Per format: its reader, its committed small fixture
and the line the fixture drops for each reason, one good line, and what a written file starts with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.loaders.traces.alibaba2017 import read_alibaba2017
from schedlab.loaders.traces.swf import read_swf

DATA = Path(__file__).resolve().parent / "data"

READ: dict[str, Callable[..., Any]] = {"swf": read_swf, "alibaba2017": read_alibaba2017}
SMALL = {"swf": DATA / "swf_small.swf", "alibaba2017": DATA / "alibaba2017_small.csv"}
"""The committed fixtures, one line per case."""

SMALL_DROP_LINES: dict[str, dict[str, int]] = {
    "swf": dict(
        unknown_run_time=13,
        exceeds_capacity=15,
        partial_execution=16,
        negative_duration=17,
        wrong_field_count=18,
        not_a_number=19,
        unknown_procs=20,
    ),
    "alibaba2017": {
        "status_Failed": 3,
        "status_Waiting": 4,
        "status_Running": 5,
        "negative_duration": 6,
        "missing_value": 7,
        "wrong_field_count": 8,
        "not_a_number": 9,
        "exceeds_capacity": 10,
        "invalid_status": 11,
        "negative_demand": 12,
    },
}
"""Per format: the fixture's dropped lines, one for each reason."""

GOOD = {
    "swf": "1 0 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n",
    "alibaba2017": "100,160,1,1,3,Terminated,50,0.01\n",
}
"""One valid data line of each format."""

HEADER = {"swf": "; Version: 2.2\n; MaxProcs: 8\n", "alibaba2017": ""}
"""What :func:`write` puts before the lines (SWF: a machine of 8 processors)."""

FILE = {"swf": "t.swf", "alibaba2017": "batch_task.csv"}


def write(fmt: str, folder: Path, *lines: str) -> Path:
    """``folder``'s file of ``fmt``: :data:`HEADER` then ``lines``."""
    path = folder / FILE[fmt]
    path.write_text(HEADER[fmt] + "".join(lines))
    return path


def data_line(fmt: str, k: int) -> int:
    """The file line (1-based) of the ``k``-th line :func:`write` was given."""
    return HEADER[fmt].count("\n") + k
