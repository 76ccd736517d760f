"""Public conformance check of a schedule: what every simulated run must satisfy.

:func:`check_schedule` verifies a schedule from its outputs alone, whatever produced it (an
engine, a policy, another tool's per-job table): every job of every jobset started exactly once,
never before it arrived, ran exactly its run time (its duration, or its estimate where it was
killed at its request: :func:`~schedlab.simulator.config.job_times`) on a machine of the cluster,
and no machine was ever over capacity. Tests run it over every registered policy
(:func:`schedlab.policies.check_policy`).

:func:`check_precedence` verifies the order a DAG workload imposes (no job starts before every
row of every task it names in ``parents`` has finished; :mod:`schedlab.dag`), and
:func:`precedence_violations` / :func:`precedence_table` count what breaks it, for schedules of
engines that do not enforce precedence.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from schedlab import dag
from schedlab.errors import SchedlabError
from schedlab.jobset import JobSet
from schedlab.simulator.cluster import precedence
from schedlab.simulator.cluster.placement import EPS
from schedlab.simulator.cluster.precedence import Release
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
    release: Release = "dag",
) -> None:
    """Raise :class:`InvalidScheduleError` unless the schedule is feasible: every job starts,
    no earlier than its release (its arrival; for a DAG task under the ``dag`` release rule,
    its DAG job's arrival), on a machine, within capacity, and, for a DAG workload, after every
    row of every parent task finished (:func:`check_precedence`).

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
    release : ``"dag"`` or ``"trace"``
        The cluster's :attr:`~schedlab.simulator.config.ClusterConfig.release` (DAG workloads).
    """
    jobs = jobset.jobs
    n = len(jobs)
    start = np.asarray(start, dtype=np.int64)
    machine = np.zeros(n, np.int64) if machine is None else np.asarray(machine, dtype=np.int64)
    m = jobset.meta.machines if machines is None else machines
    if start.shape != (n,) or machine.shape != (n,):
        _fail(f"expected one start and machine per job ({n}), got {start.shape}, {machine.shape}")
    prec = precedence.Precedence.of(jobset, release)
    arrival = prec.release
    duration, _ = job_times(jobset, overrun)
    where = jobs.select("jobset", "job_id")

    def job(rows: np.ndarray) -> str:
        r = int(rows[0])
        return f"jobset {where['jobset'][r]}, job_id {where['job_id'][r]} ({rows.size} jobs)"

    if (bad := np.flatnonzero(start < 0)).size:
        _fail(f"a job never started: {job(bad)}")
    if (bad := np.flatnonzero(start < arrival)).size:
        _fail(f"a job started before it was released (arrived): {job(bad)}")
    if (bad := np.flatnonzero((machine < 0) | (machine >= m))).size:
        _fail(f"a job ran on no machine of the {m}: {job(bad)} (machine {machine[bad[0]]})")
    if finish is not None and (bad := np.flatnonzero(np.asarray(finish) != start + duration)).size:
        _fail(f"a job did not run exactly its run time: {job(bad)}")
    _check_capacity(jobset, start, duration, machine)
    if prec.dag:
        check_precedence(jobset, start, start + duration)


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
    promises (:mod:`schedlab.simulator.cluster.disciplines`):

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
    from schedlab.simulator.cluster.engine_inputs import jobset_bounds

    bounds = jobset_bounds(jobs.get_column("jobset").to_numpy())
    if discipline == "strict" and in_arrival_order:
        for lo, hi in itertools.pairwise(bounds):
            s = start[lo:hi]  # rows are in arrival order within a jobset
            if (bad := np.flatnonzero(np.diff(s) < 0)).size:
                k = int(lo + bad[0] + 1)
                _fail(
                    f"strict: job row {k} started at {start[k]}, before the earlier-arrived "
                    f"row {k - 1} (at {start[k - 1]})"
                )
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
            _fail(
                f"{discipline}: job row {k} started at {start[k]}, after its reservation "
                f"{reserved[k]}"
            )


def check_results(
    jobset: JobSet,
    table: pl.DataFrame,
    *,
    machines: int | None = None,
    overrun: Overrun = "kill",
    release: Release = "dag",
) -> None:
    """:func:`check_schedule` for every policy of a per-job results table (design.md §7)."""
    keys = jobset.jobs.select("jobset", "job_id").with_row_index("row")
    for policy, part in table.group_by("policy", maintain_order=True):
        joined = keys.join(part, on=["jobset", "job_id"], how="left").sort("row")
        if joined.height != part.height or joined.get_column("start").null_count():
            _fail(f"policy {policy[0]!r}: results do not hold every job of the JobSet once")
        machine = joined.get_column("machine") if "machine" in joined.columns else None
        check_schedule(
            jobset,
            joined.get_column("start").to_numpy(),
            None if machine is None else machine.to_numpy(),
            machines=machines,
            finish=joined.get_column("finish").to_numpy(),
            overrun=overrun,
            release=release,
        )


@dataclass(frozen=True, slots=True)
class Precedence:
    """How a schedule keeps the precedence of a DAG workload (:func:`precedence_violations`).

    An *edge* is one entry of a job's ``parents`` (a parent task; at instance granularity the
    job waits for every row of that task); it is violated when the job starts before the
    task's last row finishes.
    """

    edges: int
    """Edges (entries of ``parents``)."""
    violated_edges: int
    """Edges whose job starts before its parent task finishes."""
    jobs_with_parents: int
    """Jobs (rows) with at least one parent."""
    violating_jobs: int
    """Jobs with at least one violated edge."""
    first: tuple[int, int, int, int] | None
    """The violation of the earliest-starting violating job (ties: the first row): its row,
    its start, the row of the parent task that finished last, and that row's finish."""


