"""Arrival process fits: homogeneous Poisson, daily-periodic Poisson (NHPP), batch arrivals.

All counts are per **time step** of the JobSet. Models (each fitted by maximum likelihood):

* ``poisson``: constant rate ``λ = N / T`` jobs per step over the observed ``T`` steps;
* ``nhpp``: rate ``λ_h`` per hour of the day (24 equal bins of the trace's clock modulo one day),
  ``λ_h = N_h / T_h`` with ``T_h`` the observed steps in hour ``h``; needs every hour observed
  (a trace of at least one day) and a known step length;
* ``poisson+batch`` / ``nhpp+batch``: compound Poisson — *batches* (the jobs arriving in one
  step) arrive as above at the rate of non-empty steps, and their sizes follow the empirical
  distribution of the jobs per non-empty step.

Models are compared by the log-likelihood of the per-step counts of a held-out later period
(per held-out job), so the batch and daily structure must predict the future, not just fit the
past. A compound-Poisson count probability is computed exactly by Panjer's recursion up to
:data:`PANJER_CAP` jobs in a step and approximated beyond by its one-batch term
``μ e^{-μ} f(c)``; for the held-out likelihood the batch-size distribution is smoothed with
weight 1 on a ``6 / (π² k²)`` base measure so that unseen sizes have a probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import special
from scipy import stats as sps

from schedlab.loaders.workload.components import ArrivalModel

DAY_SECONDS = 86_400.0
HOUR_BINS = 24
PANJER_CAP = 2000
MODELS = ("poisson", "nhpp", "poisson+batch", "nhpp+batch")


@dataclass(frozen=True, slots=True)
class Timeline:
    """Absolute arrival steps of the jobs and the observed time (steps)."""

    times: np.ndarray
    """int64 ``(n,)``: arrival step of every job on one absolute time axis."""
    segments: np.ndarray
    """int64 ``(k, 2)``: observed ``[start, end)`` intervals, sorted and disjoint."""
    step_seconds: float | None
    """Seconds per step (None: no clock, so no daily profile)."""
    origin_seconds: float | None
    """Clock time (seconds) of step 0, for the time of day (None: unknown)."""
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct arrival steps and the jobs arriving at each (computed once)."""
        if "counts" not in self._memo:
            self._memo["counts"] = np.unique(self.times, return_counts=True)
        counts: tuple[np.ndarray, np.ndarray] = self._memo["counts"]
        return counts

    @property
    def exposure(self) -> int:
        """Observed steps."""
        return int(np.sum(self.segments[:, 1] - self.segments[:, 0]))

    def has_clock(self) -> bool:
        """Whether times of day are known."""
        return self.step_seconds is not None and self.origin_seconds is not None

    def split_step(self, fraction: float) -> int:
        """Absolute step after the first ``fraction`` of the observed time."""
        lengths = self.segments[:, 1] - self.segments[:, 0]
        target = fraction * lengths.sum()
        cum = np.concatenate([[0], np.cumsum(lengths)])
        k = min(int(np.searchsorted(cum, target, side="right")) - 1, len(lengths) - 1)
        return int(self.segments[k, 0] + round(target - cum[k]))

    def clip(self, lo: int, hi: int) -> Timeline:
        """The part observed in ``[lo, hi)``."""
        seg = np.clip(self.segments, lo, hi)
        seg = seg[seg[:, 1] > seg[:, 0]]
        keep = (self.times >= lo) & (self.times < hi)
        return Timeline(self.times[keep], seg, self.step_seconds, self.origin_seconds)

    def hour_bin(self, steps: np.ndarray) -> np.ndarray:
        """Hour of the day (0..23) of the start of each step."""
        clock = float(self.origin_seconds or 0.0) + steps * float(self.step_seconds or 1.0)
        return (np.mod(clock, DAY_SECONDS) // (DAY_SECONDS / HOUR_BINS)).astype(np.int64)

    def hour_pieces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observed time cut at hour boundaries: day index, hour and length (steps) per piece."""
        step, hour = float(self.step_seconds or 1.0), DAY_SECONDS / HOUR_BINS
        starts, lengths = [], []
        for a, b in self.segments:
            s0 = float(self.origin_seconds or 0.0) + a * step
            s1 = s0 + (b - a) * step
            cuts = np.concatenate(
                [[s0], np.arange(math.floor(s0 / hour) + 1, math.ceil(s1 / hour)) * hour, [s1]]
            )
            starts.append(cuts[:-1])
            lengths.append(np.diff(cuts) / step)
        start, length = np.concatenate(starts), np.concatenate(lengths)
        day = np.floor(start / DAY_SECONDS).astype(np.int64)
        hours = (np.mod(start, DAY_SECONDS) // hour).astype(np.int64)
        return day, np.minimum(hours, HOUR_BINS - 1), length


def hour_exposure(tl: Timeline) -> np.ndarray:
    """Observed steps in each hour of the day, float64 ``(24,)``."""
    _, hours, length = tl.hour_pieces()
    return np.bincount(hours, weights=length, minlength=HOUR_BINS)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One fitted arrival model and what its likelihood needs."""

    name: str
    model: ArrivalModel
    n_params: int
    n_batches: int
    """Non-empty steps the batch sizes were estimated from (0 without batches)."""


def fit_candidate(name: str, tl: Timeline) -> Candidate | str:
    """Fit model ``name`` to ``tl``; a string says why it cannot be fitted."""
    n, exposure = tl.times.size, tl.exposure
    if n == 0 or exposure == 0:
        return "no arrivals observed"
    steps, counts = tl.counts()
    batched = name.endswith("+batch")
    events = np.ones_like(counts) if batched else counts
    sizes, freq = np.unique(counts, return_counts=True) if batched else (np.array([]), None)
    mean_batch = float(counts.mean()) if batched else 1.0
    batch_sizes: tuple[int, ...] = ()
    batch_probs: tuple[float, ...] = ()
    if batched:
        assert freq is not None
        batch_sizes = tuple(int(s) for s in sizes)
        batch_probs = tuple(float(f) for f in freq / freq.sum())
    k_batch = max(len(sizes) - 1, 0)
    if name.startswith("nhpp"):
        if not tl.has_clock():
            return "no clock: the jobsets are independent replicates or steps have no length"
        exp_h = hour_exposure(tl)
        if np.any(exp_h <= 0):
            hours = tl.exposure * float(tl.step_seconds or 1.0) / 3600
            return f"needs every hour of the day observed; {hours:.1f} h observed"
        rate_h = np.bincount(tl.hour_bin(steps), weights=events, minlength=HOUR_BINS) / exp_h
        rate_h = rate_h * mean_batch
        mean = float(rate_h.mean())
        model = ArrivalModel(
            kind="nhpp",
            rate_per_step=mean,
            period_steps=DAY_SECONDS / float(tl.step_seconds or 1.0),
            profile=tuple(float(r) for r in rate_h / mean),
            batch_sizes=batch_sizes,
            batch_probs=batch_probs,
        )
        return Candidate(name, model, HOUR_BINS + k_batch, steps.size if batched else 0)
    rate = float(events.sum()) / exposure * mean_batch
    model = ArrivalModel(
        kind="poisson", rate_per_step=rate, batch_sizes=batch_sizes, batch_probs=batch_probs
    )
    return Candidate(name, model, 1 + k_batch, steps.size if batched else 0)


def event_rates(model: ArrivalModel, tl: Timeline, steps: np.ndarray) -> np.ndarray:
    """Expected arrival *events* (batches, or jobs) per step at absolute ``steps``."""
    base = model.rate_per_step / model.mean_batch()
    if model.kind == "nhpp":
        rates: np.ndarray = base * np.asarray(model.profile)[tl.hour_bin(steps)]
        return rates
    return np.full(steps.size, base)


def expected_events(model: ArrivalModel, tl: Timeline) -> float:
    """Expected events over all observed steps of ``tl``."""
    base = model.rate_per_step / model.mean_batch()
    if model.kind == "nhpp":
        return float(base * np.dot(model.profile, hour_exposure(tl)))
    return base * tl.exposure


def smoothed_sizes(c: Candidate, top: int) -> np.ndarray:
    """Batch-size pmf ``f(0..top)`` smoothed with weight 1 on ``6 / (π² k²)``."""
    k = np.arange(top + 1, dtype=np.float64)
    base = np.zeros(top + 1)
    base[1:] = 6 / (math.pi**2 * k[1:] ** 2)
    counts = np.zeros(top + 1)
    sizes = np.asarray(c.model.batch_sizes, dtype=np.int64)
    inside = sizes <= top
    counts[sizes[inside]] = np.asarray(c.model.batch_probs)[inside] * c.n_batches
    return (counts + base) / (c.n_batches + 1)


def compound_logpmf(mu: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``log P(count = c)``, ``c = 0 .. len(f) - 1``, of compound Poisson(μ) with sizes ``f``
    (``f[0] = 0``), for each ``μ`` (rows): Panjer's recursion."""
    top = f.size - 1
    g = np.zeros((mu.size, top + 1))
    g[:, 0] = np.exp(-mu)
    jf = np.arange(top + 1) * f
    for c in range(1, top + 1):
        g[:, c] = mu / c * (g[:, c - 1 :: -1][:, :c] @ jf[1 : c + 1])
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(g, 1e-300))


def count_loglik(c: Candidate, tl: Timeline) -> float:
    """Log-likelihood of the per-step job counts of ``tl`` under candidate ``c``."""
    if tl.times.size == 0:
        return -expected_events(c.model, tl)
    steps, counts = tl.counts()
    mu = event_rates(c.model, tl, steps)
    total = expected_events(c.model, tl)
    with np.errstate(divide="ignore"):
        if not c.model.batch_sizes:
            return float(np.sum(counts * np.log(mu) - special.gammaln(counts + 1)) - total)
        top = int(min(counts.max(), PANJER_CAP))
        f = smoothed_sizes(c, top)
        levels, idx = np.unique(mu, return_inverse=True)
        table = compound_logpmf(levels, f)
        small = counts <= top
        lp = np.empty(counts.size)
        lp[small] = table[idx[small], counts[small]]
        big = ~small
        if big.any():  # one batch of c jobs: μ e^{-μ} f(c), f smoothed as in smoothed_sizes
            fc = smoothed_sizes(c, int(counts.max()))[counts[big]]
            lp[big] = np.log(mu[big]) - mu[big] + np.log(fc)
    return float(np.sum(lp + mu) - total)


def dispersion(tl: Timeline, rate: ArrivalModel | None) -> pl.DataFrame:
    """Index of dispersion (variance / mean) of job counts in bins of several widths.

    Columns: ``scale_steps``, ``scale_seconds`` (null without a clock), ``bins``, ``mean``
    (jobs per bin), ``dispersion`` (1 for a Poisson process) and ``dispersion_vs_rate``: the
    Pearson statistic ``Σ (c - m)² / m / bins`` with ``m`` the jobs the fitted rate (with its
    daily profile, without batches) expects in the bin; 1 when the rate explains the counts.
    """
    step = tl.step_seconds
    wanted = [1.0, 60.0, 600.0, 3600.0, DAY_SECONDS] if step else [1.0, 10.0, 100.0, 1000.0]
    scales = sorted({max(1, round(w / step)) if step else int(w) for w in wanted})
    rows = []
    for s in scales:
        starts, ends = tl.segments[:, 0], tl.segments[:, 1]
        full = (ends - starts) // s
        nb = int(full.sum())
        if nb < 20:
            continue
        seg = np.searchsorted(starts, tl.times, side="right") - 1
        b = (tl.times - starts[seg]) // s
        keep = b < full[seg]
        offset = np.concatenate([[0], np.cumsum(full)[:-1]])
        key, c = np.unique(offset[seg[keep]] + b[keep], return_counts=True)
        n = float(c.sum())
        mean = n / nb
        var = float(np.sum(c.astype(np.float64) ** 2)) / nb - mean**2
        vs_rate = float("nan")
        if rate is not None and nb <= 10_000_000:
            bin_seg = np.repeat(np.arange(len(starts)), full)
            bin_start = starts[bin_seg] + (np.arange(nb) - offset[bin_seg]) * s
            m = _job_rates(rate, tl, bin_start) * s
            m_nz = m[key]
            vs_rate = float((np.sum(c**2 / m_nz) - 2 * n + m.sum()) / nb)
        rows.append(
            {
                "scale_steps": s,
                "scale_seconds": s * step if step else None,
                "bins": nb,
                "mean": mean,
                "dispersion": var / mean if mean > 0 else float("nan"),
                "dispersion_vs_rate": vs_rate,
            }
        )
    schema = {
        "scale_steps": pl.Int64,
        "scale_seconds": pl.Float64,
        "bins": pl.Int64,
        "mean": pl.Float64,
        "dispersion": pl.Float64,
        "dispersion_vs_rate": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def _job_rates(model: ArrivalModel, tl: Timeline, steps: np.ndarray) -> np.ndarray:
    if model.kind == "nhpp":
        rates: np.ndarray = model.rate_per_step * np.asarray(model.profile)[tl.hour_bin(steps)]
        return rates
    return np.full(steps.size, model.rate_per_step)


def hourly_rates(tl: Timeline) -> pl.DataFrame:
    """Observed jobs per step in every (day, hour) of the clock: ``day``, ``hour``,
    ``exposure_steps``, ``jobs``, ``rate`` (empty without a clock)."""
    schema = {
        "day": pl.Int64,
        "hour": pl.Int64,
        "exposure_steps": pl.Float64,
        "jobs": pl.Int64,
        "rate": pl.Float64,
    }
    if not tl.has_clock() or tl.exposure == 0:
        return pl.DataFrame(schema=schema)
    day, hour, length = tl.hour_pieces()
    clock = float(tl.origin_seconds or 0.0) + tl.times * float(tl.step_seconds or 1.0)
    jday = np.floor(clock / DAY_SECONDS).astype(np.int64)
    pieces = pl.DataFrame({"day": day, "hour": hour, "exposure_steps": length})
    jobs = pl.DataFrame({"day": jday, "hour": tl.hour_bin(tl.times)}).group_by("day", "hour").len()
    out = (
        pieces.group_by("day", "hour")
        .agg(pl.col("exposure_steps").sum())
        .join(jobs, on=["day", "hour"], how="left")
        .with_columns(pl.col("len").fill_null(0).cast(pl.Int64).alias("jobs"))
        .with_columns((pl.col("jobs") / pl.col("exposure_steps")).alias("rate"))
    )
    out = out.filter(pl.col("exposure_steps") > 0).select(list(schema))
    return out.cast(schema).sort("day", "hour")  # type: ignore[arg-type]


MIN_WINDOWS = 10
"""Fewest whole windows for the window-to-window rate variation to be estimated."""
HOMOGENEITY_ALPHA = 0.05
"""Level of the dispersion test (Pearson χ² over windows) below which windows are modulated."""


def window_modulation(model: ArrivalModel, tl: Timeline, window: int) -> tuple[float, ...]:
    """Rate multipliers of whole ``window``-step windows (mean 1), or () with too few windows.

    The ratio ``r_k`` of the jobs observed in window ``k`` to those ``model`` expects there
    (daily profile included) is shrunk towards 1 so that its variance loses the counting noise
    the model already produces (``D / E_k`` with ``D = E[B²] / E[B]`` for batches of size ``B``;
    method of moments): ``m_k = max(0, 1 + s (r_k - 1))``, ``s = sqrt(max(0, 1 - noise / var r))``,
    renormalised to mean 1. Nothing is modulated unless the Pearson dispersion test of the
    window counts rejects one common rate at level :data:`HOMOGENEITY_ALPHA`.
    """
    starts = np.concatenate([a + window * np.arange((b - a) // window) for a, b in tl.segments])
    if starts.size < MIN_WINDOWS:
        return ()
    idx = np.searchsorted(starts, tl.times, side="right") - 1
    inside = (idx >= 0) & (tl.times < starts[np.maximum(idx, 0)] + window)
    counts = np.bincount(idx[inside], minlength=starts.size).astype(np.float64)
    if model.kind == "nhpp":
        expected = (
            np.array(
                [
                    expected_events(
                        model,
                        Timeline(
                            tl.times[:0],
                            np.array([[s, s + window]]),
                            tl.step_seconds,
                            tl.origin_seconds,
                        ),
                    )
                    for s in starts
                ]
            )
            * model.mean_batch()
        )
    else:
        expected = np.full(starts.size, model.rate_per_step * window)
    ratio = counts / expected
    sizes = np.asarray(model.batch_sizes or (1,), dtype=np.float64)
    probs = np.asarray(model.batch_probs or (1.0,))
    d = float(np.dot(probs, sizes**2) / np.dot(probs, sizes))
    pearson = float(np.sum((counts - expected) ** 2 / (d * expected)))
    if sps.chi2.sf(pearson, starts.size - 1) > HOMOGENEITY_ALPHA:
        return ()  # the windows' counts are compatible with one rate
    var = float(ratio.var())
    shrink = math.sqrt(max(0.0, 1 - float(np.mean(d / expected)) / var))
    m = np.maximum(0.0, 1 + shrink * (ratio - 1))
    if shrink == 0 or m.mean() <= 0:
        return ()
    return tuple(float(x) for x in m / m.mean())
