"""Shared machinery of the synthetic workload generators (scikit-learn-like uniform interface).

A generator is a frozen dataclass of its parameters. Subclasses say how one batch of jobsets is
sampled at a given arrival rate (:meth:`SyntheticGenerator.sample`) and how a rate maps to an
offered load (:meth:`SyntheticGenerator.load_per_rate`); this base turns that into validated
JobSets with provenance, for one load or a sweep of loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, ClassVar

import numpy as np
import polars as pl

from schedlab import sizes
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.generators.estimates import EstimateModel, draw_estimates
from schedlab.params import Interval
from schedlab.results import RESULT_BYTES


@dataclass(frozen=True, slots=True)
class Sample:
    """Jobs of ``n_jobsets`` jobsets drawn at one rate; jobs sorted by (jobset, arrival)."""

    jobset: np.ndarray
    """int, shape ``(n,)``: jobset index in ``[0, n_jobsets)``."""
    arrival: np.ndarray
    """int, shape ``(n,)``: arrival step."""
    duration: np.ndarray
    """int, shape ``(n,)``: duration in steps (>= 1)."""
    demand: np.ndarray
    """float, shape ``(n, d)``: demand per resource."""
    columns: Mapping[str, Any] = field(default_factory=dict)
    """Further job columns (name -> array or polars Series of length ``n``), e.g. Liu's
    ``category``, ``deadline`` and per-cluster columns."""


def json_params(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON-native values (tuples as lists, at any depth)."""
    return {k: _json_native(v) for k, v in asdict(obj).items()}


