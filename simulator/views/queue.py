"""The queue view: the structured state heuristics read (no image is built).

Its observation is the model's :class:`~schedlab.simulator.model.Snapshot` itself: per env the
free capacity of every machine now and ahead (``free``, shape ``(B, H, m, d)``), the visible jobs
in tie order (``view``) and the job arrays. Nothing is copied; policies must not write to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from schedlab.simulator.model import Snapshot


@dataclass(frozen=True, slots=True)
class QueueView:
    """Structured state for heuristics: the snapshot, unchanged."""

    name: ClassVar[str] = "queue"

    def observe(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` (read-only by convention)."""
        return snapshot
