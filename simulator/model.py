"""The contract between simulator models, views and policies (docs/architecture.md).

A **model** simulates ``B`` environments at once (:class:`Model`); a **view** turns a model's
:class:`Snapshot` into what a policy observes; a **policy** maps observations to actions with one
convention everywhere: ``0`` is void (time advances), ``a ≥ 1`` names a (job, target) pair. On
the cluster model, ``a = 1 + i·M + q`` places the job of visible slot ``q`` on machine ``i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What views may read of ``n`` environments of a cluster model (arrays are the model's own,
    indexed by env id: read, never write).

    ``free[b, k, i, r]``: free amount of resource ``r`` on machine ``i`` at ``now[b] + k``, shape
    ``(B, H, m, d)`` with ``H ≥ horizon``. ``view[b, q]``: job row in visible position ``q`` (-1:
    empty), shape ``(B, q)``. Job arrays are shared by all envs: ``demand`` (``(N, d)``),
    ``duration``, ``arrival`` (``(N,)``); ``base[b]`` is the row of env ``b``'s first job (a job's
    index in its jobset is ``row − base``).
    """

    envs: np.ndarray
    """int64, shape ``(n,)``: the env ids observed."""
    free: np.ndarray
    capacity: np.ndarray
    """float64, shape ``(d,)``: one machine's capacity."""
    view: np.ndarray
    demand: np.ndarray
    duration: np.ndarray
    arrival: np.ndarray
    base: np.ndarray
    """int64, shape ``(B,)``."""
    backlog: np.ndarray
    """int64, shape ``(B,)``: jobs waiting beyond the visible positions."""
    since: np.ndarray
    """int64, shape ``(B,)``: steps since the last arrival."""
    now: np.ndarray
    """int64, shape ``(B,)``."""
    horizon: int
    """T: steps of look-ahead an agent may place a job at."""
    backlog_view: int
    """Backlog jobs the cluster's configuration shows by default (a view may show another)."""

    @property
    def machines(self) -> int:
        """m."""
        return int(self.free.shape[2])


@dataclass(frozen=True, slots=True)
class Placements:
    """Where and when every job ran, per job row (int64, shape ``(n,)`` each)."""

    start: np.ndarray
    finish: np.ndarray
    target: np.ndarray
    """Machine (cluster model) or cluster (multi-cluster model) of each job."""


@runtime_checkable
class View(Protocol):
    """Turns a :class:`Snapshot` into an observation (never changes state)."""

    name: ClassVar[str]

    def observe(self, snapshot: Snapshot) -> Any:
        """The observation of ``snapshot.envs``."""
        ...


@runtime_checkable
class Model(Protocol):
    """``B`` environments simulated together (see the module docstring for actions)."""

    kind: ClassVar[str]

    @property
    def n_envs(self) -> int:
        """B."""
        ...

    @property
    def n_actions(self) -> int:
        """Actions per decision, void included."""
        ...

    @property
    def done(self) -> np.ndarray:
        """bool, shape ``(B,)``: every job of the env has been placed."""
        ...

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` (all by default); rewards of steps skipped before a decision."""
        ...

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """Apply one action per env (int, shape ``(n,)``); returns the rewards, shape ``(n,)``."""
        ...

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Valid actions, bool, shape ``(n, n_actions)``; column 0 (void) is always True."""
        ...

    def observe(self, view: View, envs: np.ndarray | None = None) -> Any:
        """What ``view`` shows of ``envs``."""
        ...

    def placements(self) -> Placements:
        """Start, finish and target of every job (valid once ``done``)."""
        ...
