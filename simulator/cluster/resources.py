"""Resource accounting of the step engine over a look-ahead window, per machine.

The checks themselves (fits, earliest fit) are the compiled ones of :mod:`.placement`, shared
with the batched engine.
"""

from __future__ import annotations

import numpy as np

from schedlab.simulator.cluster.placement import EPS, earliest_fit


class ResourceProfile:
    """Free capacity per future step and machine: ``free[k, i, r]`` is the free amount of
    resource ``r`` on machine ``i`` at ``now + k``.

    Parameters
    ----------
    capacity : array, shape ``(d,)``
        One machine's capacity.
    machines : int
        m.
    length : int
        Steps tracked; must cover the longest allocation (horizon + longest duration).
    """

    def __init__(self, capacity: np.ndarray, machines: int, length: int) -> None:
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.free = np.tile(self.capacity, (length, machines, 1))

    def fits(self, demand: np.ndarray, machine: int, offset: int, duration: int) -> bool:
        """Whether ``demand`` fits on ``machine`` over ``[offset, offset + duration)``."""
        window = self.free[offset : offset + duration, machine]
        return bool(np.all(window + EPS >= demand))

    def earliest_fit(
        self, demand: np.ndarray, machine: int, duration: int, horizon: int
    ) -> int | None:
        """Smallest offset in ``[0, max(0, horizon − duration)]`` where the job fits on
        ``machine`` for its whole duration (a job longer than the horizon: offset 0 only)."""
        off = earliest_fit(self.free, machine, np.ascontiguousarray(demand), duration, horizon)
        return None if off < 0 else int(off)

    def allocate(self, demand: np.ndarray, machine: int, offset: int, duration: int) -> None:
        """Reserve ``demand`` on ``machine`` over ``[offset, offset + duration)``."""
        self.free[offset : offset + duration, machine] -= demand

    def advance(self) -> None:
        """Move one step forward: the row of the current step is dropped, a free row appended."""
        self.free[:-1] = self.free[1:]
        self.free[-1] = self.capacity

    def used(self, horizon: int) -> np.ndarray:
        """Occupied capacity over the next ``horizon`` steps summed over machines, shape
        ``(horizon, d)``."""
        result: np.ndarray = (self.capacity - self.free[:horizon]).sum(axis=1)
        return result
