"""When jobs become ready: arrivals, and for DAG workloads precedence (issue 26).

Every engine admits a job into its queue at its **ready time**: its ``release`` and, when the
JobSet has ``parents`` (:mod:`schedlab.dag`), no earlier than the finish of every row of every
task it waits for. Two release rules (``ClusterConfig.release``):

``dag``    (default) a DAG job arrives at its first task's arrival: every row of the job is
           released then, so its root tasks are ready then and every other task when its last
           parent finishes (a job's completion time with unlimited machines is its critical
           path);
``trace``  each row is released at its own arrival, and no earlier than its parents' finish.

A row's ready time is known as soon as every row of its parent tasks has *started* (a start
fixes a finish), so engines learn it when they start a job (:func:`on_start`) and keep the
known, not yet admitted rows in a heap (:mod:`.heap`) ordered by (ready time, row): rows ready
at the same time are admitted in row (arrival) order in every engine. Without ``parents``
every row is a root released at its arrival, and the heap yields rows in arrival order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
import polars as pl

from schedlab.jobset import JobSet
from schedlab.simulator.cluster import heap

Release = Literal["dag", "trace"]


@dataclass(frozen=True, slots=True)
class Precedence:
    """What the engines need of a JobSet's precedence, over its rows (in ``jobs`` order).

    ``release`` (int64, ``(n,)``, steps) and the graph of :func:`schedlab.dag.graph`: parent
    tasks per row ``n_parents`` (int32), ``task`` per row, ``task_rows`` per task, the rows
    waiting for each task ``children[child_offsets[t]:child_offsets[t + 1]]`` (global rows).
    Without precedence the graph arrays are empty and every row is a root."""

    release: np.ndarray
    n_parents: np.ndarray
    task: np.ndarray
    task_rows: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray

    @property
    def dag(self) -> bool:
        """Whether the JobSet is a DAG workload (it has ``parents``): rows may wait for others
        and, under the ``dag`` release, be released before their own arrival (even where no
        edge is left, e.g. in a sample)."""
        return self.task.size > 0

    @classmethod
    def of(cls, jobset: JobSet, release: Release = "dag") -> Precedence:
        """The precedence of ``jobset`` under ``release`` (see the module docstring); ``dag``
        needs the ``dag`` column (the DAG job of each row) and falls back to ``trace``
        without it."""
        jobs = jobset.jobs
        arrival = jobs.get_column("arrival").to_numpy()
        if "parents" not in jobs.columns:
            empty = np.zeros(0, np.int64)
            return cls(arrival, np.zeros(len(jobs), np.int32), empty, empty, empty, empty)
        from schedlab.dag import graph

        g = graph(jobs)
        if release == "dag" and "dag" in jobs.columns:
            first = pl.col("arrival").min().over("jobset", "dag")
            arrival = jobs.select(first).to_series().to_numpy()
        return cls(
            np.ascontiguousarray(arrival, np.int64),
            g.n_parents.astype(np.int32, copy=False),
            g.task,
            g.task_rows.astype(np.int64, copy=False),
            g.child_offsets,
            g.children,
        )


@numba.njit(cache=True)
def roots(release: np.ndarray, n_parents: np.ndarray, t: np.ndarray, r: np.ndarray) -> int:
    """Push every row waiting for nothing at its release (rows local to one jobset)."""
    size = 0
    for j in range(release.shape[0]):
        if n_parents[j] == 0:
            size = heap.push(t, r, size, release[j], j)
    return size


@numba.njit(cache=True)
def on_start(
    j: int,
    finish: int,
    lo: int,
    release: np.ndarray,
    task: np.ndarray,
    task_left: np.ndarray,
    task_end: np.ndarray,
    child_offsets: np.ndarray,
    children: np.ndarray,
    waiting: np.ndarray,
    ready: np.ndarray,
    t: np.ndarray,
    r: np.ndarray,
    size: int,
    task_lo: int = 0,
) -> int:
    """Row ``j`` (local; ``lo`` is its jobset's first global row) started and ends at
    ``finish``: when it is the last row of its task to start, every row waiting for the task
    learns one more parent's end, and a row with no parent left is pushed at its ready time
    (``max(release, parents' ends)``). ``task_left``, ``task_end`` (per task, from task
    ``task_lo`` on) and ``waiting``, ``ready`` (per local row) are updated; returns the heap's
    new size."""
    if task.shape[0] == 0:
        return size
    k = task[lo + j]
    c0 = child_offsets[k]
    c1 = child_offsets[k + 1]
    k -= task_lo
    task_left[k] -= 1
    task_end[k] = max(task_end[k], finish)
    if task_left[k]:
        return size
    for e in range(c0, c1):
        c = children[e] - lo
        ready[c] = max(ready[c], task_end[k])
        waiting[c] -= 1
        if waiting[c] == 0:
            size = heap.push(t, r, size, max(release[c], ready[c]), c)
    return size


def remaining_paths(prec: Precedence, length: np.ndarray) -> np.ndarray:
    """Each row's remaining critical path over ``length`` (int64, ``(n,)``, steps): what DAG
    orders see (:func:`schedlab.dag_measures.upward_rank` over ``prec``'s graph, with a topological
    order found for it)."""
    from schedlab import dag, dag_measures

    order, _ = dag.topological_order(
        prec.task, prec.task_rows, prec.n_parents, prec.child_offsets, prec.children
    )
    g = dag.Graph(
        prec.task, prec.task_rows, prec.n_parents, prec.child_offsets, prec.children, order
    )
    return dag_measures.upward_rank(g, length)


def engine_arrays(
    prec: Precedence,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tuple the compiled engines take: ``(release, n_parents, task, task_rows (a copy,
    consumed), child_offsets, children)``."""
    return (
        prec.release,
        prec.n_parents,
        prec.task,
        prec.task_rows.copy(),
        prec.child_offsets,
        prec.children,
    )


class Readiness:
    """The readable engines' side of the rule (the step engine, the readable disciplines):
    which jobs of one jobset (rows ``lo .. lo + n − 1`` of ``prec``'s, local rows here) are
    ready when. ``ready`` (int64, ``(n,)``) is each job's ready time, final once admitted."""

    def __init__(self, arrival: np.ndarray, prec: Precedence | None = None, lo: int = 0) -> None:
        n = arrival.shape[0]
        self.prec, self.lo = (prec if prec is not None and prec.dag else None), lo
        release = arrival if prec is None else prec.release[lo : lo + n]
        self.release = np.asarray(release, dtype=np.int64)
        self.ready = self.release.copy()
        self._waiting = (
            np.zeros(n, np.int64) if self.prec is None else self.prec.n_parents[lo : lo + n].copy()
        )
        self._task_left: dict[int, int] = {}
        self._task_end: dict[int, int] = {}
        self._pending = [(int(self.ready[j]), j) for j in range(n) if self._waiting[j] == 0]
        heapq.heapify(self._pending)

    def next_time(self) -> int | None:
        """The earliest known ready time of a job not admitted yet (None: none known)."""
        return self._pending[0][0] if self._pending else None

    def admit(self, now: int) -> list[int]:
        """The jobs ready by ``now``, in (ready time, row) order, taken off the pending heap."""
        out = []
        while self._pending and self._pending[0][0] <= now:
            out.append(heapq.heappop(self._pending)[1])
        return out

    def started(self, j: int, finish: int) -> None:
        """Job ``j`` ends at ``finish``: once every row of its task has started, the jobs
        waiting for the task learn its end, and those waiting for nothing more are pending at
        ``max(release, parents' ends)``."""
        prec = self.prec
        if prec is None:
            return
        task = int(prec.task[self.lo + j])
        left = self._task_left.get(task, int(prec.task_rows[task])) - 1
        self._task_left[task] = left
        self._task_end[task] = max(self._task_end.get(task, 0), finish)
        if left:
            return
        for child in prec.children[prec.child_offsets[task] : prec.child_offsets[task + 1]]:
            c = int(child) - self.lo
            self.ready[c] = max(self.ready[c], self._task_end[task])
            self._waiting[c] -= 1
            if self._waiting[c] == 0:
                heapq.heappush(self._pending, (int(self.ready[c]), c))
