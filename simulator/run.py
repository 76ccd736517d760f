"""Run policies over every jobset of a JobSet and collect per-job results.

Every policy is driven through the :class:`~schedlab.policies.base.Policy` contract
(``act_batch`` on its view of a :class:`~schedlab.simulator.model.Model`); a policy that is also
a :class:`ListSchedulingRule` (the heuristics) takes the compiled, event-driven fast path of
:mod:`schedlab.simulator.cluster.disciplines` instead, and one that observes the pick engine
(a learned job order, :mod:`schedlab.simulator.pick`) runs there under its discipline.
``engine`` chooses an implementation explicitly (tests compare them): ``"fast"`` (the compiled
rules), ``"batched"`` (the compiled :class:`~schedlab.simulator.cluster.batched.BatchedEngine`)
or ``"step"`` (the readable :class:`~schedlab.simulator.cluster.engine.Engine`, one jobset at a
time).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Literal

import numpy as np
import polars as pl

from schedlab import sizes
from schedlab.dag_measures import critical_paths
from schedlab.errors import SimulationError
from schedlab.jobset import JobSet
from schedlab.results import (
    DAG_RESULT_COLUMNS,
    RESULT_COLUMNS,
    SECONDS_RESULT_COLUMNS,
    Results,
    kept_columns,
    result_extras,
    seconds_inputs,
    seconds_results,
)
from schedlab.simulator import stepped
from schedlab.simulator.check import check_precedence, check_schedule
from schedlab.simulator.cluster import backfill_steps, disciplines
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.cluster.core import Setting
from schedlab.simulator.cluster.engine_inputs import (
    jobset_bounds,
    resolve_machines,
    writable,
)
from schedlab.simulator.cluster.greedy import WHOLE_QUEUE
from schedlab.simulator.cluster.precedence import (
    Precedence,
    Readiness,
    engine_arrays,
)
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.model import (
    ListSchedulingRule,
    ModelKind,
    Policy,
    checked_knob,
    model_kind,
    traits,
)
from schedlab.simulator.pick.run import is_pick_agent, run_picks
from schedlab.simulator.schedule import Schedule
from schedlab.simulator.stepped import seen_lengths

EngineChoice = Literal["auto", "fast", "step", "batched"]


def schedule(
    jobset: JobSet, policy: Policy, config: ClusterConfig, *, engine: EngineChoice = "auto"
) -> np.ndarray:
    """Start step of every job (rows in ``jobset.jobs`` order) under ``policy``; every engine
    gives the same schedule."""
    return run_policy(jobset, policy, config, engine=engine).start


def run_policy(
    jobset: JobSet, policy: Policy, config: ClusterConfig, *, engine: EngineChoice = "auto"
) -> Schedule:
    """Schedule every jobset of ``jobset`` with ``policy`` on ``config``'s cluster."""
    if BatchedEngine.kind not in policy.models:
        msg = f"policy {policy.name!r} acts on {sorted(policy.models)} models, not on a cluster"
        raise ValueError(msg)
    config = resolve_machines(config, jobset)
    rule = policy if isinstance(policy, ListSchedulingRule) else None  # a heuristic
    said = traits(policy)
    if rule is not None:  # every engine: a NaN knob makes every score NaN and no job start
        checked_knob(rule)
    if len(jobset) == 0:  # nothing to place (e.g. every jobset of a tiny load is empty)
        return Schedule(np.empty(0, np.int64), np.empty(0, np.int64))
    if is_pick_agent(policy):  # picks from the whole queue: simulator/pick
        p = run_picks(jobset, policy, config)
        return Schedule(p.start, p.target)
    check_size(jobset, config, batched=engine == "batched" or rule is None)
    prec = Precedence.of(jobset, config.release)
    if rule is not None and said.queue != "greedy":
        return _run_discipline(jobset, rule, config, engine, prec)
    if engine == "fast" and rule is None:
        msg = f"policy {policy.name!r} is not a list-scheduling heuristic; it has no fast path"
        raise ValueError(msg)
    if config.slots is None and (engine == "batched" or rule is None):
        msg = "the whole queue (slots=None) is for heuristics on the fast or step engines"
        raise ValueError(msg)
    if engine == "step":
        if rule is None and said.queue != "greedy":
            msg = (
                f"policy {policy.name!r}: agents act under a queue discipline on the batched "
                "engine only (engine='auto' or 'batched'), not on the step engine"
            )
            raise ValueError(msg)
        return stepped.run_step(jobset, policy, config, rule, prec)
    if rule is not None and engine != "batched":
        return _run_fast(jobset, rule, config, _uniforms(jobset, rule), prec)
    return stepped.run_batched_agent(jobset, policy, config, dag=prec.dag)


