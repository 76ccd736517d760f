"""Public conformance check of a schedule: what every simulated run must satisfy.

:func:`check_schedule` verifies a schedule from its outputs alone, whatever produced it (an
engine, a policy, another tool's per-job table): every job of every jobset started exactly once,
never before it arrived, ran exactly its run time (its duration, or its estimate where it was
killed at its request: :func:`~schedlab.simulator.config.job_times`) on a machine of the cluster,
and no machine was ever over capacity. Tests run it over every registered policy
(:func:`schedlab.policies.check_policy`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import polars as pl

from schedlab.errors import SchedlabError
from schedlab.jobset import JobSet
from schedlab.simulator.cluster.placement import EPS
from schedlab.simulator.config import Overrun, job_times


class InvalidScheduleError(SchedlabError, AssertionError):
    """A schedule breaks a rule of the cluster model; the message names the jobset and job."""


def _fail(msg: str) -> None:
    raise InvalidScheduleError(msg)


def check_schedule(
    jobset: JobSet,
    start: np.ndarray | Sequence[int],
    machine: np.ndarray | Sequence[int] | None = None,
    *,
    machines: int | None = None,
    finish: np.ndarray | Sequence[int] | None = None,
    overrun: Overrun = "kill",
) -> None:
    """Raise :class:`InvalidScheduleError` unless the schedule is feasible.

    Parameters
    ----------
    jobset : JobSet
        The jobs (rows in ``jobset.jobs`` order).
    start : int, shape ``(n,)``
        Start step of every job.
    machine : int, shape ``(n,)``, optional
        Machine of every job (default: all on machine 0).
    machines : int, optional
        m (default: the JobSet's); a machine's capacity is ``jobset.machine_capacity``.
    finish : int, shape ``(n,)``, optional
        Finish steps as reported (checked to equal ``start`` + the run time).
    overrun : ``"kill"`` or ``"extend"``
        The cluster's :attr:`~schedlab.simulator.config.ClusterConfig.overrun`: the run times.
    """
    jobs = jobset.jobs
    n = len(jobs)
    start = np.asarray(start, dtype=np.int64)
    machine = np.zeros(n, np.int64) if machine is None else np.asarray(machine, dtype=np.int64)
    m = jobset.meta.machines if machines is None else machines
    if start.shape != (n,) or machine.shape != (n,):
        _fail(f"expected one start and machine per job ({n}), got {start.shape}, {machine.shape}")
    arrival = jobs.get_column("arrival").to_numpy()
    duration, _ = job_times(jobset, overrun)
    where = jobs.select("jobset", "job_id")

    def job(rows: np.ndarray) -> str:
        r = int(rows[0])
        return f"jobset {where['jobset'][r]}, job_id {where['job_id'][r]} ({rows.size} jobs)"

    if (bad := np.flatnonzero(start < 0)).size:
        _fail(f"a job never started: {job(bad)}")
    if (bad := np.flatnonzero(start < arrival)).size:
        _fail(f"a job started before it arrived: {job(bad)}")
    if (bad := np.flatnonzero((machine < 0) | (machine >= m))).size:
        _fail(f"a job ran on no machine of the {m}: {job(bad)} (machine {machine[bad[0]]})")
    if finish is not None and (bad := np.flatnonzero(np.asarray(finish) != start + duration)).size:
        _fail(f"a job did not run exactly its run time: {job(bad)}")
    _check_capacity(jobset, start, duration, machine)


def _check_capacity(
    jobset: JobSet, start: np.ndarray, duration: np.ndarray, machine: np.ndarray
) -> None:
    """No machine of any jobset is over capacity at any step (an event sweep per machine)."""
    n = start.size
    ids = jobset.jobs.get_column("jobset").to_numpy().astype(np.int64)
    demand = jobset.demands()
    capacity = jobset.machine_capacity
    # events: (jobset, machine, time, kind) with finishes (kind 0) before starts (kind 1)
    time = np.concatenate([start, start + duration])
    kind = np.concatenate([np.ones(n, np.int64), np.zeros(n, np.int64)])
    rows = np.concatenate([np.arange(n), np.arange(n)])
    order = np.lexsort((kind, time, machine[rows], ids[rows]))
    rows, kind, time = rows[order], kind[order], time[order]
    delta = np.where(kind[:, None] == 1, demand[rows], -demand[rows])
    usage = np.cumsum(delta, axis=0)  # all events; every group ends at zero usage
    over = np.flatnonzero((usage > capacity * (1 + 1e-9) + EPS).any(axis=1))
    if over.size:
        r = int(rows[over[0]])
        used = dict(zip(jobset.resources, usage[over[0]].round(9).tolist(), strict=True))
        _fail(
            f"machine {machine[r]} of jobset {ids[r]} is over capacity at step {time[over[0]]}: "
            f"{used} > {dict(zip(jobset.resources, capacity.tolist(), strict=True))}"
        )


def check_discipline(
    jobset: JobSet,
    start: np.ndarray | Sequence[int],
    discipline: str,
    *,
    reserved: np.ndarray | Sequence[int] | None = None,
    in_arrival_order: bool = True,
    runtime: np.ndarray | None = None,
) -> None:
    """Raise :class:`InvalidScheduleError` unless the schedule keeps what ``discipline``
    promises (:mod:`schedlab.simulator.cluster.backfill`):

    * ``strict`` under an arrival order (``in_arrival_order``: FCFS): no job starts before a job
      that arrived earlier (starts are non-decreasing in arrival order, per jobset);
    * ``conservative`` under any order, and ``easy`` under an arrival order: no job starts after
      the first reservation it got (``reserved``; EASY reserves for the head job, conservative
      for every job when it arrives; a job without one is not checked), in the jobsets where
      every job ends by its estimate (``runtime``, steps: the run times the schedule used,
      default the ``duration`` column; compared with the ``estimate`` column when there is one).
      A job running past its estimate may delay any reservation.

    Under another order a job that arrives later may rank ahead and start first, as the
    discipline allows, so strict and EASY check nothing then.
    """
    start = np.asarray(start, dtype=np.int64)
    jobs = jobset.jobs
    from schedlab.simulator.cluster.batched import jobset_bounds

    bounds = jobset_bounds(jobs.get_column("jobset").to_numpy())
    if discipline == "strict" and in_arrival_order:
        for lo, hi in itertools.pairwise(bounds):
            s = start[lo:hi]  # rows are in arrival order within a jobset
            if (bad := np.flatnonzero(np.diff(s) < 0)).size:
                k = int(lo + bad[0] + 1)
                _fail(f"strict: job row {k} started at {start[k]}, before the earlier-arrived "
                      f"row {k - 1} (at {start[k - 1]})")  # fmt: skip
    promised = discipline == "conservative" or (discipline == "easy" and in_arrival_order)
    if promised and reserved is not None:
        reserved = np.asarray(reserved, dtype=np.int64).copy()
        run = jobs.get_column("duration").to_numpy() if runtime is None else np.asarray(runtime)
        if "estimate" in jobs.columns:
            over = run > jobs.get_column("estimate").to_numpy()
            for lo, hi in itertools.pairwise(bounds):
                if over[lo:hi].any():
                    reserved[lo:hi] = np.iinfo(np.int64).max  # nothing promised there
        late = np.flatnonzero(start > reserved)
        if late.size:
            k = int(late[0])
            _fail(f"{discipline}: job row {k} started at {start[k]}, after its reservation "
                  f"{reserved[k]}")  # fmt: skip


def check_results(
    jobset: JobSet, table: pl.DataFrame, *, machines: int | None = None, overrun: Overrun = "kill"
) -> None:
    """:func:`check_schedule` for every policy of a per-job results table (design.md §7)."""
    keys = jobset.jobs.select("jobset", "job_id").with_row_index("row")
    for policy, part in table.group_by("policy", maintain_order=True):
        joined = keys.join(part, on=["jobset", "job_id"], how="left").sort("row")
        if joined.height != part.height or joined.get_column("start").null_count():
            _fail(f"policy {policy[0]!r}: results do not hold every job of the JobSet once")
        machine = joined.get_column("machine") if "machine" in joined.columns else None
        check_schedule(
            jobset, joined.get_column("start").to_numpy(),
            None if machine is None else machine.to_numpy(), machines=machines,
            finish=joined.get_column("finish").to_numpy(), overrun=overrun,
        )  # fmt: skip
