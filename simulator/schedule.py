"""What a simulation of the cluster model returns: :class:`Schedule`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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
