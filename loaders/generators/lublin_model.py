"""The Lublin–Feitelson workload model: its published parameters and their closed-form moments.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", Journal of Parallel and Distributed Computing 63(11), 2003. The
values below are those of the authors' reference implementation ``m_lublin99.c`` (Parallel
Workloads Archive), fitted for a machine of 128 processors; :mod:`.lublin` samples from them.

One class of jobs (:class:`JobClass`: batch, interactive, or the whole sample) is:

* **size** (processors): 1 with probability ``serial_prob``; otherwise ``U`` is drawn from a
  two-stage uniform on log2(size) (``[ulow, umed]`` with probability ``uprob``, else
  ``[umed, uhi]``); with probability ``pow2_prob`` (of all jobs) ``U`` is rounded to an integer,
  and the size is ``round(2**U)``. Sizes are at most the machine's (``uhi <= log2 P``).
* **runtime** (seconds): ``ln(runtime)`` is hyper-gamma, ``Gamma(a1, b1)`` with probability
  ``p = pa · size + pb`` (clipped to [0, 1]) else ``Gamma(a2, b2)`` (shape, scale), redrawn above
  :data:`RUNTIME_CAP`; ``pa < 0`` makes large jobs run longer. The runtime is ``floor(e**H)``.
* **arrivals**: ``ln(inter-arrival seconds)`` is ``Gamma(aarr · arar, barr)``, redrawn above
  :data:`ARRIVAL_CAP`, counted in an *operational* clock that runs ``w_k`` times faster than the
  wall clock in half-hour ``k`` of the day (from ``k/2`` hours after midnight): the daily
  cycle. ``w_k`` is the mass of ``Gamma(anum, bnum)`` on ``[i − 1/2, i + 1/2)`` half-hours with
  ``i ≡ k + 1 (mod 48)`` and ``CYCLE_START <= i < CYCLE_START + 48``, i.e. the gamma's day
  begins at 05:00; ``w`` is normalised to mean 1, so a whole day keeps the mean rate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields

import numpy as np
from scipy import special, stats

RUNTIME_CAP = 12.0
"""Largest ln(runtime in seconds), e**12 s ≈ 45 h; larger draws are redrawn."""
ARRIVAL_CAP = 13.0
"""Largest ln(inter-arrival time in seconds), e**13 s ≈ 5.1 days; larger draws are redrawn."""
BUCKETS = 48
"""Buckets (half-hours) of the daily cycle."""
BUCKET_SECONDS = 1800
"""Seconds per bucket."""
DAY_SECONDS = BUCKETS * BUCKET_SECONDS
"""Seconds per day."""
CYCLE_START = 11
"""First half-hour point of the cycle's gamma (module docstring): its day begins at 05:00."""


@dataclass(frozen=True, slots=True)
class JobClass:
    """The parameters of one class of jobs (module docstring); gamma laws are (shape, scale)."""

    name: str
    """Class name, written to the jobs' ``category`` column."""
    serial_prob: float
    """Probability that a job is serial (1 processor)."""
    pow2_prob: float
    """Probability that a job is parallel with a power-of-two size (a fraction of all jobs)."""
    ulow: float
    """Lower end of log2(size) of the parallel jobs, log2 processors."""
    umed_below: float
    """``uhi − umed``: where the two uniform stages meet, below the upper end (log2 processors)."""
    uhi_below: float
    """``log2(P) − uhi``: the largest log2(size) below the machine's P processors."""
    uprob: float
    """Probability of the first stage, ``[ulow, umed]``."""
    a1: float
    """Shape of the first gamma of ln(runtime)."""
    b1: float
    """Scale of the first gamma of ln(runtime), ln seconds."""
    a2: float
    """Shape of the second gamma of ln(runtime)."""
    b2: float
    """Scale of the second gamma of ln(runtime), ln seconds."""
    pa: float
    """Slope of the first gamma's probability ``p = pa · size + pb``, per processor."""
    pb: float
    """Intercept of ``p``."""
    aarr: float
    """Shape of the gamma of ln(inter-arrival time) at rush hours."""
    barr: float
    """Scale of the gamma of ln(inter-arrival time), ln seconds."""
    arar: float
    """Rush-hour-to-all-day ratio: the shape drawn from is ``aarr · arar``."""
    anum: float
    """Shape of the gamma that spreads arrivals over the day."""
    bnum: float
    """Scale of the gamma that spreads arrivals over the day, half-hours."""

    def __post_init__(self) -> None:
        probs = (self.serial_prob, self.pow2_prob, self.uprob, self.serial_prob + self.pow2_prob)
        shapes = (self.a1, self.a2, self.aarr, self.arar, self.anum, self.bnum)
        if not all(0 <= p <= 1 for p in probs) or not all(x > 0 for x in shapes):
            msg = f"{self.name}: probabilities (and serial + pow2) must be in [0, 1], shapes > 0"
            raise ValueError(msg)
        if not all(0 < b < 1 for b in (self.b1, self.b2, self.barr)):  # E[e**G] needs b < 1
            msg = f"{self.name}: gamma scales b1, b2, barr must be in (0, 1) ln seconds"
            raise ValueError(msg)
        if self.ulow < 0 or self.umed_below < 0 or self.uhi_below < 0:
            msg = f"{self.name}: ulow, umed_below and uhi_below must be >= 0 (log2 processors)"
            raise ValueError(msg)


