"""Precedence graphs of DAG workloads: validation, ready counts, children, topological order.

A JobSet describes precedence with three optional columns (:mod:`schedlab.jobset`):

``parents`` (List(Int64))
    The *tasks* a row waits for, by task key, in the row's jobset. A row may start once every
    row of every task it names has finished.
``task`` (Int64)
    The row's task key: rows with the same key in a jobset are instances of one task. Without
    this column a row is its own task and its key is its ``job_id`` (task granularity: one row
    per task, ``parents`` are job ids, as the v2018 loader writes them).
``dag`` (Int64)
    The DAG job the row belongs to, unique within its jobset (the v2018 loader writes the
    ``<n>`` of ``j_<n>``); a task's rows and parents are in the row's dag.

The representation is linear at instance granularity: a task of 10^3 instances whose parent has
10^3 instances costs 10^3 list entries (each instance names the parent *task* once), not 10^6
instance-to-instance edges. An engine enforcing precedence keeps, per task, the number of its
rows not finished yet and, per row, the number of parent tasks not finished yet
(:attr:`Graph.n_parents`); when a task's last row finishes it decrements its children
(:attr:`Graph.child_offsets`, :attr:`Graph.children`: rows naming that task), and a row whose
count reaches zero is ready. With one row per task this is the usual per-edge rule.

Every pass here is linear in rows + list entries (numba), so the full v2018 trace (14.3M rows)
is validated in seconds. Ranks, earliest starts, critical paths, levels and shapes over the graph
are in :mod:`schedlab.dag_measures`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import polars as pl

from schedlab.errors import JobSetError


@dataclass(frozen=True, slots=True)
class Graph:
    """The precedence graph of a jobs table, over its rows (in the table's order) and tasks.

    Tasks are numbered ``0 .. n_tasks - 1`` over all jobsets (a task belongs to one jobset).
    """

    task: np.ndarray
    """int64, shape ``(n_rows,)``: the task of each row."""
    task_rows: np.ndarray
    """int64, shape ``(n_tasks,)``: rows (instances) per task."""
    n_parents: np.ndarray
    """int32, shape ``(n_rows,)``: parent tasks each row waits for."""
    child_offsets: np.ndarray
    """int64, shape ``(n_tasks + 1,)``: the rows waiting for task ``t`` are
    ``children[child_offsets[t]:child_offsets[t + 1]]`` (CSR)."""
    children: np.ndarray
    """int64, shape ``(n_edges,)``: child rows, ascending within each task."""
    order: np.ndarray
    """int64, shape ``(n_rows,)``: the rows in a topological order (parents' rows first)."""

    @property
    def n_edges(self) -> int:
        """(row, parent task) pairs: list entries of ``parents``."""
        return int(self.children.size)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (parent task, child row) pair: two int64 arrays of shape ``(n_edges,)``."""
        parent = np.repeat(np.arange(self.task_rows.size), np.diff(self.child_offsets))
        return parent, self.children


def graph(jobs: pl.DataFrame) -> Graph:
    """The precedence graph of ``jobs`` (rows in its order), validated.

    Parameters
    ----------
    jobs
        A jobs table with ``jobset`` and ``job_id``; ``parents``, ``task`` and ``dag`` are
        optional (without ``parents`` no row waits).

    Raises
    ------
    JobSetError
        Naming the jobset and job_id: a null parent, a parent that is no task of the row's
        jobset, a task named twice by one row, rows of one task in different dags, a parent in
        another dag, a dependency cycle (with the job ids on it).
    """
    n = jobs.height
    jobset = jobs.get_column("jobset").to_numpy()
    job_id = jobs.get_column("job_id").to_numpy()
    if "task" in jobs.columns and jobs.get_column("task").null_count():
        _fail(jobs, int(jobs.get_column("task").is_null().arg_true()[0]), "has no task key")
    key = jobs.get_column("task").to_numpy() if "task" in jobs.columns else job_id
    counts, flat = _lists(jobs)
    starts = np.zeros(n + 1, np.int64)  # the entries of row r: flat[starts[r]:starts[r + 1]]
    np.cumsum(counts, out=starts[1:])
    task, tj, tk = _tasks(jobset, key)
    parent = _lookup(jobset, starts, flat, tj, tk)
    if (bad := np.flatnonzero(parent < 0)).size:
        e = int(bad[0])
        r = _row(starts, e)
        _fail(jobs, r, f"names parent {flat[e]}, which is no task of jobset {jobset[r]}")
    offsets, children = _csr(parent, starts, tj.size)
    if (e := _repeated(offsets, children)) >= 0:
        t = int(np.searchsorted(offsets, e, side="right") - 1)
        _fail(jobs, int(children[e]), f"names parent {tk[t]} twice")
    first = _first_rows(task, tj.size)
    if "dag" in jobs.columns:
        _check_dags(jobs, task, first, starts, parent)
    del parent
    task_rows = np.bincount(task, minlength=tj.size)
    order, done = topological_order(task, task_rows, counts, offsets, children)
    if done < n:
        parent = _lookup(jobset, starts, flat, tj, tk)  # again: freed for the order's sake
        cycle = _cycle(order[done:], task, starts, parent, tj.size)
        ids = " -> ".join(str(job_id[r]) for r in cycle)
        _fail(jobs, int(cycle[0]), f"is on a dependency cycle (job_ids {ids})")
    return Graph(task, task_rows, counts, offsets, children, order)


def _fail(jobs: pl.DataFrame, row: int, what: str) -> None:
    k, j = jobs.get_column("jobset")[row], jobs.get_column("job_id")[row]
    msg = f"column 'parents': jobset {k}, job_id {j} (row {row}) {what}"
    raise JobSetError(msg)


def _lists(jobs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Entries per row (int32, a null list counts 0) and the entries flat (int64)."""
    if "parents" not in jobs.columns:
        return np.zeros(jobs.height, np.int32), np.empty(0, np.int64)
    lists = jobs.get_column("parents")
    counts = lists.list.len().fill_null(0).cast(pl.Int32).to_numpy()
    flat = lists.explode(empty_as_null=False, keep_nulls=False)
    if flat.null_count():
        nulls = lists.list.drop_nulls().list.len().fill_null(0).to_numpy() != counts
        _fail(jobs, int(np.flatnonzero(nulls)[0]), "names a null parent")
    return counts, flat.to_numpy()


def _row(starts: np.ndarray, entry: int) -> int:
    """The row of list entry ``entry``."""
    return int(np.searchsorted(starts, entry, side="right") - 1)


def _tasks(jobset: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Task of each row (int64) and the tasks' (jobset, key), sorted lexicographically."""
    if _strictly_sorted(jobset, key):  # a task per row, in order: no copies
        return np.arange(jobset.size, dtype=np.int64), jobset, key
    order = np.empty(0, np.int64) if _sorted(jobset, key) else np.lexsort((key, jobset))
    numbered: tuple[np.ndarray, np.ndarray, np.ndarray] = _number(jobset, key, order)
    return numbered


@numba.njit(cache=True)
def _strictly_sorted(a: np.ndarray, b: np.ndarray) -> bool:
    for i in range(1, a.size):
        if a[i] < a[i - 1] or (a[i] == a[i - 1] and b[i] <= b[i - 1]):
            return False
    return True


@numba.njit(cache=True)
def _sorted(a: np.ndarray, b: np.ndarray) -> bool:
    for i in range(1, a.size):
        if a[i] < a[i - 1] or (a[i] == a[i - 1] and b[i] < b[i - 1]):
            return False
    return True


@numba.njit(cache=True)
def _number(
    jobset: np.ndarray, key: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense task numbers in (jobset, key) order (``order`` empty: rows already sorted)."""
    n = jobset.size
    task = np.empty(n, np.int64)
    tj = np.empty(n, jobset.dtype)
    tk = np.empty(n, key.dtype)
    m = -1
    for i in range(n):
        r = i if order.size == 0 else order[i]
        if m < 0 or jobset[r] != tj[m] or key[r] != tk[m]:
            m += 1
            tj[m], tk[m] = jobset[r], key[r]
        task[r] = m
    return task, tj[: m + 1], tk[: m + 1]


@numba.njit(cache=True)
def _find(tj: np.ndarray, tk: np.ndarray, j: int, v: int) -> int:
    """The task (jobset ``j``, key ``v``) by binary search in the sorted tasks, -1 if none."""
    lo, hi = 0, tj.size
    while lo < hi:
        mid = (lo + hi) // 2
        if tj[mid] < j or (tj[mid] == j and tk[mid] < v):
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < tj.size and tj[lo] == j and tk[lo] == v else -1


@numba.njit(cache=True)
def _lookup(
    jobset: np.ndarray, starts: np.ndarray, flat: np.ndarray, tj: np.ndarray, tk: np.ndarray
) -> np.ndarray:
    """The task each list entry names, in its row's jobset (-1 if none).

    Keys are usually dense within a jobset (job ids 0, 1, ...): the task of key ``v`` is then
    at ``first + v - tk[first]`` (``first``: the jobset's first task, found once per run of
    rows of one jobset); binary search when it is not.
    """
    out = np.empty(flat.size, np.int64)
    j, first = -1, -1
    for r in range(jobset.size):
        if starts[r] == starts[r + 1]:
            continue
        if jobset[r] != j or first < 0:
            j = jobset[r]
            lo, hi = 0, tj.size
            while lo < hi:  # the first task of jobset j
                mid = (lo + hi) // 2
                if tj[mid] < j:
                    lo = mid + 1
                else:
                    hi = mid
            first = lo
        for e in range(starts[r], starts[r + 1]):
            v = flat[e]
            guess = first + v - tk[first] if first < tj.size else -1
            if 0 <= guess < tj.size and tj[guess] == j and tk[guess] == v:
                out[e] = guess
            else:
                out[e] = _find(tj, tk, j, v)
    return out


@numba.njit(cache=True)
def _csr(parent: np.ndarray, starts: np.ndarray, n_tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """Children of each task (a stable counting sort of the entries by the task they name)."""
    offsets = np.zeros(n_tasks + 1, np.int64)
    for e in range(parent.size):
        offsets[parent[e] + 1] += 1
    for t in range(n_tasks):
        offsets[t + 1] += offsets[t]
    children = np.empty(parent.size, np.int64)
    for r in range(starts.size - 1):  # offsets[t] is task t's cursor, then its end
        for e in range(starts[r], starts[r + 1]):
            children[offsets[parent[e]]] = r
            offsets[parent[e]] += 1
    for t in range(n_tasks, 0, -1):
        offsets[t] = offsets[t - 1]
    offsets[0] = 0
    return offsets, children


@numba.njit(cache=True)
def _repeated(offsets: np.ndarray, children: np.ndarray) -> int:
    """The first edge repeating its predecessor (a row naming one task twice), or -1."""
    for t in range(offsets.size - 1):
        for e in range(offsets[t] + 1, offsets[t + 1]):
            if children[e] == children[e - 1]:
                return e
    return -1


@numba.njit(cache=True)
def _first_rows(task: np.ndarray, n_tasks: int) -> np.ndarray:
    first = np.full(n_tasks, -1, np.int64)
    for r in range(task.size - 1, -1, -1):
        first[task[r]] = r
    return first


def _check_dags(
    jobs: pl.DataFrame, task: np.ndarray, first: np.ndarray, starts: np.ndarray, parent: np.ndarray
) -> None:
    """Every row of a task in one dag, and every parent task in its child's dag."""
    dag = jobs.get_column("dag")
    if dag.null_count():
        row = int(dag.is_null().arg_true()[0])
        k, j = jobs.get_column("jobset")[row], jobs.get_column("job_id")[row]
        msg = f"column 'dag' has a missing value at row {row} (jobset {k}, job_id {j})"
        raise JobSetError(msg)
    d = dag.to_numpy()
    r, e = _dag_mismatch(d, task, first, starts, parent)
    if e < 0 and r >= 0:
        other = d[first[task[r]]]
        _fail(jobs, r, f"is in dag {d[r]} but another row of its task is in dag {other}")
    if e >= 0:
        p = int(first[parent[e]])
        j = jobs.get_column("job_id")[p]
        _fail(jobs, r, f"in dag {d[r]} waits for job_id {j} in dag {d[p]}")


@numba.njit(cache=True)
def _dag_mismatch(
    d: np.ndarray, task: np.ndarray, first: np.ndarray, starts: np.ndarray, parent: np.ndarray
) -> tuple[int, int]:
    """The first row in another dag than its task's first row (row, -1), else the first entry
    naming a task of another dag (row, entry), else (-1, -1)."""
    for r in range(task.size):
        if d[r] != d[first[task[r]]]:
            return r, -1
    for r in range(task.size):
        for e in range(starts[r], starts[r + 1]):
            if d[r] != d[first[parent[e]]]:
                return r, e
    return -1, -1


@numba.njit(cache=True)
def topological_order(
    task: np.ndarray,
    task_rows: np.ndarray,
    n_parents: np.ndarray,
    offsets: np.ndarray,
    children: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Kahn's algorithm over rows (the arrays of :class:`Graph`): a task is done when its last
    row is; returns the order (int64, ``(n,)``) and how many rows it reached (fewer than all:
    a cycle, the rows on it last)."""
    n = task.size
    pending = n_parents.copy()
    left = task_rows.copy()
    order = np.empty(n, np.int64)
    head, tail = 0, 0
    for r in range(n):
        if pending[r] == 0:
            order[tail] = r
            tail += 1
    while head < tail:
        r = order[head]
        head += 1
        t = task[r]
        left[t] -= 1
        if left[t] == 0:
            for e in range(offsets[t], offsets[t + 1]):
                c = children[e]
                pending[c] -= 1
                if pending[c] == 0:
                    order[tail] = c
                    tail += 1
    if tail < n:  # append the rows never reached, so that order[tail:] lists them
        seen = np.zeros(n, np.bool_)
        for i in range(tail):
            seen[order[i]] = True
        k = tail
        for r in range(n):
            if not seen[r]:
                order[k] = r
                k += 1
    return order, tail


@numba.njit(cache=True)
def _cycle(
    stuck: np.ndarray, task: np.ndarray, starts: np.ndarray, parent: np.ndarray, n_tasks: int
) -> np.ndarray:
    """Rows of one cycle among the ``stuck`` rows (each waits, through a stuck parent task, for
    another stuck row): walk to a stuck row of a stuck parent task until a row repeats.
    ``parent[e]`` is the task entry ``e`` of the parent lists names (:func:`_lookup`)."""
    row_of = np.full(n_tasks, -1, np.int64)  # one stuck row per task
    for r in stuck:
        row_of[task[r]] = r
    pos = np.full(task.size, -1, np.int64)
    path = np.empty(stuck.size + 1, np.int64)
    r, k = stuck[0], 0
    while pos[r] < 0:
        pos[r] = k
        path[k] = r
        k += 1
        nxt = -1
        for e in range(starts[r], starts[r + 1]):
            t = parent[e]
            if row_of[t] >= 0:
                nxt = row_of[t]
                break
        r = nxt
    out = path[pos[r] : k + 1].copy()
    out[k - pos[r]] = r
    return out