def _json_native(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_json_native(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_native(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class SyntheticGenerator:
    """Base class of every generator; subclasses are frozen dataclasses. Every generator takes
    the estimate model (:mod:`.estimates`) of its jobs' user runtime requests."""

    name: ClassVar[str]

    estimate: EstimateModel = "exact"
    """Users' runtime estimates (the ``estimate`` column): ``exact`` (none written: the
    duration), ``factor`` (``ceil(duration · f)``, ``f ~ Uniform(1, estimate_factor)``) or
    ``modal`` (the smallest round request value >= the duration)."""
    estimate_factor: Annotated[float, Interval(ge=1)] = 5.0
    """``factor`` model: the largest over-estimate factor."""
    step_seconds: Annotated[float, Interval(gt=0)] = 60.0
    """``modal`` model: seconds per time step, to convert the modal request values to steps."""

    # -- to be provided by subclasses ----------------------------------------------------------
    def resources(self) -> tuple[str, ...]:
        """Resource names."""
        raise NotImplementedError

    def capacity(self) -> tuple[float, ...]:
        """One machine's capacity per resource."""
        raise NotImplementedError

    def arrival_window(self) -> int | None:
        """Steps over which arrivals are generated (the offered load's span); None when each
        jobset's own arrival span is (then :meth:`jobs_per_jobset` is overridden)."""
        raise NotImplementedError

    def length_buckets(self) -> dict[str, tuple[int, int]]:
        """Named duration ranges for per-length breakdowns."""
        return {}

    def load_per_rate(self) -> float:
        """Expected offered load produced by a mean of one arrival per step on one machine."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Draw ``n_jobsets`` jobsets with a mean of ``rate`` arrivals per step."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------
    @property
    def n_machines(self) -> int:
        """Machines the jobsets are made for (a ``machines`` parameter, else 1)."""
        return int(getattr(self, "machines", 1))

    def rate_for_load(self, load: float) -> float:
        """Mean arrivals per step that give offered ``load`` on all machines
        (``load · m / load_per_rate()``)."""
        if not load > 0:
            msg = f"target load must be > 0, got {load}"
            raise ValueError(msg)
        return load * self.n_machines / self.load_per_rate()

    def load_for_rate(self, rate: float) -> float:
        """Offered load of a mean of ``rate`` arrivals per step (``rate · load_per_rate() / m``)."""
        if not rate > 0:
            msg = f"arrival rate must be > 0 jobs per step, got {rate}"
            raise ValueError(msg)
        return rate * self.load_per_rate() / self.n_machines

    def generate_rates(self, rates: list[float], *, n_jobsets: int, seed: int) -> JobSet:
        """Like :meth:`generate_sweep`, by mean arrivals per step (λ) instead of loads."""
        loads = [round(self.load_for_rate(r), 12) for r in rates]
        return self.generate_sweep(loads, n_jobsets=n_jobsets, seed=seed)

    def generate(self, load: float, *, n_jobsets: int, seed: int) -> JobSet:
        """``n_jobsets`` jobsets at offered ``load``; same as ``generate_sweep([load], ...)``."""
        return self.generate_sweep([load], n_jobsets=n_jobsets, seed=seed)

    def generate_sweep(self, loads: list[float], *, n_jobsets: int, seed: int) -> JobSet:
        """``n_jobsets`` jobsets per load, numbered ``i * n_jobsets + k`` for load ``i``.

        Load ``i`` draws from child ``i`` of ``SeedSequence(seed).spawn(len(loads))``: a JobSet
        is determined by the generator's parameters, ``loads``, ``n_jobsets`` and ``seed``.
        """
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            msg = f"seed must be an int (it is recorded for reproducibility), got {seed!r}"
            raise TypeError(msg)
        if n_jobsets < 1:
            msg = f"n_jobsets must be >= 1, got {n_jobsets}"
            raise ValueError(msg)
        self.check_size(loads, n_jobsets)
        children = np.random.SeedSequence(int(seed)).spawn(len(loads))
        frames = []
        for i, (load, child) in enumerate(zip(loads, children, strict=True)):
            rng = np.random.default_rng(child)
            s = self.sample(rng, self.rate_for_load(load), n_jobsets)
            frames.append(self._frame(s, load, first_id=i * n_jobsets, rng=rng))
        jobs = pl.concat(frames)
        present = set(jobs.get_column("jobset").unique().to_list())
        empty = tuple(k for k in range(n_jobsets * len(loads)) if k not in present)
        if self.n_machines < 1:
            msg = f"machines must be >= 1, got {self.n_machines}"
            raise ValueError(msg)
        meta = JobSetMeta(
            resources=self.resources(),
            capacity=tuple(c * self.n_machines for c in self.capacity()),
            machines=self.n_machines,
            units=("slot",) * len(self.resources()),
            arrival_window=self.arrival_window(),
            length_buckets=self.length_buckets(),
            empty_jobsets=empty,
            provenance={
                "generator": self.name,
                "params": json_params(self),
                "loads": list(loads),
                "rates": [self.rate_for_load(x) for x in loads],
                "n_jobsets_per_load": n_jobsets,
                "seed": int(seed),
                "seeding": "load i uses SeedSequence(seed).spawn(len(loads))[i]",
            },
        )
        return JobSet.create(jobs, meta)

    def jobs_per_jobset(self, load: float) -> float:
        """Expected jobs in one jobset at offered ``load``: ``rate · arrival_window``."""
        rate = self.rate_for_load(load)
        window = self.arrival_window()
        assert window is not None, f"{self.name}: no arrival window, override jobs_per_jobset"
        return rate * window

    def scratch_bytes(self) -> int:
        """Bytes one jobset needs while sampling besides its jobs: a per-step row of its
        arrival window (``8 · window + 64``), for samplers that count arrivals per step."""
        return 8 * (self.arrival_window() or 0) + 64

    def check_size(self, loads: list[float], n_jobsets: int, *, results: int = 0) -> None:
        """Refuse (:class:`~schedlab.errors.SizeError`) a sweep whose expected jobs cannot fit in
        memory: ``n_jobsets`` per load x ``rate · arrival_window`` expected jobs each, at
        :data:`GENERATION_BYTES` per job (~3 copies of its ``d + 8`` 8-byte columns while
        sampling and framing) plus :meth:`scratch_bytes` of every jobset, and
        :data:`~schedlab.results.RESULT_BYTES` per job for each of ``results`` policies whose
        results are held too (an experiment's)."""
        window = self.arrival_window() or 0
        per_jobset = [self.jobs_per_jobset(load) for load in loads]
        jobs = sum(per_jobset) * n_jobsets
        per_job = 3 * 8 * (len(self.resources()) + 8) + results * RESULT_BYTES
        scratch = len(loads) * n_jobsets * self.scratch_bytes()
        held = f" and {results} policies' results" if results else ""
        sizes.check(
            f"{self.name}: {n_jobsets:,} jobsets x {len(loads)} load(s) x up to "
            f"{max(per_jobset):,.4g} expected jobs each (= {jobs:.4g} jobs; a "
            f"{window:,}-step window){held}",
            jobs * per_job + scratch,
            "lower the jobsets per load (--jobsets; a spec's jobsets), the loads or rates, or "
            "the arrival window",
        )

    def _frame(
        self, s: Sample, load: float, *, first_id: int, rng: np.random.Generator
    ) -> pl.DataFrame:
        """The jobs of ``s`` as JobSet rows, with their estimates (drawn from ``rng`` after the
        jobs) unless the model is ``exact``."""
        n = s.arrival.shape[0]
        extra = dict(s.columns)
        if self.estimate != "exact":
            extra["estimate"] = draw_estimates(
                self.estimate,
                s.duration,
                rng,
                factor=self.estimate_factor,
                step_seconds=self.step_seconds,
            )
        counts = np.bincount(s.jobset, minlength=int(s.jobset.max(initial=-1)) + 1)
        job_id = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        return pl.DataFrame(
            {
                "jobset": (s.jobset + first_id).astype(np.int32),
                "job_id": job_id.astype(np.int64),
                "arrival": s.arrival.astype(np.int64),
                "duration": s.duration.astype(np.int64),
                **{r: s.demand[:, k].astype(np.float64) for k, r in enumerate(self.resources())},
                "load": np.full(n, load, dtype=np.float64),
            }
        ).with_columns(v if isinstance(v, pl.Series) else pl.Series(k, v) for k, v in extra.items())