# fmt: off
BATCH = JobClass(
    name="batch", serial_prob=0.2927, pow2_prob=0.6686,
    ulow=1.2, umed_below=2.0, uhi_below=0.0, uprob=0.875,
    a1=6.57, b1=0.823, a2=639.1, b2=0.0156, pa=-0.003, pb=0.6986,
    aarr=6.0415, barr=0.8531, arar=1.0519, anum=6.1271, bnum=5.2740,
)
"""Batch jobs (``*_BATCH`` of ``m_lublin99.c``: UHI 7, UMED 5 for 128 processors)."""
INTERACTIVE = JobClass(
    name="interactive", serial_prob=0.1541, pow2_prob=0.625,
    ulow=1.0, umed_below=2.5, uhi_below=1.5, uprob=0.705,
    a1=3.8351, b1=0.6605, a2=7.073, b2=0.6856, pa=-0.0118, pb=0.9156,
    aarr=6.5510, barr=0.6621, arar=0.9797, anum=8.9186, bnum=3.6680,
)
"""Interactive jobs (``*_ACTIVE``: UHI 5.5, i.e. at most 45 of 128 processors, UMED 3)."""
COMBINED = JobClass(
    name="combined", serial_prob=0.244, pow2_prob=0.576,
    ulow=0.8, umed_below=2.5, uhi_below=0.0, uprob=0.86,
    a1=4.2, b1=0.94, a2=312.0, b2=0.03, pa=-0.0054, pb=0.78,
    aarr=10.2303, barr=0.4871, arar=1.0225, anum=8.1737, bnum=3.9631,
)
"""The whole sample as one class (the typeless parameters: UHI 7, UMED 4.5)."""
# fmt: on

CLASSES = {"batch": BATCH, "interactive": INTERACTIVE, "combined": COMBINED}
"""The published classes by name."""


def table() -> list[dict[str, float | str]]:
    """Every parameter of every published class (rows: parameter; columns: class names)."""
    classes = list(CLASSES.values())
    return [
        {"parameter": f.name, **{c.name: getattr(c, f.name) for c in classes}}
        for f in fields(JobClass)
        if f.name != "name"
    ]


# -- sizes -----------------------------------------------------------------------------------------


def log2_size_range(job: JobClass, processors: int) -> tuple[float, float, float]:
    """``(ulow, umed, uhi)`` for a machine of ``processors``: ``uhi = log2 P − uhi_below``,
    ``umed = uhi − umed_below``, each clipped into ``[ulow, ...]`` for small machines."""
    uhi = max(math.log2(processors) - job.uhi_below, job.ulow)
    umed = min(max(uhi - job.umed_below, job.ulow), uhi)
    return job.ulow, umed, uhi


