"""Geometry of the single-pool cluster (design.md §5, §8)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterConfig:
    """Queue and horizon geometry; capacities come from the JobSet's metadata."""

    slots: int = 10
    """M: visible job slots; waiting jobs beyond them wait in the backlog (never dropped)."""
    horizon: int = 20
    """T: look-ahead steps of the occupancy image and of earliest-fit placement."""
    backlog_view: int = 60
    """Backlog jobs shown in the observation; more keep waiting and are counted."""

    def __post_init__(self) -> None:
        for name in ("slots", "horizon", "backlog_view"):
            if getattr(self, name) < 1:
                msg = f"ClusterConfig.{name} must be >= 1, got {getattr(self, name)}"
                raise ValueError(msg)
