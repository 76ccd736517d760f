"""What a simulation of the cluster model returns (:class:`Schedule`) and the protocol of the
policies that take its compiled fast paths (:class:`ListSchedulingRule`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class ListSchedulingRule(Protocol):
    """A policy that is a work-conserving list scheduler with compiled parts (the heuristics):
    the fast paths take its ``score`` and placement ``rule`` as arguments."""

    score: Any
    """Job-order score (:data:`~schedlab.simulator.cluster.dispatch.SCORE_SIGNATURE`)."""
    knob: float
    static: bool
    """The score depends only on the job."""
    uniform: bool
    """Pick uniformly among fitting jobs (draws from :meth:`uniforms`)."""

    @property
    def rule(self) -> int:
        """Placement rule (a code of :data:`~schedlab.simulator.cluster.placement.PLACEMENTS`)."""
        ...

    def uniforms(self, n: int) -> np.ndarray:
        """``n`` uniform draws of the current stream."""
        ...


@dataclass(frozen=True, slots=True)
class Schedule:
    """Start step and machine of every job (rows in ``jobset.jobs`` order), and for batched
    agents their withholding statistics."""

    start: np.ndarray
    machine: np.ndarray
    stats: dict[str, Any] | None = None
    reserved: np.ndarray | None = None
    """Under a queue discipline: the first reservation of every job (``NEVER``: none)."""
    ready: np.ndarray | None = None
    """For a DAG workload: when each task became ready (its release and its parents' finish,
    :mod:`.cluster.precedence`); None: at its arrival."""
