"""Shared test helpers: hand-written jobsets and hypothesis strategies for small random ones.

Import as ``from tests.strategies import ...`` (pytest's importlib mode resolves ``tests`` as a
namespace package from the root directory).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from hypothesis import strategies as st

from schedlab import registry
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator

CAPACITY = (10.0, 10.0)
RESOURCES = ("cpu", "mem")

SCHEMA = {
    "jobset": pl.Int32,
    "job_id": pl.Int64,
    "arrival": pl.Int64,
    "duration": pl.Int64,
    "cpu": pl.Float64,
    "mem": pl.Float64,
}
Row = tuple[int, int, float, float]
"""One hand-written job: ``(arrival, duration, cpu, mem)``."""


def meta(capacity: Sequence[float] = CAPACITY) -> JobSetMeta:
    """Metadata of a two-resource cluster (``cpu``, ``mem``) with ``capacity``."""
    return JobSetMeta(resources=RESOURCES, capacity=tuple(float(c) for c in capacity))


def jobset_from_rows(
    rows: Sequence[Row] | Sequence[Sequence[Row]], capacity: Sequence[float] = CAPACITY
) -> JobSet:
    """A JobSet from hand-written jobs; ``job_id`` is the position of the row in its jobset.

    ``rows`` is one jobset (a list of rows) or several (a list of lists, jobset ids 0, 1, ...).
    """
    groups = rows if rows and isinstance(rows[0][0], tuple | list) else [rows]
    records = [(k, i, *row) for k, group in enumerate(groups) for i, row in enumerate(group)]
    frame = pl.DataFrame(records, schema=SCHEMA, orient="row")
    return JobSet.create(frame, meta(capacity))


def jobs_frame(*, first_id: int = 0, **columns: Sequence[object] | pl.Series) -> pl.DataFrame:
    """An unvalidated jobs table of jobset 0: ``job_id`` counts up from ``first_id``, then
    ``columns`` in the order given (each holds one value a job; a ``jobset`` column replaces 0s)."""
    n = len(next(iter(columns.values())))
    keys = {
        "jobset": pl.Series([0] * n, dtype=SCHEMA["jobset"]),
        "job_id": range(first_id, first_id + n),
    }
    return pl.DataFrame({**keys, **columns})


def heuristic_names() -> list[str]:
    """Registered policies that are heuristics (learned ones need a checkpoint to be made)."""
    return registry.policies.names(tag="heuristic")


def deeprm_jobset(load: float, *, n_jobsets: int = 6, seed: int = 0) -> JobSet:
    """DeepRM jobsets (reference-code geometry: 2 resources of 10 slots) at offered ``load``."""
    return DeepRMGenerator().generate(load, n_jobsets=n_jobsets, seed=seed)


def demands(*, integer: bool = False, capacity: float = 10.0) -> st.SearchStrategy[float]:
    """One resource demand in ``[0, capacity]``.

    Whole slots when ``integer``; otherwise any float, or a decimal such as 4.6 or 10/3 whose
    sums and products round (exact fits and mathematically tied scores that round apart).
    """
    if integer:
        return st.integers(0, int(capacity)).map(float)
    decimals = [k / 10 * capacity / 10 for k in range(101)] + [capacity / 3, 2 * capacity / 3]
    return st.one_of(
        st.floats(0.0, capacity, allow_nan=False, allow_infinity=False),
        st.sampled_from(decimals),
    )


@st.composite
def jobsets(
    draw: st.DrawFn,
    *,
    max_jobsets: int = 3,
    max_jobs: int = 10,
    max_arrival: int = 12,
    max_duration: int = 6,
    integer: bool = False,
) -> JobSet:
    """Small random JobSets of 1..``max_jobsets`` jobsets with 1..``max_jobs`` jobs each.

    Two resources of capacity 10; arrivals in ``[0, max_arrival]`` (several jobs may arrive in
    the same step), durations in ``[1, max_duration]``, demands from :func:`demands`.
    """
    k = draw(st.integers(1, max_jobsets))
    groups: list[list[Row]] = []
    for _ in range(k):
        n = draw(st.integers(1, max_jobs))
        arrivals = sorted(draw(st.lists(st.integers(0, max_arrival), min_size=n, max_size=n)))
        group = [
            (
                a,
                draw(st.integers(1, max_duration)),
                draw(demands(integer=integer)),
                draw(demands(integer=integer)),
            )
            for a in arrivals
        ]
        groups.append(group)
    return jobset_from_rows(groups)


def jobset_arrays(jobset: JobSet) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, slice]]:
    """Per jobset: ``(arrival, duration, demand, rows)`` in engine order (rows of ``jobs``)."""
    ids = jobset.jobs.get_column("jobset").to_numpy()
    arrival = jobset.jobs.get_column("arrival").to_numpy()
    duration = jobset.jobs.get_column("duration").to_numpy()
    demand = jobset.demands()
    out = []
    for key in np.unique(ids):
        rows = np.flatnonzero(ids == key)
        sl = slice(int(rows[0]), int(rows[-1]) + 1)
        out.append((arrival[sl], duration[sl], demand[sl], sl))
    return out


def agent_cases(**geometry: st.SearchStrategy) -> dict[str, st.SearchStrategy]:
    """``@given`` arguments of the agent-mode property tests: one short jobset, an action
    ``seed`` and the cluster ``geometry`` strategies (e.g. ``horizon=``, ``slots=``)."""
    return {
        "jobset": jobsets(max_jobsets=1, max_duration=9),
        **geometry,
        "seed": st.integers(0, 2**32 - 1),
    }
