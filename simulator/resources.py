"""Resource accounting over a look-ahead window: small ``fits``/``allocate``/``advance`` steps."""

from __future__ import annotations

import numpy as np

from schedlab.simulator.scoring import EPS


class ResourceProfile:
    """Free capacity per future step: ``free[k, r]`` is free resource ``r`` at ``now + k``.

    Parameters
    ----------
    capacity : array, shape ``(d,)``
    length : int
        Steps tracked; must cover the longest allocation (horizon + longest duration).
    """

    def __init__(self, capacity: np.ndarray, length: int) -> None:
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.free = np.tile(self.capacity, (length, 1))

    def fits(self, demand: np.ndarray, offset: int, duration: int) -> bool:
        """Whether ``demand`` fits at every step of ``[offset, offset + duration)``."""
        return bool(np.all(self.free[offset : offset + duration] + EPS >= demand))

    def earliest_fit(self, demand: np.ndarray, duration: int, horizon: int) -> int | None:
        """Smallest offset ``o`` in ``[0, max(0, horizon - duration)]`` where the job fits.

        A job longer than the horizon can only start now (offset 0). Returns None if none fits.
        """
        window = self.free[: max(horizon, duration) + duration]
        ok = np.all(window + EPS >= demand, axis=1)
        for offset in range(max(0, horizon - duration) + 1):
            if ok[offset : offset + duration].all():
                return offset
        return None

    def allocate(self, demand: np.ndarray, offset: int, duration: int) -> None:
        """Reserve ``demand`` over ``[offset, offset + duration)``."""
        self.free[offset : offset + duration] -= demand

    def advance(self) -> None:
        """Move one step forward: the row of the current step is dropped, a free row appended."""
        self.free[:-1] = self.free[1:]
        self.free[-1] = self.capacity

    def used(self, horizon: int) -> np.ndarray:
        """Occupied capacity over the next ``horizon`` steps, shape ``(horizon, d)``."""
        return self.capacity - self.free[:horizon]
