"""What the models over per-env state arrays (:class:`~schedlab.simulator.cluster.batched.
BatchedEngine`, :class:`~schedlab.simulator.pick.engine.PickEngine`) read off their state for
the :class:`~schedlab.simulator.model.Model` protocol: how many envs, how many machines."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class EnvArrays(Protocol):
    """The state arrays the sizes are read from."""

    @property
    def lo(self) -> np.ndarray:
        """int64, ``(B,)``: each env's first job row."""
        ...

    @property
    def free(self) -> np.ndarray:
        """float64, ``(B, ..., m, d)``: each env's free capacity per machine (and resource)."""
        ...


class StateSizes:
    """``n_envs`` and ``machines`` of a model whose ``state`` holds :class:`EnvArrays`."""

    state: EnvArrays

    @property
    def n_envs(self) -> int:
        """B."""
        return int(self.state.lo.size)

    @property
    def machines(self) -> int:
        """m."""
        return int(self.state.free.shape[-2])
