"""The Lublin–Feitelson model of rigid parallel jobs (Lublin & Feitelson 2003) as a generator.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", JPDC 63(11), 2003: the synthetic HPC workload RLScheduler (Zhang
et al., SC'20) trains on. The model and its published parameters are in :mod:`.lublin_model`.

Workload
--------
* One resource, ``procs``, of ``processors`` (default 128, the model's machine); time in steps of
  one second (``time_step_seconds = 1``), as the SWF loader writes traces.
* Jobs of the classes ``job_classes`` (batch and interactive by default, as the reference code
  draws them: two independent arrival streams, each with its own parameters, merged), each
  job's class in the ``category`` column.
* A jobset is ``window`` seconds (default one week) cut from the stationary arrival streams:
  the first arrival of each stream is its forward recurrence time, and the window starts at
  ``start_hour`` (default: a uniformly random time of day per jobset). The arrivals are bursty
  (the gaps' coefficient of variation is 6 to 10), so one day's load varies widely: the pooled
  load of 200 one-day jobsets has a relative standard deviation of 7%, of 200 weeks 3%.
* User estimates by the ``estimate`` model (:mod:`.estimates`; ``modal`` values in seconds).

Load
----
Offered load = Σ over classes of (arrivals per second · E[size · runtime]) / processors, each
factor in closed form (:func:`~.lublin_model.mean_interval`, :func:`~.lublin_model.mean_work`),
so a target load is met analytically by one of two knobs (``load_knob``):

* ``aarr`` (default), the model's own: the shape ``aarr · arar`` of every class's
  ln(inter-arrival time) gamma is multiplied by one factor (found by root finding), as the
  reference code's ``ARAR`` ratio does. Lower factors mean shorter gaps and more arrivals; the
  classes' shares and the gaps' dispersion change with the load.
* ``time``: every inter-arrival time is multiplied by one factor; the arrival process keeps its
  shape and the classes their shares (load is linear in the rate).

With the published parameters the unscaled model (factor 1) offers 0.40 on 128 processors for
batch + interactive jobs (164 jobs a day) and 0.72 for the combined class (95 a day).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Annotated, ClassVar, Literal

import numpy as np
import polars as pl
from scipy import optimize, special

from schedlab.jobset import JobSet
from schedlab.loaders.generators.base import Sample, SyntheticGenerator
from schedlab.loaders.generators.lublin_model import (
    ARRIVAL_CAP,
    BATCH,
    COMBINED,
    DAY_SECONDS,
    INTERACTIVE,
    RUNTIME_CAP,
    JobClass,
    arrival_shape,
    largest_power,
    log2_size_range,
    mean_interval,
    mean_work,
    operational_time,
    wall_time,
)
from schedlab.params import Interval

JOB_CLASSES: dict[str, tuple[JobClass, ...]] = {
    "batch+interactive": (BATCH, INTERACTIVE),
    "batch": (BATCH,),
    "interactive": (INTERACTIVE,),
    "combined": (COMBINED,),
}
"""The classes each ``job_classes`` value draws."""
MAX_RUNTIME = math.floor(math.exp(RUNTIME_CAP))
"""The longest runtime, 162,754 seconds."""
AARR_FACTORS = (1e-3, 10.0)
"""Range searched for the ``aarr`` knob's factor."""


def capped_gamma(
    rng: np.random.Generator, a: float, b: float, cap: float, size: int | tuple[int, ...]
) -> np.ndarray:
    """``Gamma(a, b)`` draws conditioned on ``<= cap`` (float, shape ``size``): redrawn above the
    cap as the reference code does, or by inverse CDF where fewer than half would be kept."""
    kept = float(special.gammainc(a, cap / b))
    if kept < 0.5:
        return b * special.gammaincinv(a, kept * rng.random(size))
    g = rng.gamma(a, b, size)
    bad = np.flatnonzero(g > cap)
    while bad.size:
        g.flat[bad] = rng.gamma(a, b, bad.size)
        bad = bad[g.flat[bad] > cap]
    return g


