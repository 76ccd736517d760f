"""The ``fitted`` generator: synthetic jobsets from a workload model fitted to a trace.

``schedlab fit jobs.parquet -o fit/`` writes ``fit/model.json``
(:class:`~schedlab.loaders.workload.model.WorkloadModel`); then::

    schedlab generate fitted --model fit/model.json --load 0.9 --jobsets 100 --seed 3 \
        -o jobs.parquet

or ``schedlab.generators.make("fitted", model="fit/model.json").generate(0.9, ...)``.

Workload
--------
* Arrivals over ``window`` steps (default: the model's): Poisson events, homogeneous or with the
  fitted daily rate profile (drawn by thinning; each jobset starts at a uniformly random time
  of day unless ``phase`` is given), each event a batch of jobs when the model has batches;
  each jobset's rate is multiplied by a draw from the trace's window-to-window rate variation
  (mean 1; ``modulate=False`` turns it off).
* Durations: the fitted family, truncated at the longest duration seen, quantised to
  ``max(1, ceil(x))`` steps like the trace loaders do.
* Demands: the trace's empirical joint demand vectors, drawn within the duration class of each
  job's duration.

Load
----
Offered load = rate · E[duration · demand_r] / capacity_r (maximum over resources), with the
expectation taken over the model's generated durations and their class's demands
(:meth:`~schedlab.loaders.workload.model.WorkloadModel.load_per_rate`); the generator draws
``rate = load / load_per_rate`` jobs per step on average.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, ClassVar

import numpy as np

from schedlab.io import sha256
from schedlab.jobset import JobSet
from schedlab.loaders.generators.base import Sample, SyntheticGenerator
from schedlab.loaders.workload.model import WorkloadModel
from schedlab.params import Interval


@functools.lru_cache(maxsize=8)
def _read(path: str, stamp: tuple[int, ...]) -> tuple[WorkloadModel, str]:
    """The model at ``path`` and its file's SHA-256 (cached by path and the file's identity:
    inode, size, mtime and ctime, which changes with every write)."""
    model = WorkloadModel.load(path)
    return model, sha256(path)


def read_model(path: str | os.PathLike[str]) -> tuple[WorkloadModel, str]:
    """Load and validate ``model.json`` (memoised); also return its SHA-256."""
    p = Path(path)
    if not p.is_file():
        return _read(str(p), ())  # raises the model loader's "no such file" error
    st = p.stat()
    return _read(str(p.resolve()), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


@dataclass(frozen=True, kw_only=True, slots=True)
class FittedGenerator(SyntheticGenerator):
    """Generate jobsets from a fitted workload model (``model.json``) at a target load."""

    name: ClassVar[str] = "fitted"

    model: str
    """Path of the ``model.json`` written by ``schedlab fit``."""
    window: Annotated[int | None, Interval(ge=1)] = None
    """Arrival window of a jobset in steps (default: the model's ``window``)."""
    phase: float | None = None
    """Start of every jobset in steps after the start of the daily period (default: uniformly
    random per jobset); only matters for a model with a daily rate profile."""
    modulate: bool = True
    """Give each jobset a rate multiplier drawn from the trace's window-to-window variation
    (mean 1: the target load is the mean over jobsets); False: every jobset at the same rate."""

    def _model(self) -> WorkloadModel:
        return read_model(self.model)[0]

    def resources(self) -> tuple[str, ...]:
        """The model's resources."""
        return self._model().resources

    def capacity(self) -> tuple[float, ...]:
        """The model's capacity per resource."""
        return self._model().capacity

    def arrival_window(self) -> int:
        """``window``, else the model's default window (steps)."""
        if self.window is not None:
            if self.window < 1:
                msg = f"window must be >= 1 step, got {self.window}"
                raise ValueError(msg)
            return int(self.window)
        return self._model().window

    def length_buckets(self) -> dict[str, tuple[int, int]]:
        """Duration terciles of the model: short, medium, long (steps, inclusive)."""
        values, probs = self._model().durations.pmf()
        cdf = np.cumsum(probs)
        top = int(self._model().durations.max_steps)
        q1, q2 = (
            int(np.ceil(values[min(int(np.searchsorted(cdf, q)), values.size - 1)]))
            for q in (1 / 3, 2 / 3)
        )
        ranges = {"short": (1, q1), "medium": (q1 + 1, q2), "long": (q2 + 1, top)}
        return {k: v for k, v in ranges.items() if v[0] <= v[1]}

    def load_per_rate(self) -> float:
        """Offered load of one job per step (see the module docstring)."""
        return self._model().load_per_rate()

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Arrivals by thinning, then durations, then demands within each duration's class."""
        model = self._model()
        jobset, arrival = model.arrivals.sample(
            rng, rate, n_jobsets, self.arrival_window(), self.phase, self.modulate
        )
        duration = model.durations.sample(rng, jobset.size)
        demand = model.demands.sample(rng, duration)
        return Sample(jobset, arrival, duration, demand)

    def generate_sweep(self, loads: list[float], *, n_jobsets: int, seed: int) -> JobSet:
        """As the base class; the metadata also gets the model's units, seconds per step and the
        model file's SHA-256 (so equal provenance means equal jobsets)."""
        js = SyntheticGenerator.generate_sweep(self, loads, n_jobsets=n_jobsets, seed=seed)
        model, digest = read_model(self.model)
        meta = replace(
            js.meta,
            units=model.units or js.meta.units,
            time_step_seconds=model.time_step_seconds,
            provenance={
                **js.meta.provenance,
                "model_sha256": digest,
                "model_source": dict(model.source),
            },
        )
        return JobSet(js.jobs, meta)