def _stage_cdf(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if hi <= lo:
        return (x >= lo).astype(np.float64)
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


def log2_size_cdf(job: JobClass, processors: int, x: np.ndarray) -> np.ndarray:
    """CDF of the two-stage uniform log2(size) ``U`` of parallel jobs at ``x`` (same shape)."""
    lo, med, hi = log2_size_range(job, processors)
    x = np.asarray(x, dtype=np.float64)
    return job.uprob * _stage_cdf(x, lo, med) + (1 - job.uprob) * _stage_cdf(x, med, hi)


def largest_power(processors: int) -> int:
    """The largest power-of-two exponent ``k`` with ``2**k <= processors``."""
    return int(processors).bit_length() - 1


def size_pmf(job: JobClass, processors: int) -> np.ndarray:
    """Probability of each size (float, shape ``(P + 1,)``, index = processors; ``[0] = 0``).

    Power-of-two jobs take ``2**round(U)``, at most the machine's largest power of two; the
    others ``round(2**U)``, which is ``n`` when ``log2(n − 1/2) <= U < log2(n + 1/2)``.
    """
    n = np.arange(processors + 1, dtype=np.float64)
    pmf = np.zeros(processors + 1)
    pmf[1] = job.serial_prob
    k = np.arange(largest_power(processors) + 1)
    pow2 = np.diff(log2_size_cdf(job, processors, np.append(k - 0.5, np.inf)))
    np.add.at(pmf, 2**k, job.pow2_prob * pow2)
    edges = np.log2(np.maximum(n[1:] - 0.5, 0.5))
    other = np.diff(log2_size_cdf(job, processors, np.append(edges, np.log2(processors + 0.5))))
    pmf[1:] += (1 - job.serial_prob - job.pow2_prob) * other
    return pmf


# -- means of e**G for G ~ Gamma(a, b) truncated at a cap ----------------------------------------


def _exp_mass(a: float, b: float, cap: float) -> float:
    """``E[e**G; G <= cap]`` for ``G ~ Gamma(a, b)``, ``b < 1``: ``(1 − b)**−a`` times the CDF at
    ``cap`` of ``Gamma(a, b / (1 − b))`` (the gamma tilted by ``e**g``)."""
    return float((1 - b) ** -a * special.gammainc(a, cap * (1 - b) / b))


def capped_exp_mean(a: float, b: float, cap: float) -> float:
    """``E[e**G | G <= cap]`` for ``G ~ Gamma(a, b)`` with scale ``b < 1``."""
    return _exp_mass(a, b, cap) / float(special.gammainc(a, cap / b))


def arrival_shape(job: JobClass, aarr_factor: float = 1.0) -> float:
    """Shape of ln(inter-arrival time): ``aarr · arar · aarr_factor``."""
    return job.aarr * job.arar * aarr_factor


def mean_interval(job: JobClass, aarr_factor: float = 1.0) -> float:
    """Mean inter-arrival time in the operational clock, seconds (``E[e**G | G <= 13]``)."""
    return capped_exp_mean(arrival_shape(job, aarr_factor), job.barr, ARRIVAL_CAP)


@functools.cache
def _floor_exp_masses(a: float, b: float, cap: float) -> tuple[float, float]:
    """``(E[floor(e**G); G <= cap], P(G <= cap))``: ``floor(x) = Σ_k≥1 [x >= k]``."""
    top = float(special.gammainc(a, cap / b))
    k = np.arange(1, math.floor(math.exp(cap)) + 1, dtype=np.float64)
    return float(np.sum(top - special.gammainc(a, np.log(k) / b))), top


def mean_runtime(job: JobClass, sizes: np.ndarray) -> np.ndarray:
    """Expected runtime ``E[floor(e**H)]`` in seconds of jobs of ``sizes`` (same shape)."""
    p = np.clip(job.pa * np.asarray(sizes, dtype=np.float64) + job.pb, 0.0, 1.0)
    m1, f1 = _floor_exp_masses(job.a1, job.b1, RUNTIME_CAP)
    m2, f2 = _floor_exp_masses(job.a2, job.b2, RUNTIME_CAP)
    return (p * m1 + (1 - p) * m2) / (p * f1 + (1 - p) * f2)


@functools.cache
def mean_work(job: JobClass, processors: int) -> float:
    """Expected work of a job, ``E[size · runtime]``, processor-seconds."""
    pmf = size_pmf(job, processors)
    sizes = np.arange(processors + 1, dtype=np.float64)
    return float(np.sum(pmf * sizes * mean_runtime(job, sizes)))


# -- the daily cycle -------------------------------------------------------------------------------


@functools.cache
def daily_weights(job: JobClass) -> np.ndarray:
    """Relative arrival rate in each half-hour of the day (float, shape ``(48,)``, mean 1)."""
    i = np.arange(CYCLE_START, CYCLE_START + BUCKETS, dtype=np.float64)
    cdf = stats.gamma.cdf(np.append(i - 0.5, i[-1] + 0.5), job.anum, scale=job.bnum)
    w = np.empty(BUCKETS)
    w[(i.astype(np.int64) - 1) % BUCKETS] = np.diff(cdf)
    w /= w.mean()
    w.flags.writeable = False
    return w


def _clock(job: JobClass) -> tuple[np.ndarray, np.ndarray]:
    """Wall-clock and operational seconds at the bucket edges of one day (shape ``(49,)``)."""
    wall = np.arange(BUCKETS + 1, dtype=np.float64) * BUCKET_SECONDS
    return wall, np.append(0.0, np.cumsum(daily_weights(job)) * BUCKET_SECONDS)


def operational_time(job: JobClass, t: np.ndarray | float) -> np.ndarray:
    """Operational seconds at wall-clock seconds ``t`` after midnight (same shape)."""
    wall, op = _clock(job)
    days, rest = np.divmod(np.asarray(t, dtype=np.float64), DAY_SECONDS)
    return days * DAY_SECONDS + np.interp(rest, wall, op)


def wall_time(job: JobClass, tau: np.ndarray | float) -> np.ndarray:
    """Inverse of :func:`operational_time`: wall-clock seconds after midnight (same shape)."""
    wall, op = _clock(job)
    days, rest = np.divmod(np.asarray(tau, dtype=np.float64), DAY_SECONDS)
    return days * DAY_SECONDS + np.interp(rest, op, wall)
