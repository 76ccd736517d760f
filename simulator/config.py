"""Geometry of the simulated cluster and its queue (design.md §5, §8; seed 002 §II)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