def check_size(jobset: JobSet, config: ClusterConfig, *, batched: bool) -> None:
    """Refuse (:class:`~schedlab.errors.SizeError`) a simulation whose arrays cannot fit in
    memory. ``config.machines`` must be resolved. The list scheduler holds ~5 ``(m, d)``
    float arrays and ~10 int64s per job; the batched engine holds every jobset at once: a
    ``(B, T, m, d)`` occupancy, ``(B, n_max)`` queues and a ``(B, longest duration)`` ring."""
    ids = jobset.jobs.get_column("jobset").to_numpy()
    bounds = jobset_bounds(ids)
    n, n_sets, d = len(jobset), bounds.size - 1, len(jobset.resources)
    m, horizon = int(config.machines or 1), config.horizon
    if batched:
        n_max = int(np.diff(bounds).max())
        longest = int(jobset.jobs.get_column("duration").max())  # type: ignore[arg-type]
        cells = n_sets * (horizon * m * d + 4 * n_max + longest + 1)
        what = (
            f"simulating {n_sets:,} jobsets at once on {m:,} machines x {horizon:,} steps x "
            f"{d} resources (up to {n_max:,} jobs, durations up to {longest:,} steps)"
        )
    else:
        cells = 5 * m * d + 10 * n
        what = f"simulating {n:,} jobs on {m:,} machines x {d} resources"
    sizes.check(
        what,
        8.0 * cells,
        "lower --machines (or the JobSet's machines) or --horizon, or simulate fewer jobsets",
    )


def _uniforms(jobset: JobSet, policy: ListSchedulingRule) -> np.ndarray:
    """The Random mode's draws: one stream per jobset, reset with its id (none for an order)."""
    if not policy.uniform:
        return np.empty(0)
    ids = jobset.jobs.get_column("jobset").to_numpy()
    uniforms = np.empty(ids.size)
    for lo, hi in itertools.pairwise(jobset_bounds(ids)):
        policy.reset(seed=int(ids[lo]))
        uniforms[lo:hi] = policy.uniforms(int(hi - lo))
    return uniforms


def _run_fast(
    jobset: JobSet,
    policy: ListSchedulingRule,
    config: ClusterConfig,
    uniforms: np.ndarray,
    prec: Precedence,
) -> Schedule:
    jobs = jobset.jobs
    ids = jobs.get_column("jobset").to_numpy()
    bounds = jobset_bounds(ids)
    runtime, seen = job_times(jobset, config.overrun, clairvoyant=traits(policy).clairvoyant)
    seen = seen_lengths(policy, seen, prec)
    slots = WHOLE_QUEUE if config.slots is None else config.slots
    out, status = disciplines.run_jobsets(
        disciplines.jobs(
            jobs.get_column("arrival").to_numpy(), runtime, seen, seen, jobset.demands(), uniforms
        ),
        bounds,
        _setting(jobset, policy, config, slots=slots, uniform=bool(policy.uniform)),
        disciplines.GREEDY,
        engine_arrays(prec),
    )
    _check_stalled(ids, bounds, status == disciplines.STALLED)
    return Schedule(out.start, out.machine, ready=out.ready if prec.dag else None)


def _setting(
    jobset: JobSet, policy: ListSchedulingRule, config: ClusterConfig, **greedy: Any
) -> Setting:
    """What the compiled rules run ``policy`` with on ``jobset``'s machines
    (:func:`.cluster.disciplines.setting`; ``greedy``: its slots and Random mode)."""
    capacity, machines = jobset.machine_capacity, config.n_machines()
    knob, static = checked_knob(policy), bool(policy.static)
    return disciplines.setting(
        capacity, machines, policy.score, policy.rule, knob, static, **greedy
    )


def _check_stalled(ids: np.ndarray, bounds: np.ndarray, stalled: np.ndarray) -> None:
    """Raise naming the jobsets (``stalled``: bool per jobset) whose waiting jobs never start."""
    if stalled.any():
        bad = ids[bounds[:-1][stalled]].tolist()
        msg = f"jobsets {bad[:10]} stalled: waiting jobs could never start"
        raise SimulationError(msg)


