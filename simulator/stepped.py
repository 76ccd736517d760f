"""The runs where a policy acts decision by decision: agents on the compiled batched engine
(every jobset at once, under the policy's queue discipline) and any policy on the readable step
engine (one jobset at a time, the oracle of the compiled engines); :mod:`.run` chooses."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np
import polars as pl

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.cluster.dispatch import arrival_order, choose
from schedlab.simulator.cluster.engine import Engine, Jobs
from schedlab.simulator.cluster.engine_inputs import default_time_limit, jobset_bounds, writable
from schedlab.simulator.cluster.placement import FIRST_FIT
from schedlab.simulator.cluster.precedence import Precedence, remaining_paths
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.model import ListSchedulingRule, Policy, rollout, traits
from schedlab.simulator.schedule import Schedule


def seen_lengths(policy: object, seen: np.ndarray, prec: Precedence) -> np.ndarray:
    """What ``policy``'s score sees of each job's length: ``seen``, or for a DAG order
    (``sees = "rank"``) on a DAG workload each task's remaining critical path over ``seen``."""
    if traits(policy).sees == "rank" and prec.dag:
        return remaining_paths(prec, seen)
    return seen


def run_batched_agent(
    jobset: JobSet, policy: Policy, config: ClusterConfig, *, dag: bool = False
) -> Schedule:
    """Every jobset at once: one observation batch and one ``act_batch`` call per decision step,
    under the policy's queue discipline (``policy.queue``, where it has one).

    Every job finishes: a jobset still running at the engine's time limit is completed by FCFS
    and its jobs so placed are counted (``forced_jobs``) and warned about.
    """
    backlog = getattr(policy.view, "backlog_view", None)  # a view parameter: the policy's own
    if backlog is not None:
        config = replace(config, backlog_view=backlog)
    said = traits(policy)
    _check_trained_shape(policy, config)
    model = BatchedEngine.from_jobset(
        jobset,
        config,
        queue=said.queue,
        clairvoyant=said.clairvoyant,
        ranks=said.sees == "rank",
    )
    policy.reset(seed=None)
    rollout(model, policy)
    stats = model.withholding()
    if "load" in jobset.jobs.columns:  # per offered load too (envs are the jobsets, in order)
        loads = jobset.jobs.group_by("jobset", maintain_order=True).agg(pl.col("load").first())
        per_env = loads.get_column("load").to_numpy()
        stats["by_load"] = {
            str(load): model.withholding(np.flatnonzero(per_env == load))
            for load in np.unique(per_env[~np.isnan(per_env)])
        }
    if stats["forced_jobs"]:
        msg = (
            f"policy {policy.name!r}: {stats['forced_jobs']} jobs in "
            f"{int((model.forced > 0).sum())} jobsets were placed by the time-limit fallback "
            "(FCFS); they are in the results"
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    p = model.placements()
    return Schedule(p.start, p.target, stats, ready=model.ready_times() if dag else None)


def _check_trained_shape(policy: Policy, config: ClusterConfig) -> None:
    """Refuse, before any engine or observation is allocated, a cluster whose machines, slots or
    horizon differ from those a learned policy's network was trained on (``policy.geometry``,
    where it has one); the policy's own check compares the whole observation later."""
    trained = traits(policy).geometry
    fields = {"machines": "--machines", "slots": "--slots", "horizon": "--horizon"}
    for field, option in fields.items():
        want, have = getattr(trained, field, None), getattr(config, field)
        if want is not None and want != have:
            msg = (
                f"policy {policy.name!r} was trained on {want} {field} but this cluster has "
                f"{have}; use {option} {want}"
            )
            raise ValueError(msg)


def run_step(
    jobset: JobSet,
    policy: Policy,
    config: ClusterConfig,
    rule: ListSchedulingRule | None,
    prec: Precedence,
) -> Schedule:
    """The readable engine, one jobset at a time (the reference the compiled paths match);
    ``rule``: ``policy`` as a heuristic (None: an agent)."""
    jobs = jobset.jobs
    arrival = jobs.get_column("arrival").to_numpy()
    duration, seen = job_times(jobset, config.overrun, clairvoyant=traits(policy).clairvoyant)
    seen = seen_lengths(policy, seen, prec)
    demand = writable(jobset.demands())
    ids = jobs.get_column("jobset").to_numpy()
    start = np.empty(len(jobs), dtype=np.int64)
    machine = np.empty(len(jobs), dtype=np.int64)
    ready = np.empty(len(jobs), dtype=np.int64)
    for lo, hi in itertools.pairwise(jobset_bounds(ids)):
        policy.reset(seed=int(ids[lo]))
        sim = Engine(
            Jobs(arrival[lo:hi], duration[lo:hi], demand[lo:hi], seen[lo:hi]),
            jobset.machine_capacity,
            config,
            prec,
            int(lo),
        )
        if rule is not None:
            _run_work_conserving(sim, rule)
        else:
            _run_agent(sim, policy)
        start[lo:hi], machine[lo:hi], ready[lo:hi] = sim.start, sim.machine, sim.ready
    return Schedule(start, machine, ready=ready if prec.dag else None)


def _start_decided(sim: Engine, action: int) -> bool:
    """Start the job a start-now action names; False for void."""
    if action == 0:
        return False
    machine, position = divmod(action - 1, len(sim.view()))
    sim.start_now(position, machine)
    return True


def _run_work_conserving(sim: Engine, policy: ListSchedulingRule) -> None:
    while not sim.done:
        while sim.fit_now_mask().any():
            obs = policy.view.observe(sim.snapshot())
            if not _start_decided(sim, int(policy.act_batch(obs, mask=None)[0])):
                break
        if not sim.done:
            sim.advance_to_next_event()


def _run_agent(sim: Engine, policy: Policy) -> None:
    """Earliest-fit agent; at the time limit of the batched engine (last arrival + Σ duration
    + T) the jobs left are placed first come, first served on the first fitting machine."""
    ends = np.array([len(sim.jobs)])
    limit = default_time_limit(
        sim.jobs.arrival, sim.jobs.duration, ends * 0, ends, sim.config.horizon
    )
    M = len(sim.view())
    while not sim.done and sim.now < int(limit[0]):
        obs = policy.view.observe(sim.snapshot())
        a = int(policy.act_batch(obs, mask=sim.action_mask()[None])[0])
        if a == 0 or not sim.allocate((a - 1) % M, (a - 1) // M):
            sim.advance()
    while not sim.done:
        snap = sim.snapshot()
        scratch = np.empty(snap.free.shape[2:])
        k, i = choose(
            snap.view[0],
            snap.free[0],
            scratch,
            snap.capacity,
            snap.demand,
            snap.duration,
            snap.seen,
            snap.arrival,
            0,
            sim.now,
            arrival_order,
            np.empty(0),
            FIRST_FIT,
            np.empty((0, snap.capacity.size)),
            0.0,
            -1.0,
        )
        if k >= 0:
            sim.start_now(k, i)
        else:
            sim.advance_to_next_event()
