"""Task DAGs of Alibaba cluster-trace-v2018 ``batch_task``: names -> edges -> a clean DAG.

A DAG task's name is a letter code, its index and the indices of the tasks it depends on:
``M5_3_4`` is task 5 of its job and depends on tasks 3 and 4 of the same job. Names like
``task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw==`` and ``MergeTask`` are independent tasks. The real names
have quirks (alibaba/clusterdata issues #76 and #115), each handled and counted (the names are
parsed by :func:`schedlab.loaders.traces.alibaba2018_scan.scan`; the edges are cleaned here):

* ``_Stg<N>`` suffix (``J10_7_9_Stg4``): a stage marker, not a dependency; stripped.
* Names cut at 50 characters: the parents after the cut are lost, and the last number may be a
  prefix of the real one (``M5_..._100_1`` where the trace meant ``_101``), which creates false
  and even cyclic dependencies. In a 50-character name that does not end with ``_`` the last
  parent is dropped (a name ending with ``_`` was cut right after a complete number).
* Self dependencies (``M5_5``), repeated parents (``R5_3_3``), parents that name no task of the
  job, and cycles (what remains of truncation) are removed edge by edge.

Resolution and cycle breaking run per job in compiled linear-time kernels (numba; the rest is
columnar): each job's tasks are looked up by index, then a depth-first search from the tasks in
file order removes every edge that closes a cycle (an edge to a task still on the DFS stack), and
its post-order gives each task's *critical path*: its own duration plus the longest critical path
among its parents (the job's length with unlimited machines and no queueing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import polars as pl

LOOKUP = 1 << 20
"""Task indices below this are resolved through a lookup table."""
OK, SELF, DUPLICATE, MISSING, CYCLIC, NOT_KEPT = 0, 1, 2, 3, 4, 5
EDGE_FIXES = {
    SELF: "self_dependency_removed",
    DUPLICATE: "duplicate_parent_removed",
    MISSING: "missing_parent_removed",
    CYCLIC: "cyclic_dependency_removed",
    NOT_KEPT: "dropped_parent_removed",
}
"""Fix names (kept rows that lost at least one edge) per edge code."""


@dataclass(frozen=True, slots=True)
class Dag:
    """The clean DAG over the kept rows (positions ``0..n-1`` of the parsed table).

    ``offsets`` (n + 1) and ``parent`` / ``code`` (one per parsed edge) form a CSR table: the
    edges of row ``i`` are ``offsets[i]:offsets[i+1]``; ``parent`` is the parent's row (or -1)
    and ``code`` is :data:`OK` or why the edge was removed. ``critical_path`` is per row, in the
    units of the durations given.
    """

    offsets: np.ndarray
    parent: np.ndarray
    code: np.ndarray
    critical_path: np.ndarray

    def fixes(self) -> dict[str, int]:
        """Rows that lost at least one edge, per reason."""
        bad = np.flatnonzero(self.code != OK)
        child = np.searchsorted(self.offsets, bad, side="right") - 1
        out = {}
        for code, name in EDGE_FIXES.items():
            n = np.unique(child[self.code[bad] == code]).size
            if n:
                out[name] = n
        return out


def build_dag(
    job: np.ndarray,
    idx: np.ndarray,
    lengths: np.ndarray,
    parents: np.ndarray,
    duration: np.ndarray,
    dropped: pl.DataFrame,
    *,
    critical_path: bool = False,
) -> Dag:
    """Resolve parent indices to rows within each job, remove bad edges, compute critical paths.

    Parameters
    ----------
    job, idx
        Job key (int64) and task index (int32, -1 for non-DAG tasks) of each kept row.
    lengths, parents
        Number of parsed parents per row and their task indices, flattened (int32).
    duration
        Per-row duration used for the critical path (float64).
    dropped
        ``job`` and ``idx`` of rows that exist in the file but were dropped (malformed or not
        selected): edges to them are removed as :data:`NOT_KEPT` rather than :data:`MISSING`.
    critical_path
        Compute :attr:`Dag.critical_path` (else it is empty).
    """
    n = job.size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    order = _grouped_order(job)
    starts = _segment_starts(job, order)
    per_row = lengths if order is None else lengths[order]
    k_max = int(np.diff(starts).max()) if n else 0
    e_max = int(np.add.reduceat(per_row, starts[:-1]).max()) if n else 0
    parent = np.full(parents.size, -1, dtype=np.int32)
    code = np.zeros(parents.size, dtype=np.uint8)
    cp = np.zeros(n if critical_path else 0, dtype=np.float64)
    order = np.empty(0, dtype=np.int64) if order is None else order
    _resolve(starts, order, idx, offsets, parents, duration, parent, code, cp, k_max, max(e_max, 1))
    missing = np.flatnonzero(code == MISSING)
    if missing.size and dropped.height:
        child = np.searchsorted(offsets, missing, side="right") - 1
        probe = pl.DataFrame({"job": job[child], "idx": parents[missing], "_e": missing})
        known = dropped.select(pl.col("job"), pl.col("idx").cast(pl.Int32)).unique()
        hit = probe.join(known, on=["job", "idx"], how="semi").get_column("_e").to_numpy()
        code[hit] = NOT_KEPT
    return Dag(offsets, parent, code, cp)


def _grouped_order(job: np.ndarray) -> np.ndarray | None:
    """None if each job's rows are contiguous (as in the trace), else a stable order by job."""
    if job.size == 0:
        return None
    change = np.flatnonzero(job[1:] != job[:-1]) + 1
    heads = job[np.concatenate([[0], change])]
    if np.unique(heads).size == heads.size:
        return None
    return np.argsort(job, kind="stable").astype(np.int64)