def _first_arrivals(rng: np.random.Generator, a: float, b: float, n: int) -> np.ndarray:
    """Forward recurrence times of the renewal process of gaps ``e**G`` (``G ~ Gamma(a, b)``
    capped), shape ``(n,)``: ``U · e**G*`` with ``G*`` the length-biased ``G``, whose law (density
    ``∝ e**g f(g)``) is ``Gamma(a, b / (1 − b))`` capped."""
    return rng.random(n) * np.exp(capped_gamma(rng, a, b / (1 - b), ARRIVAL_CAP, n))


def draw_sizes(rng: np.random.Generator, job: JobClass, processors: int, n: int) -> np.ndarray:
    """Processors of ``n`` jobs of ``job`` on a machine of ``processors`` (int64, ``(n,)``)."""
    lo, med, hi = log2_size_range(job, processors)
    u = rng.random(n)
    first = rng.random(n) <= job.uprob
    start, end = np.where(first, lo, med), np.where(first, med, hi)
    log2_size = start + rng.random(n) * (end - start)
    pow2 = np.minimum(np.floor(log2_size + 0.5), largest_power(processors))
    size = np.where(u <= job.serial_prob + job.pow2_prob, 2.0**pow2, np.floor(2.0**log2_size + 0.5))
    return np.where(u <= job.serial_prob, 1, size).astype(np.int64)


def draw_runtimes(rng: np.random.Generator, job: JobClass, sizes: np.ndarray) -> np.ndarray:
    """Runtimes in seconds of jobs of ``sizes`` (int64 >= 1, same shape): ``floor(e**H)``, ``H``
    the hyper-gamma, redrawn (both the branch and the value) above the cap."""
    p = np.clip(job.pa * sizes + job.pb, 0.0, 1.0)
    h = np.full(sizes.shape, np.inf)
    todo = np.arange(sizes.size)
    while todo.size:
        first = rng.random(todo.size) <= p[todo]
        h[todo] = np.where(
            first, rng.gamma(job.a1, job.b1, todo.size), rng.gamma(job.a2, job.b2, todo.size)
        )
        todo = todo[h[todo] > RUNTIME_CAP]
    return np.maximum(np.floor(np.exp(h)), 1).astype(np.int64)


