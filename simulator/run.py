"""Run policies over every jobset of a JobSet and collect per-job results."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any, Literal

import numpy as np
import polars as pl

from schedlab.errors import SimulationError
from schedlab.jobset import JobSet
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.batched import BatchedEngine, default_time_limit
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.engine import Engine, Jobs
from schedlab.simulator.list_scheduler import STALLED, run_jobsets

EngineChoice = Literal["auto", "fast", "step", "batched"]


def _bounds(jobset_col: np.ndarray) -> np.ndarray:
    """Row offsets of each contiguous jobset, shape ``(k + 1,)``."""
    change = np.flatnonzero(np.diff(jobset_col)) + 1
    return np.concatenate([[0], change, [jobset_col.size]]).astype(np.int64)


def schedule(
    jobset: JobSet, policy: Any, config: ClusterConfig, *, engine: EngineChoice = "auto"
) -> np.ndarray:
    """Start step of every job (rows in ``jobset.jobs`` order) under ``policy``.

    Heuristics (objects with a ``code``) use the compiled list scheduler (``"auto"``/``"fast"``),
    the step engine (``"step"``) or the batched engine (``"batched"``); all three give the same
    schedule. Policies with ``act_batch`` (learned) act on all jobsets at once through the
    batched engine unless ``engine="step"``; other policies act through :class:`Engine`.
    """
    return _schedule(jobset, policy, config, engine)[0]


def _schedule(
    jobset: JobSet, policy: Any, config: ClusterConfig, engine: EngineChoice
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """Start steps, and for batched agents their withholding statistics."""
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
    if not heuristic and hasattr(policy, "act_batch") and engine in ("auto", "batched"):
        return _run_batched_agent(jobset, policy, config)
    if heuristic and engine != "step":
        uniforms = np.empty(len(jobs))
        for lo, hi in itertools.pairwise(bounds):
            policy.reset(seed=int(ids[lo]))
            uniforms[lo:hi] = policy.uniforms(int(hi - lo))
        if engine == "batched":
            batched = BatchedEngine.from_jobset(jobset, config)
            batched.run_heuristic(policy.code, float(policy.knob), uniforms)
            return batched.all_starts(), None
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
        return start, None
    start = np.empty(len(jobs), dtype=np.int64)
    for lo, hi in itertools.pairwise(bounds):
        policy.reset(seed=int(ids[lo]))
        sim = Engine(Jobs(arrival[lo:hi], duration[lo:hi], demand[lo:hi]), jobset.capacity, config)
        run = _run_work_conserving if heuristic else _run_agent
        run(sim, policy)
        start[lo:hi] = sim.start
    return start, None


def _run_batched_agent(
    jobset: JobSet, policy: Any, config: ClusterConfig
) -> tuple[np.ndarray, dict[str, Any]]:
    """Every jobset at once: one observation batch and one ``act_batch`` call per decision step.

    Every job finishes: a jobset still running at the engine's time limit is completed by FCFS
    and its jobs so placed are counted (``forced_jobs``) and warned about.
    """
    view = getattr(policy, "backlog_view", None)  # a view parameter: the policy's own
    config = config if view is None else replace(config, backlog_view=view)
    engine = BatchedEngine.from_jobset(jobset, config)
    policy.reset(seed=None)
    active = np.flatnonzero(~engine.done)
    while active.size:
        engine.step(policy.act_batch(engine.observe(active)), active)
        active = active[~engine.done[active]]
    stats = engine.withholding()
    if "load" in jobset.jobs.columns:  # per offered load too (envs are the jobsets, in order)
        loads = jobset.jobs.group_by("jobset", maintain_order=True).agg(pl.col("load").first())
        per_env = loads.get_column("load").to_numpy()
        stats["by_load"] = {
            str(load): engine.withholding(np.flatnonzero(per_env == load))
            for load in np.unique(per_env[~np.isnan(per_env)])
        }
    if stats["forced_jobs"]:
        msg = (
            f"policy {policy.name!r}: {stats['forced_jobs']} jobs in "
            f"{int((engine.forced > 0).sum())} jobsets were placed by the time-limit fallback "
            "(FCFS); they are in the results"
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    return engine.all_starts(), stats


def _run_work_conserving(sim: Engine, policy: Any) -> None:
    while not sim.done:
        while (mask := sim.fit_now_mask()).any():
            sim.start_now(policy.act(sim, mask=mask))
        if not sim.done:
            sim.advance_to_next_event()


def _run_agent(sim: Engine, policy: Any) -> None:
    """Earliest-fit agent; at the time limit of the batched engine (last arrival + Σ duration
    + T) the jobs left are placed first come, first served, as there."""
    ends = np.array([len(sim.jobs)])
    limit = default_time_limit(
        sim.jobs.arrival, sim.jobs.duration, ends * 0, ends, sim.config.horizon
    )
    while not sim.done and sim.now < int(limit[0]):
        mask = np.array([sim.slots[s] >= 0 for s in range(sim.config.slots)])
        slot = policy.act(sim, mask=mask)
        if slot < 0 or not sim.allocate(slot):
            sim.advance()
    while not sim.done:
        while (mask := sim.fit_now_mask()).any():
            fitting = np.flatnonzero(mask)
            sim.start_now(int(fitting[np.argmin(sim.slots[fitting])]))
        if not sim.done:
            sim.advance_to_next_event()


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
    agent_stats = {}
    for policy in policies:
        start, stats = _schedule(jobset, policy, config, engine)
        if stats is not None:
            agent_stats[policy.name] = stats
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
    if agent_stats:
        meta["agent_stats"] = agent_stats
    return Results(table, meta)
