"""Run policies over every jobset of a JobSet and collect per-job results."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Literal

import numpy as np
import polars as pl

from schedlab.errors import SimulationError
from schedlab.jobset import JobSet
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.engine import Engine, Jobs
from schedlab.simulator.list_scheduler import STALLED, run_jobsets

EngineChoice = Literal["auto", "fast", "step"]


def _bounds(jobset_col: np.ndarray) -> np.ndarray:
    """Row offsets of each contiguous jobset, shape ``(k + 1,)``."""
    change = np.flatnonzero(np.diff(jobset_col)) + 1
    return np.concatenate([[0], change, [jobset_col.size]]).astype(np.int64)


def schedule(
    jobset: JobSet, policy: Any, config: ClusterConfig, *, engine: EngineChoice = "auto"
) -> np.ndarray:
    """Start step of every job (rows in ``jobset.jobs`` order) under ``policy``.

    Heuristics (objects with a ``code``) use the compiled list scheduler unless ``engine="step"``;
    other policies act through :class:`Engine` with earliest-fit placement.
    """
    jobs = jobset.jobs
    arrival = jobs.get_column("arrival").to_numpy()
    duration = jobs.get_column("duration").to_numpy()
    demand = np.ascontiguousarray(jobset.demands())
    ids = jobs.get_column("jobset").to_numpy()
    bounds = _bounds(ids)
    heuristic = hasattr(policy, "code")
    if engine == "fast" and not heuristic:
        msg = f"policy {policy.name!r} is not a heuristic; only the step engine can run it"
        raise ValueError(msg)
    if heuristic and engine != "step":
        uniforms = np.empty(len(jobs))
        for lo, hi in itertools.pairwise(bounds):
            policy.reset(seed=int(ids[lo]))
            uniforms[lo:hi] = policy.uniforms(int(hi - lo))
        start, status = run_jobsets(
            arrival,
            duration,
            demand,
            bounds,
            jobset.capacity,
            config.slots,
            policy.code,
            float(policy.knob),
            uniforms,
        )
        if np.any(status == STALLED):
            bad = ids[bounds[:-1][status == STALLED]].tolist()
            msg = f"jobsets {bad[:10]} stalled: waiting jobs could never start"
            raise SimulationError(msg)
        return start
    start = np.empty(len(jobs), dtype=np.int64)
    for lo, hi in itertools.pairwise(bounds):
        policy.reset(seed=int(ids[lo]))
        sim = Engine(Jobs(arrival[lo:hi], duration[lo:hi], demand[lo:hi]), jobset.capacity, config)
        run = _run_work_conserving if heuristic else _run_agent
        run(sim, policy)
        start[lo:hi] = sim.start
    return start


def _run_work_conserving(sim: Engine, policy: Any) -> None:
    while not sim.done:
        while (mask := sim.fit_now_mask()).any():
            sim.start_now(policy.act(sim, mask=mask))
        if not sim.done:
            sim.advance_to_next_event()


def _run_agent(sim: Engine, policy: Any, max_steps: int = 1_000_000) -> None:
    for _ in range(max_steps):
        if sim.done:
            return
        mask = np.array([sim.slots[s] >= 0 for s in range(sim.config.slots)])
        slot = policy.act(sim, mask=mask)
        if slot < 0 or not sim.allocate(slot):
            sim.advance()
    left = len(sim.jobs) - sim.n_started
    msg = f"episode cap of {max_steps} steps reached with {left} jobs unstarted"
    raise SimulationError(msg)


def simulate(
    jobset: JobSet,
    policies: Sequence[Any],
    config: ClusterConfig | None = None,
    *,
    engine: EngineChoice = "auto",
) -> Results:
    """Simulate every policy on every jobset; every job of every jobset appears in the results."""
    config = config or ClusterConfig()
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        msg = f"policy names must be distinct, got {names}"
        raise ValueError(msg)
    jobs = jobset.jobs
    seed = jobset.meta.provenance.get("seed")
    base = jobs.select(
        "jobset",
        (pl.col("load") if "load" in jobs.columns else pl.lit(None, pl.Float64)).alias("load"),
        pl.lit(seed if isinstance(seed, int) else None, pl.Int64).alias("seed"),
        "job_id", "arrival", "duration",
    )  # fmt: skip
    tables = []
    for policy in policies:
        start = schedule(jobset, policy, config, engine=engine)
        tables.append(
            base.with_columns(
                pl.lit(policy.name).alias("policy"), pl.Series("start", start, dtype=pl.Int64)
            )
        )
    table = (
        pl.concat(tables)
        .with_columns(finish=pl.col("start") + pl.col("duration"))
        .with_columns(
            completion=pl.col("finish") - pl.col("arrival"),
            wait=pl.col("start") - pl.col("arrival"),
        )
        .with_columns(slowdown=pl.col("completion") / pl.col("duration"))
        .select(RESULT_COLUMNS)
    )
    meta = {
        "jobset": jobset.meta.to_json(),
        "policies": {p.name: p.get_params() for p in policies},
        "config": asdict(config),
        "length_buckets": {k: list(v) for k, v in jobset.meta.length_buckets.items()},
    }
    return Results(table, meta)
