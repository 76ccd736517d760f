"""Which processors (units of the first resource) each job held: an allocation for drawing and
for Batsim's ``allocated_resources``.

The simulator pools each machine's capacity (a job fits if its demand fits into the machine's
free capacity), so a schedule says how many units a job held, not which. :func:`allocate` gives
every job concrete units, numbered ``0 .. capacity − 1`` over the cluster (machine ``m`` of
``c`` units owns ``m·c .. (m+1)·c − 1``): at each start, the job takes the lowest-numbered units
of its machine that are free then (jobs finishing at that time free theirs first). Any schedule
that respects capacity gets an allocation this way; a job may get several ranges (the units
free at its start need not be contiguous), as on a real cluster without a contiguity
constraint. ``O(n log n + n·c)`` for ``n`` jobs on machines of ``c`` units.
"""

from __future__ import annotations

import numba
import numpy as np
import polars as pl

from schedlab.errors import ResultsError

INTEGER_TOLERANCE = 1e-9
"""How far from a whole number a demand may be and still count as that many units."""


@numba.njit(cache=True)
def _allocate(
    start: np.ndarray, finish: np.ndarray, units: np.ndarray, machine: np.ndarray, per: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """(job, first unit, last unit) per contiguous range, and whether every job got its units."""
    n = start.size
    n_machines = machine.max() + 1 if n else 1
    busy = np.zeros(n_machines * per, np.int64) - 1  # the job holding each unit, -1: free
    key = np.concatenate((2 * finish, 2 * start + 1))  # at one time, finishes first
    order = np.argsort(key, kind="mergesort")
    out_j = np.empty(n + int(units.sum()), np.int64)
    out_lo = np.empty_like(out_j)
    out_hi = np.empty_like(out_j)
    m = 0
    ok = True
    for e in order:
        j = e % n
        base = machine[j] * per
        if e < n:  # finish: free the job's units
            for u in range(base, base + per):
                if busy[u] == j:
                    busy[u] = -1
            continue
        need = units[j]
        u = base
        while need > 0 and u < base + per:
            if busy[u] == -1:
                lo = u
                while u < base + per and busy[u] == -1 and need > 0:
                    busy[u] = j
                    need -= 1
                    u += 1
                out_j[m], out_lo[m], out_hi[m] = j, lo, u - 1
                m += 1
            else:
                u += 1
        if need > 0:
            ok = False
    return out_j[:m], out_lo[:m], out_hi[:m], ok


def allocate(jobs: pl.DataFrame, resource: str, capacity: float, machines: int = 1) -> pl.DataFrame:
    """Units of ``resource`` held by each job of one schedule.

    Parameters
    ----------
    jobs
        One schedule (one policy on one jobset): ``start``, ``finish`` (steps), the demand
        column ``resource`` (whole units) and ``machine`` when ``machines > 1``.
    resource
        The demand column to allocate (e.g. ``procs``).
    capacity
        The cluster's capacity of ``resource`` (all machines together), whole units.
    machines
        Identical machines the capacity is split over.

    Returns
    -------
    polars.DataFrame
        One row per contiguous range a job holds: ``row`` (the job's row in ``jobs``), ``first``
        and ``last`` (int64, inclusive unit numbers).

    Raises
    ------
    ResultsError
        If a demand or a machine's capacity is not a whole number of units, or the schedule
        holds more units than a machine has at some time (it was not simulated on this
        cluster).
    """
    demand = jobs.get_column(resource).cast(pl.Float64).to_numpy()
    units = np.rint(demand)
    per = capacity / machines
    bad = np.flatnonzero(np.abs(demand - units) > INTEGER_TOLERANCE)
    if bad.size or abs(per - round(per)) > INTEGER_TOLERANCE:
        what = (
            f"row {int(bad[0])} demands {demand[bad[0]]:g} {resource}"
            if bad.size
            else f"a machine has {per:g} {resource}"
        )
        msg = f"allocating {resource} needs whole units: {what}"
        raise ResultsError(msg)
    machine = (
        jobs.get_column("machine").to_numpy().astype(np.int64)
        if machines > 1 and "machine" in jobs.columns
        else np.zeros(jobs.height, np.int64)
    )
    j, lo, hi, ok = _allocate(
        jobs.get_column("start").to_numpy().astype(np.int64),
        jobs.get_column("finish").to_numpy().astype(np.int64),
        units.astype(np.int64),
        machine,
        round(per),
    )
    if not ok:
        msg = (
            f"the schedule holds more {resource} than a machine's {per:g} at some time: it was "
            "not simulated on this cluster"
        )
        raise ResultsError(msg)
    return pl.DataFrame({"row": j, "first": lo, "last": hi})


def procset(ranges: pl.DataFrame, n_jobs: int) -> list[str]:
    """Each job's units as an interval set string (``"0-3 7"``: Batsim's and evalys' form),
    from :func:`allocate`'s ranges; ``""`` for a job holding none."""
    text = [[] for _ in range(n_jobs)]  # type: list[list[str]]
    for row, first, last in ranges.sort("row", "first").iter_rows():
        text[row].append(str(first) if first == last else f"{first}-{last}")
    return [" ".join(t) for t in text]
