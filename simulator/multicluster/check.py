"""Conformance check of a finished multi-cluster run, from its outputs (execution and elastic
logs): what every episode must satisfy whatever the policy (Liu et al., ICPP'20, §5 semantics)."""

from __future__ import annotations

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.check import InvalidScheduleError
from schedlab.simulator.multicluster.model import MultiClusterModel


def _fail(msg: str) -> None:
    raise InvalidScheduleError(msg)


def check_finished(jobset: JobSet, model: MultiClusterModel) -> None:
    """:func:`check_run` of ``model``, a finished model of ``jobset`` (the kind's schedule check,
    :attr:`~schedlab.simulator.model.ModelKind.check_schedule`)."""
    if model.jobs.arrival.size != len(jobset):
        _fail(f"the model holds {model.jobs.arrival.size} jobs, the JobSet {len(jobset)}")
    check_run(model)


def check_run(model: MultiClusterModel) -> None:
    """Raise :class:`~schedlab.simulator.check.InvalidScheduleError` unless, in every env:

    * every job was dispatched once, to a cluster, not before it arrived, and ran all its
      executions: the first requested executors when dispatched, each next one when the previous
      finished; none started before its request, each ran exactly its execution time on the
      cluster and held an amount of its request distribution there (the drawn entry);
    * no cluster ever used more executors than its capacity at that moment (normal capacity plus
      the elastic expansion in effect), and expansions are steps of ``elastic_step`` within
      ``[0, elastic_limit]``, one per ``elastic_window`` at most, on elastic clusters only;
    * the missed deadlines are exactly the executions whose elapsed time exceeded the deadline.
    """
    if not model.done.all():
        _fail(f"envs {np.flatnonzero(~model.done)[:5].tolist()} are not finished")
    jobs, cfg, log = model.jobs, model.config, model.executions()
    dispatch, cluster = model.dispatch_times(), model.placements().target
    if (bad := np.flatnonzero((cluster < 0) | (cluster >= cfg.n_clusters))).size:
        _fail(f"job row {bad[0]} was dispatched to no cluster ({cluster[bad[0]]})")
    if (bad := np.flatnonzero(dispatch < jobs.arrival)).size:
        _fail(f"job row {bad[0]} was dispatched at {dispatch[bad[0]]} before its arrival")
    first = jobs.exec_bounds[:-1]
    chained = np.ones(log.job.size, dtype=np.bool_)
    chained[first] = False
    prev_finish = np.r_[-1, log.finish[:-1]]
    expected_request = np.where(chained, prev_finish, dispatch[log.job])
    rules = {
        "did not request when dispatched or when its previous execution finished": (
            log.request_time != expected_request
        ),
        "started before its request": log.start < log.request_time,
        "did not run its execution time": (
            log.finish != log.start + jobs.exec_time[log.job, log.cluster]
        ),
        "held another amount than its drawn request": (
            log.executors != jobs.requests[log.job, log.cluster, jobs.draws]
        ),
    }
    for what, bad in rules.items():
        if (rows := np.flatnonzero(bad)).size:
            e = rows[0]
            _fail(f"execution {e} of job row {log.job[e]} {what} ({rows.size} executions)")
    deadline = jobs.deadline[log.job, log.cluster]
    late = (deadline >= 0) & (log.finish - log.request_time > deadline)
    if not np.array_equal(late, log.missed):
        _fail("missed deadlines do not match the executions' elapsed times")
    env = np.searchsorted(jobs.bounds, log.job, side="right") - 1
    for b in range(model.n_envs):
        for c in range(cfg.n_clusters):
            sel = (env == b) & (log.cluster == c)
            _check_capacity(model, b, c, log.start[sel], log.finish[sel], log.executors[sel])


def _check_capacity(
    model: MultiClusterModel,
    b: int,
    c: int,
    start: np.ndarray,
    finish: np.ndarray,
    executors: np.ndarray,
) -> None:
    cfg = model.config
    changes = model.elastic_log(b, c).reshape(-1, 2)
    if c not in cfg.elastic and changes.size:
        _fail(f"cluster {c} of env {b} is not elastic but changed capacity at {changes[0, 0]}")
    extra = changes[:, 1] if changes.size else np.zeros(0, dtype=np.int64)
    steps = np.abs(np.diff(np.r_[0, extra]))
    if extra.size and (
        extra.min() < 0
        or extra.max() > cfg.elastic_limit
        or steps.max() > cfg.elastic_step
        or (steps == 0).any()
        or (np.diff(changes[:, 0]) < cfg.elastic_window).any()
    ):
        _fail(f"cluster {c} of env {b}: elastic changes break the controller's rules: {changes}")
    # usage and capacity at every event time (finishes release before starts at a moment)
    times = np.unique(np.r_[start, finish, changes[:, 0]]).astype(np.int64)
    used = np.cumsum(
        np.bincount(np.searchsorted(times, start), executors, times.size + 1)
        - np.bincount(np.searchsorted(times, finish), executors, times.size + 1)
    )[:-1]
    in_effect = np.searchsorted(changes[:, 0], times, side="right") - 1
    cap = cfg.capacities[c] + np.where(in_effect >= 0, np.r_[extra, 0][in_effect], 0)
    if (over := np.flatnonzero(used > cap)).size:
        i = over[0]
        _fail(f"cluster {c} of env {b} uses {used[i]} executors at {times[i]} > {cap[i]}")
