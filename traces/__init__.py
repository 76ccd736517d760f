"""Bundled trace samples (see ``traces/data/README.md``) and download helpers for full traces."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from schedlab.errors import UnknownNameError

SAMPLES = {
    "alibaba2018": ("alibaba2018_batch_task_dags.csv.gz", "alibaba2018"),
    "alibaba2017": ("alibaba2017_batch_task.csv.gz", "alibaba2017"),
    "kth-sp2": ("KTH-SP2-1996-2.swf.gz", "swf"),
}
"""Bundled sample name -> (its file in ``data/``, the loader that reads it): the one table a new
built-in loader adds its sample to (its conformance test and the docs' examples read it)."""
BUNDLED = {name: file for name, (file, _) in SAMPLES.items()}
"""Bundled sample name -> its file in ``data/``."""
DAY = 86_400.0
KTH_TRAIN_END = 230 * DAY
"""Seconds since the bundled KTH-SP2's first arrival before which its jobs are for training
(``schedlab/Pick-v0``'s default and ``schedlab train jobscore``'s)."""
KTH_VAL_END = 265 * DAY
"""End of its validation part (the shipped ``jobscore-kth`` was chosen on days 230-265); the
jobs from here on are the held-out test of ``experiments/jobscore_kth.toml``."""


def sample_for(loader: str) -> str | None:
    """The name of the bundled sample ``loader`` reads (None: none is bundled)."""
    return next((name for name, (_, reads) in SAMPLES.items() if reads == loader), None)


def bundled(name: str) -> Path:
    """Path of a bundled sample: ``alibaba2018``, ``alibaba2017`` or ``kth-sp2``."""
    if name not in BUNDLED:
        msg = f"no bundled sample {name!r}; known: {', '.join(BUNDLED)}"
        raise UnknownNameError(msg)
    return Path(str(files("schedlab.traces") / "data" / BUNDLED[name]))