@dataclass(frozen=True, kw_only=True, slots=True)
class LublinGenerator(SyntheticGenerator):
    """Generate jobsets of the Lublin–Feitelson model at a target offered load."""

    name: ClassVar[str] = "lublin"

    processors: Annotated[int, Interval(ge=8)] = 128
    """Processors of the machine P; the largest job sizes scale with log2(P) (128 in the paper)."""
    job_classes: Literal["batch+interactive", "batch", "interactive", "combined"] = (
        "batch+interactive"
    )
    """Classes drawn: batch and interactive streams (the reference code's default), one of them,
    or ``combined``, the whole sample's parameters."""
    window: Annotated[int, Interval(ge=1)] = 7 * DAY_SECONDS
    """Seconds during which a jobset's jobs arrive (its offered load's span); one week."""
    start_hour: Annotated[float | None, Interval(ge=0, lt=24)] = None
    """Hour of the day (0 = midnight) at which every jobset starts; None: uniformly random."""
    load_knob: Literal["aarr", "time"] = "aarr"
    """How a load sets the arrival rate: ``aarr`` scales the shape of ln(inter-arrival time), the
    model's knob; ``time`` scales every inter-arrival time."""
    step_seconds: Annotated[float, Interval(gt=0)] = field(default=1.0, init=False)
    """Seconds per step: 1 (fixed; the ``modal`` estimates' values are in seconds)."""

    def __post_init__(self) -> None:
        if isinstance(self.processors, bool) or not self.processors >= 8:
            msg = f"lublin: processors must be an int >= 8, got {self.processors!r}"
            raise ValueError(msg)
        if not self.window >= 1:
            msg = f"lublin: window must be >= 1 second, got {self.window!r}"
            raise ValueError(msg)
        if self.start_hour is not None and not 0 <= self.start_hour < 24:
            msg = f"lublin: start_hour must be in [0, 24) hours, got {self.start_hour!r}"
            raise ValueError(msg)
        if self.job_classes not in JOB_CLASSES or self.load_knob not in ("aarr", "time"):
            msg = (
                f"lublin: job_classes {self.job_classes!r} / load_knob {self.load_knob!r}: "
                f"expected one of {list(JOB_CLASSES)} / 'aarr', 'time'"
            )
            raise ValueError(msg)

    def classes(self) -> tuple[JobClass, ...]:
        """The job classes drawn (``job_classes``)."""
        return JOB_CLASSES[self.job_classes]

    def resources(self) -> tuple[str, ...]:
        """``procs``, as the SWF loader names it."""
        return ("procs",)

    def capacity(self) -> tuple[float, ...]:
        """``processors``."""
        return (float(self.processors),)

    def arrival_window(self) -> int:
        """The ``window`` parameter, seconds."""
        return int(self.window)

    def scratch_bytes(self) -> int:
        """A few numbers per jobset (its start and operational span per class): the sampler
        keeps no per-second row."""
        return 128

    def length_buckets(self) -> dict[str, tuple[int, int]]:
        """Runtimes up to 10 minutes, up to 2 hours, and longer (seconds)."""
        return {"short": (1, 600), "medium": (601, 7200), "long": (7201, MAX_RUNTIME)}

    # -- load and rate -------------------------------------------------------------------------
    def _spans(self) -> np.ndarray:
        """Expected operational seconds in a window per class (shape ``(classes,)``): the
        window itself for a random start (the daily weights average 1)."""
        if self.start_hour is None:
            return np.full(len(self.classes()), float(self.window))
        t0 = self.start_hour * 3600.0
        return np.array(
            [
                float(operational_time(c, t0 + self.window) - operational_time(c, t0))
                for c in self.classes()
            ]
        )

    def _rates(self, factor: float, scale: float) -> np.ndarray:
        """Mean arrivals per second of each class over a window, at an ``aarr`` factor and a
        time scale."""
        means = np.array([mean_interval(c, factor) for c in self.classes()])
        return self._spans() / (self.window * scale * means)

    def _load(self, factor: float, scale: float) -> float:
        work = np.array([mean_work(c, self.processors) for c in self.classes()])
        return float(np.sum(self._rates(factor, scale) * work)) / self.processors

    def _solve_factor(self, value: float, of: Literal["rate", "load"]) -> float:
        """The ``aarr`` factor whose rate (arrivals per second) or load is ``value``."""

        def gap(x: float) -> float:
            f = math.exp(x)
            got = self._load(f, 1.0) if of == "load" else float(np.sum(self._rates(f, 1.0)))
            return math.log(got / value)

        lo, hi = (math.log(f) for f in AARR_FACTORS)
        if not gap(hi) < 0 < gap(lo):
            reach = [self._load(f, 1.0) for f in reversed(AARR_FACTORS)]
            msg = (
                f"lublin: {of} {value:g} is beyond the aarr knob (offered loads "
                f"{reach[0]:.3g}..{reach[1]:.3g} with these parameters); use load_knob='time'"
            )
            raise ValueError(msg)
        return math.exp(optimize.brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12))

    def knob(self, rate: float) -> tuple[float, float]:
        """``(aarr factor, time scale)`` that give a mean of ``rate`` arrivals per second."""
        if not (rate > 0 and math.isfinite(rate)):
            msg = f"arrival rate must be > 0 jobs per second and finite, got {rate}"
            raise ValueError(msg)
        if self.load_knob == "aarr":
            return self._solve_factor(rate, "rate"), 1.0
        return 1.0, float(np.sum(self._rates(1.0, 1.0))) / rate

    def class_rates(self, rate: float) -> np.ndarray:
        """Mean arrivals per second of each class (shape ``(classes,)``) at a total ``rate``."""
        return self._rates(*self.knob(rate))

    def load_per_rate(self) -> float:
        """Offered load of one arrival per second at the unscaled class shares (with the
        ``aarr`` knob the shares, so this ratio, change with the rate: :meth:`load_for_rate`)."""
        return self._load(1.0, 1.0) / float(np.sum(self._rates(1.0, 1.0)))

    def rate_for_load(self, load: float) -> float:
        """Mean arrivals per second that offer ``load`` (closed form, or a root for ``aarr``)."""
        if not (load > 0 and math.isfinite(load)):
            msg = f"target load must be > 0 and finite, got {load}"
            raise ValueError(msg)
        if self.load_knob == "time":
            return load / self.load_per_rate()
        return float(np.sum(self._rates(self._solve_factor(load, "load"), 1.0)))

    def load_for_rate(self, rate: float) -> float:
        """Offered load of a mean of ``rate`` arrivals per second."""
        return self._load(*self.knob(rate))

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Arrivals of every class, then each class's sizes and runtimes; merged by arrival."""
        factor, scale = self.knob(rate)
        day_start = (
            rng.uniform(0.0, DAY_SECONDS, n_jobsets)
            if self.start_hour is None
            else np.full(n_jobsets, self.start_hour * 3600.0)
        )
        parts = []
        for k, job in enumerate(self.classes()):
            jobset, t = self._arrivals(rng, job, factor, scale, day_start)
            sizes = draw_sizes(rng, job, self.processors, t.size)
            runtime = draw_runtimes(rng, job, sizes)
            parts.append((jobset, t, sizes, runtime, np.full(t.size, k)))
        jobset, t, sizes, runtime, cls = (np.concatenate(x) for x in zip(*parts, strict=True))
        order = np.lexsort((t, jobset))
        arrival = np.clip(np.floor(t[order]), 0, self.window - 1).astype(np.int64)
        names = pl.Series("category", [c.name for c in self.classes()])
        return Sample(
            jobset[order],
            arrival,
            runtime[order],
            sizes[order, None].astype(np.float64),
            columns={"category": names.gather(cls[order])},
        )

    def _arrivals(
        self,
        rng: np.random.Generator,
        job: JobClass,
        factor: float,
        scale: float,
        day_start: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Jobsets and arrival times (float seconds after each jobset's start) of one class.

        A stationary renewal process in the class's operational clock (gaps ``scale · e**G``),
        drawn in blocks for the jobsets whose window is not yet covered, then mapped to the
        wall clock."""
        a, b = arrival_shape(job, factor), job.barr
        op0 = operational_time(job, day_start)
        span = operational_time(job, day_start + self.window) - op0
        block = max(16, math.ceil(2 * span.max() / (scale * mean_interval(job, factor))))
        last = scale * _first_arrivals(rng, a, b, day_start.size)
        ids, taus = [np.flatnonzero(last < span)], [last[last < span]]
        active = ids[0]
        while active.size:
            gaps = scale * np.exp(capped_gamma(rng, a, b, ARRIVAL_CAP, (active.size, block)))
            tau = last[active, None] + np.cumsum(gaps, axis=1)
            inside = tau < span[active, None]
            ids.append(np.broadcast_to(active[:, None], tau.shape)[inside])
            taus.append(tau[inside])
            last[active] = tau[:, -1]
            active = active[tau[:, -1] < span[active]]
        jobset, tau = np.concatenate(ids), np.concatenate(taus)
        return jobset, wall_time(job, op0[jobset] + tau) - day_start[jobset]

    def generate_sweep(self, loads: list[float], *, n_jobsets: int, seed: int) -> JobSet:
        """As the base class; the metadata also says processors and seconds, and the provenance
        the knob's ``aarr`` factor and time scale at each load."""
        js = SyntheticGenerator.generate_sweep(self, loads, n_jobsets=n_jobsets, seed=seed)
        knobs = [self.knob(self.rate_for_load(x)) for x in loads]
        meta = replace(
            js.meta,
            units=("processor",),
            time_step_seconds=1.0,
            provenance={
                **js.meta.provenance,
                "knob": [{"aarr_factor": f, "time_scale": s} for f, s in knobs],
            },
        )
        return JobSet(js.jobs, meta)