def _run_discipline(
    jobset: JobSet,
    policy: ListSchedulingRule,
    config: ClusterConfig,
    engine: EngineChoice,
    prec: Precedence,
) -> Schedule:
    """A heuristic under a queue discipline (:mod:`.cluster.disciplines`), over the whole queue
    (the discipline sees every waiting job whatever ``config.slots``), ordering and reserving by
    the jobs' ``estimate`` unless the policy is clairvoyant (or the JobSet has none); jobs run
    as :func:`~schedlab.simulator.config.job_times` says; the compiled rules
    (:func:`.cluster.disciplines.run_jobsets`), or their readable reference
    :mod:`.cluster.backfill_steps` on the step engine."""
    said = traits(policy)
    if engine == "batched":
        msg = f"queue discipline {said.queue!r} runs on the fast and step engines, not batched"
        raise ValueError(msg)
    if policy.uniform:
        msg = f"{policy.name!r} picks at random: it has no job order to queue by"
        raise ValueError(msg)
    jobs = jobset.jobs
    ids = jobs.get_column("jobset").to_numpy()
    bounds = jobset_bounds(ids)
    runtime, estimate = job_times(jobset, config.overrun, clairvoyant=said.clairvoyant)
    seen = seen_lengths(policy, estimate, prec)
    arrival, demand = jobs.get_column("arrival").to_numpy(), writable(jobset.demands())
    discipline = disciplines.DISCIPLINES[said.queue]
    if engine == "step":
        capacity, m = jobset.machine_capacity, config.n_machines()
        parts = [
            backfill_steps.schedule_jobset(
                arrival[lo:hi],
                runtime[lo:hi],
                estimate[lo:hi],
                seen[lo:hi],
                demand[lo:hi],
                capacity,
                m,
                policy,
                discipline,
                Readiness(arrival[lo:hi], prec, int(lo)),
            )
            for lo, hi in itertools.pairwise(bounds)
        ]
        start, machine, reserved, ready = (np.concatenate([p[k] for p in parts]) for k in range(4))
        status = np.array([p[4] for p in parts], dtype=np.int64)
    else:
        out, status = disciplines.run_jobsets(
            disciplines.jobs(arrival, runtime, estimate, seen, demand),
            bounds,
            _setting(jobset, policy, config),
            discipline,
            engine_arrays(prec),
        )
        start, machine, reserved, ready = out
    _check_stalled(ids, bounds, status == disciplines.STALLED)
    return Schedule(start, machine, reserved=reserved, ready=ready if prec.dag else None)


def simulate(
    jobset: JobSet, policies: Sequence[Any], config: Any = None, **options: Any
) -> Results:
    """Simulate every policy on every jobset, on the model kind they all act on
    (:func:`~schedlab.simulator.model.model_kind`: the cluster model unless every policy acts
    on another kind only); every job of every jobset appears in the results, with the machine
    (or cluster) it ran on.

    ``config`` is the kind's config (:attr:`ModelKind.config`: a :class:`ClusterConfig` for the
    cluster model), a mapping of its fields, or None (its defaults); ``options`` go to the kind's
    results builder (the cluster model's ``engine``: see :func:`run_policy`).
    """
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        msg = f"policy names must be distinct, got {names}"
        raise ValueError(msg)
    kind = model_kind(policies)
    return kind.simulate(jobset, policies, kind.make_config(config), **options)


