"""Geometry of the simulated cluster and its queue (design.md §5, §8; Chen et al. 2017, §II)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from schedlab.jobset import JobSet

Overrun = Literal["kill", "extend"]
"""What happens to a job that runs past its estimate (:attr:`ClusterConfig.overrun`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterConfig:
    """Queue, horizon and machine geometry; capacities come from the JobSet's metadata."""

    slots: int | None = 10
    """M: visible job slots; waiting jobs beyond them wait in the backlog (never dropped).
    None: the whole queue is visible (heuristics only; ties go to the earlier arrival)."""
    horizon: int = 20
    """T: look-ahead steps of the occupancy image and of earliest-fit placement."""
    backlog_view: int = 60
    """Backlog jobs shown in the observation; more keep waiting and are counted."""
    machines: int | None = None
    """m: identical machines sharing the JobSet's capacity (None: the JobSet's own count)."""
    overrun: Overrun = "kill"
    """A job that runs past its estimate (the JobSet's ``estimate`` column, the user's request):
    ``kill`` ends it at its estimate, as batch systems do; ``extend`` lets it run its whole
    duration. Nothing changes for a JobSet without estimates."""
    release: Literal["dag", "trace"] = "dag"
    """When a task of a DAG workload (a JobSet with ``parents``) may start at the earliest,
    besides after its parents: ``dag``, when its DAG job arrives (its first task's arrival);
    ``trace``, at its own arrival (:mod:`~schedlab.simulator.cluster.precedence`). Nothing
    changes for a JobSet without ``parents``."""

    def __post_init__(self) -> None:
        for name in ("slots", "horizon", "backlog_view", "machines"):
            value = getattr(self, name)
            if value is not None and value < 1:
                msg = f"ClusterConfig.{name} must be >= 1, got {value}"
                raise ValueError(msg)

    def n_machines(self, jobset_machines: int = 1) -> int:
        """m for a JobSet made for ``jobset_machines`` machines."""
        return self.machines if self.machines is not None else jobset_machines

    def machine_capacity(self, capacity: np.ndarray, jobset_machines: int = 1) -> np.ndarray:
        """One machine's capacity, shape ``(d,)``, when the JobSet's whole-cluster ``capacity``
        (made for ``jobset_machines`` machines) is spread over :meth:`n_machines` machines.

        A JobSet made for one pool and simulated on m machines keeps its per-machine
        capacity (the cluster grows); a JobSet of m machines keeps its machines' size.
        """
        return np.asarray(capacity, dtype=np.float64) / jobset_machines


def job_times(
    jobset: JobSet, overrun: Overrun, *, clairvoyant: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The steps every job runs and the length a scheduler sees of it, int64, shape ``(n,)``
    each (rows in ``jobset.jobs`` order).

    A job runs its ``duration``, or ``min(duration, estimate)`` under ``overrun="kill"``. The
    scheduler sees the ``estimate`` (the user's request) unless it is ``clairvoyant`` (it then
    sees the steps the job will run); without an ``estimate`` column both are ``duration``.
    """
    jobs = jobset.jobs
    duration = jobs.get_column("duration").to_numpy()
    if "estimate" not in jobs.columns:
        return duration, duration
    estimate = jobs.get_column("estimate").to_numpy()
    runtime = np.minimum(duration, estimate) if overrun == "kill" else duration
    return runtime, runtime if clairvoyant else estimate
