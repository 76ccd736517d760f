"""Bundled trace samples (see ``traces/data/README.md``) and download helpers for full traces."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from schedlab.errors import UnknownNameError

BUNDLED = {
    "alibaba2018": "alibaba2018_batch_task_dags.csv.gz",
    "alibaba2017": "alibaba2017_batch_task.csv.gz",
    "kth-sp2": "KTH-SP2-1996-2.swf.gz",
}


def bundled(name: str) -> Path:
    """Path of a bundled sample: ``alibaba2018``, ``alibaba2017`` or ``kth-sp2``."""
    if name not in BUNDLED:
        msg = f"no bundled sample {name!r}; known: {', '.join(BUNDLED)}"
        raise UnknownNameError(msg)
    return Path(str(files("schedlab.traces") / "data" / BUNDLED[name]))