def simulate_cluster(
    jobset: JobSet,
    policies: Sequence[Any],
    config: ClusterConfig,
    *,
    engine: EngineChoice = "auto",
) -> Results:
    """The cluster kind's results builder (call :func:`simulate`): per-job results with the
    machine each job ran on, and ``killed`` (bool): the job ran past its estimate and was ended
    there (``config.overrun == "kill"``); its ``duration`` is then the steps it ran, its
    estimate, not the recorded one (``meta["killed_jobs"]`` counts them per policy's run). A
    DAG task's ``arrival`` is when it became ready (:attr:`Schedule.ready`), so its wait counts
    from then; its JobSet row keeps the trace's arrival."""
    jobs = jobset.jobs
    seed = jobset.meta.provenance.get("seed")
    runtime, _ = job_times(jobset, config.overrun)
    base = jobs.select(
        "jobset",
        (pl.col("load") if "load" in jobs.columns else pl.lit(None, pl.Float64)).alias("load"),
        pl.lit(seed if isinstance(seed, int) else None, pl.Int64).alias("seed"),
        "job_id",
        "arrival",
        pl.Series("duration", runtime, dtype=pl.Int64),
        (pl.col("duration") > pl.Series(runtime)).alias("killed"),
        *seconds_inputs(jobs, jobset.resources[0], jobset.meta.capacity[0]),
        *kept_columns(jobs),
    )
    if "dag" in jobs.columns:  # DAG jobs, measured as jobs (evaluation.metrics.per_jobset)
        base = base.with_columns(_dag_columns(jobset, runtime))
    seconds = seconds_results(jobset.meta.time_step_seconds, base.columns)
    tables = []
    agent_stats = {}
    for policy in policies:
        result = run_policy(jobset, policy, config, engine=engine)
        if result.stats is not None:
            agent_stats[policy.name] = result.stats
        table = base.with_columns(
            pl.lit(policy.name).alias("policy"),
            pl.Series("start", result.start, dtype=pl.Int64),
            pl.Series("machine", result.machine, dtype=pl.Int64),
        )
        if result.ready is not None:  # a DAG task arrives (is visible) when it is ready
            check_precedence(jobset, result.start, result.start + runtime)
            table = table.with_columns(pl.Series("arrival", result.ready, dtype=pl.Int64))
            if "arrival_s" in table.columns:
                step = jobset.meta.time_step_seconds or 1.0
                table = table.with_columns((pl.col("arrival") * step).alias("arrival_s"))
        tables.append(table)
    extra = [*(SECONDS_RESULT_COLUMNS if seconds else ()), *result_extras(jobs.columns)]
    table = (
        pl.concat(tables)
        .with_columns(finish=pl.col("start") + pl.col("duration"))
        .with_columns(
            completion=pl.col("finish") - pl.col("arrival"),
            wait=pl.col("start") - pl.col("arrival"),
        )
        .with_columns(slowdown=pl.col("completion") / pl.col("duration"))
        .with_columns(seconds)
        .select(*RESULT_COLUMNS, "killed", *extra)
    )
    resolved = resolve_machines(config, jobset)
    meta = {
        "jobset": jobset.meta.to_json(),
        "policies": {p.name: p.get_params() for p in policies},
        "config": asdict(resolved),
        "length_buckets": {k: list(v) for k, v in jobset.meta.length_buckets.items()},
        "killed_jobs": int(base.get_column("killed").sum()),
    }
    if agent_stats:
        meta["agent_stats"] = agent_stats
    return Results(table, meta)


def _dag_columns(jobset: JobSet, runtime: np.ndarray) -> list[pl.Series]:
    """Per task, its DAG job: ``dag``, ``job_arrival`` (the job's first task's arrival) and
    ``critical_path`` (the job's length with unlimited machines, on the steps tasks run), int64
    steps, rows in ``jobset.jobs`` order."""
    jobs = jobset.jobs.with_columns(pl.Series("duration", runtime, dtype=pl.Int64))
    paths = critical_paths(jobs).select("jobset", "dag", "critical_path")
    per_task = jobs.select(
        "jobset", "dag", pl.col("arrival").min().over("jobset", "dag").alias("job_arrival")
    ).join(paths, on=["jobset", "dag"], how="left", maintain_order="left")
    return [per_task.get_column(c) for c in DAG_RESULT_COLUMNS]


def _check_finished(jobset: JobSet, model: BatchedEngine) -> None:
    """:func:`~schedlab.simulator.check.check_schedule` of a finished cluster model."""
    p = model.placements()
    check_schedule(
        jobset,
        p.start,
        p.target,
        machines=model.machines,
        finish=p.finish,
        overrun=model.config.overrun,
    )


CLUSTER = ModelKind(
    name=BatchedEngine.kind,
    config=ClusterConfig,
    from_jobset=BatchedEngine.from_jobset,
    simulate=simulate_cluster,
    check_schedule=_check_finished,
    check_policy="schedlab.policies.check:check_cluster_policy",
)
"""The cluster model kind (registered as ``cluster`` in :data:`schedlab.registry.models`)."""