def _segment_starts(job: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    keys = job if order is None else job[order]
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return np.concatenate([[0], change, [job.size]]).astype(np.int64)


@numba.njit(cache=True)
def _resolve(starts, order, idx, offsets, parents, duration, parent, code, cp, k_max, e_max):
    """Per job: look parents up by index, flag bad edges, break cycles, critical paths.

    Task indices below ``LOOKUP`` are looked up in a table (the usual case); a job with a larger
    index is resolved by binary search over its indices sorted.
    """
    width = 1
    for i in range(idx.size):
        width = max(width, min(idx[i] + 1, LOOKUP))
    table = np.full(width, -1, dtype=np.int64)  # task index -> local row (first wins)
    seen = np.full(width, -1, dtype=np.int64)  # task index -> last child row naming it
    rows = np.empty(k_max, dtype=np.int64)
    local = np.empty(k_max, dtype=np.int64)  # task index of each local row
    srt = np.empty(k_max, dtype=np.int64)  # local rows sorted by task index (stable)
    sidx = np.empty(k_max, dtype=np.int64)
    base = np.empty(k_max, dtype=np.int64)  # first edge of each local row in `target`
    target = np.empty(e_max, dtype=np.int64)  # local parent of each edge
    color = np.empty(k_max, dtype=np.uint8)
    ptr = np.empty(k_max, dtype=np.int64)
    stack = np.empty(k_max, dtype=np.int64)
    for s in range(starts.size - 1):
        a, k = starts[s], starts[s + 1] - starts[s]
        total, big = 0, False
        for i in range(k):
            g = a + i if order.size == 0 else order[a + i]
            rows[i] = g
            local[i] = idx[g]
            base[i] = total
            total += offsets[g + 1] - offsets[g]
            big = big or local[i] >= width
        if total == 0 and cp.size == 0:
            continue
        if big:
            _sort_local(local, srt, sidx, k)
        else:
            for i in range(k - 1, -1, -1):
                if local[i] >= 0:
                    table[local[i]] = i
        for i in range(k):  # helpers are written out: calls here cost several times more
            g = rows[i]
            lo = offsets[g]
            for e in range(lo, offsets[g + 1]):
                target[base[i] + e - lo] = -1
                p = parents[e]
                if p == local[i]:
                    code[e] = SELF
                    continue
                repeated = False
                if p < width:
                    repeated = seen[p] == g
                    seen[p] = g
                else:
                    for f in range(lo, e):
                        if parents[f] == p:
                            repeated = True
                            break
                if repeated:
                    code[e] = DUPLICATE
                    continue
                j = -1
                if not big:
                    if p < width:
                        j = table[p]
                else:
                    j = _bisect(sidx, k, p)
                    j = srt[j] if j < k and sidx[j] == p else -1
                if j >= 0:
                    target[base[i] + e - lo] = j
                    parent[e] = rows[j]
                else:
                    code[e] = MISSING
        if not big:
            for i in range(k):
                if local[i] >= 0:
                    table[local[i]] = -1
        _dfs(k, rows, offsets, code, target, base, duration, cp, color, ptr, stack)


@numba.njit(cache=True)
def _bisect(sorted_values, k, p):
    """First position in ``sorted_values[:k]`` whose value is >= ``p``."""
    lo, hi = 0, k
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_values[mid] < p:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _sort_local(local, srt, sidx, k):
    """Stable order of ``local[:k]`` into ``srt`` and the sorted values into ``sidx``."""
    if k <= 32:
        for i in range(k):
            v, j = local[i], i
            while j > 0 and sidx[j - 1] > v:
                sidx[j], srt[j] = sidx[j - 1], srt[j - 1]
                j -= 1
            sidx[j], srt[j] = v, i
    else:
        o = np.argsort(local[:k], kind="mergesort")
        for i in range(k):
            srt[i], sidx[i] = o[i], local[o[i]]


@numba.njit(cache=True)
def _dfs(k, rows, offsets, code, target, base, duration, cp, color, ptr, stack):
    """Remove edges that close a cycle (to a task on the DFS stack); post-order critical paths."""
    color[:k] = 0  # 0 new, 1 on the stack, 2 done
    ptr[:k] = 0
    for root in range(k):
        if color[root]:
            continue
        top = 0
        stack[0] = root
        color[root] = 1
        while top >= 0:
            v = stack[top]
            g = rows[v]
            lo, hi = offsets[g], offsets[g + 1]
            if lo + ptr[v] < hi:
                e = lo + ptr[v]
                ptr[v] += 1
                if code[e] != OK:
                    continue
                u = target[base[v] + e - lo]
                if color[u] == 1:
                    code[e] = CYCLIC
                elif color[u] == 0:
                    color[u] = 1
                    top += 1
                    stack[top] = u
            else:
                if cp.size:
                    best = 0.0
                    for e in range(lo, hi):
                        if code[e] == OK:
                            best = max(best, cp[rows[target[base[v] + e - lo]]])
                    cp[g] = duration[g] + best
                color[v] = 2
                top -= 1


def parent_lists(
    dag: Dag, rows: np.ndarray, job_id: np.ndarray, jobset: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The ``parents`` of the kept jobs, flat: per job (in order) its number of parents, their
    job ids, and how many jobs lost an edge (see :func:`list_column` for the Series).

    ``rows`` holds each job's row in the DAG (in job order); ``job_id`` and ``jobset`` are per
    DAG row (-1 when the row is not a job). An edge is kept when its parent is a job of the same
    jobset.
    """
    return _emit(rows, job_id, jobset, dag.offsets, dag.parent, dag.code)


def list_column(counts: np.ndarray, values: np.ndarray, chunk: int = 1 << 21) -> pl.Series:
    """A List(Int64) Series: row ``i`` holds the next ``counts[i]`` of ``values``.

    Polars has no list constructor from offsets, so each row's index range (``int_ranges``) is
    gathered from one list holding all values; done in chunks of rows to bound the memory.
    """
    if counts.size == 0:
        return pl.Series(values=[], dtype=pl.List(pl.Int64))
    ends = np.cumsum(counts, dtype=np.int64)
    parts = []
    for a in range(0, counts.size, chunk):
        b = min(a + chunk, counts.size)
        lo = int(ends[a - 1]) if a else 0
        end = pl.Series(ends[a:b] - lo)
        start = end - pl.Series(counts[a:b].astype(np.int64))
        flat = pl.lit(pl.Series(values[lo : int(ends[b - 1])])).implode()
        parts.append(pl.select(flat.list.gather(pl.int_ranges(start, end))).to_series())
    return pl.concat(parts, rechunk=False)


@numba.njit(cache=True)
def _emit(rows, job_id, jobset, offsets, parent, code):
    """Per job (in ``rows`` order): how many parents are kept, their job ids (flat), and how
    many jobs lost an edge to a parent outside their jobset. Edges are read in DAG-row order
    (sequential); only each job's output block is placed by its position."""
    n = offsets.size - 1
    kept = np.zeros(n, dtype=np.int32)
    lost = 0
    for g in range(n):
        if job_id[g] < 0:
            continue
        missed = False
        for e in range(offsets[g], offsets[g + 1]):
            if code[e] == OK:
                p = parent[e]
                if job_id[p] >= 0 and jobset[p] == jobset[g]:
                    kept[g] += 1
                else:
                    missed = True
        lost += missed
    counts = np.empty(rows.size, dtype=np.int32)
    start = np.empty(n, dtype=np.int64)
    total = 0
    for r in range(rows.size):
        g = rows[r]
        counts[r] = kept[g]
        start[g] = total
        total += kept[g]
    values = np.empty(total, dtype=np.int64)
    for g in range(n):
        if kept[g] == 0:
            continue
        pos = start[g]
        for e in range(offsets[g], offsets[g + 1]):
            if code[e] == OK:
                p = parent[e]
                if job_id[p] >= 0 and jobset[p] == jobset[g]:
                    values[pos] = job_id[p]
                    pos += 1
    return counts, values, lost