def precedence_violations(
    jobset: JobSet, start: np.ndarray | Sequence[int], finish: np.ndarray | Sequence[int]
) -> Precedence:
    """Count the edges of ``jobset``'s DAGs that a schedule breaks (linear in rows + edges).

    Parameters
    ----------
    jobset : JobSet
        The jobs (rows in ``jobset.jobs`` order); without ``parents`` nothing can be violated.
    start, finish : int, shape ``(n,)``
        Start and finish step of every job.
    """
    start = np.asarray(start, dtype=np.int64)
    finish = np.asarray(finish, dtype=np.int64)
    g = dag.graph(jobset.jobs)
    parent, child = g.edges()
    last = np.full(g.task_rows.size, -1, np.int64)  # the row of each task that finishes last
    by_finish = np.argsort(finish, kind="stable")
    last[g.task[by_finish]] = by_finish
    bad = start[child] < finish[last[parent]]
    rows = np.unique(child[bad])
    first = None
    if rows.size:
        e = np.flatnonzero(bad)
        e = e[np.lexsort((child[e], -finish[last[parent[e]]], start[child[e]]))[0]]
        p = int(last[parent[e]])
        first = (int(child[e]), int(start[child[e]]), p, int(finish[p]))
    return Precedence(
        edges=int(child.size),
        violated_edges=int(bad.sum()),
        jobs_with_parents=int((g.n_parents > 0).sum()),
        violating_jobs=int(rows.size),
        first=first,
    )


def check_precedence(
    jobset: JobSet, start: np.ndarray | Sequence[int], finish: np.ndarray | Sequence[int]
) -> None:
    """Raise :class:`InvalidScheduleError` if a job starts before one of its parents finishes,
    naming the earliest such job, its parent and how many edges and jobs break the order
    (shapes as :func:`precedence_violations`)."""
    v = precedence_violations(jobset, start, finish)
    if v.first is None:
        return
    row, at, parent, done = v.first
    jobs = jobset.jobs
    k, j, p = jobs["jobset"][row], jobs["job_id"][row], jobs["job_id"][parent]
    _fail(
        f"jobset {k}, job_id {j} started at step {at} before its parent job_id {p} finished at "
        f"step {done}: {v.violated_edges:,} of {v.edges:,} edges violated, by "
        f"{v.violating_jobs:,} of the {v.jobs_with_parents:,} jobs with parents"
    )


def precedence_table(jobset: JobSet, table: pl.DataFrame) -> pl.DataFrame:
    """:func:`precedence_violations` for every policy of a per-job results table.

    Returns
    -------
    polars.DataFrame
        One row per policy (in table order): ``policy`` and the counts of :class:`Precedence`
        (``edges``, ``violated_edges``, ``jobs_with_parents``, ``violating_jobs``, int64).
    """
    keys = jobset.jobs.select("jobset", "job_id").with_row_index("row")
    rows = []
    for (policy,), part in table.group_by("policy", maintain_order=True):
        joined = keys.join(part, on=["jobset", "job_id"], how="left").sort("row")
        if joined.height != part.height or joined.get_column("start").null_count():
            _fail(f"policy {policy!r}: results do not hold every job of the JobSet once")
        v = precedence_violations(jobset, joined["start"].to_numpy(), joined["finish"].to_numpy())
        rows.append(
            {
                "policy": policy,
                "edges": v.edges,
                "violated_edges": v.violated_edges,
                "jobs_with_parents": v.jobs_with_parents,
                "violating_jobs": v.violating_jobs,
            }
        )
    schema = {
        "policy": pl.Utf8,
        **dict.fromkeys(
            ("edges", "violated_edges", "jobs_with_parents", "violating_jobs"), pl.Int64
        ),
    }
    return pl.DataFrame(rows, schema=schema)
