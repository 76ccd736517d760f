"""Work-conserving list-scheduling heuristics (seed 000 §4.1, design.md §8).

Every heuristic sees only the ``M`` visible slots, considers only the jobs that fit *now* for their
whole duration, starts the job with the **strictly highest score (ties: lowest slot index)**, and
repeats until nothing fits. Scores live in :mod:`schedlab.simulator.scoring` so the compiled fast
path and the step engine share one definition.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import numpy as np

from schedlab.params import Typical
from schedlab.policies.base import ParamsMixin
from schedlab.simulator import scoring
from schedlab.simulator.engine import Engine


class Heuristic(ParamsMixin):
    """Base class: a named score; subclasses set ``name`` and ``code``."""

    name: ClassVar[str]
    code: ClassVar[int]
    knob: float = 0.0

    def reset(self, *, seed: int | None = None) -> None:
        """Deterministic heuristics keep no state."""

    def uniforms(self, n: int) -> np.ndarray:
        """Uniform draws for the compiled path (only Random uses them)."""
        return np.zeros(n)

    def act(self, state: Engine, *, mask: np.ndarray) -> int:
        """Slot with the strictly highest score among ``mask``; -1 if none fits."""
        best, best_score = -1, -np.inf
        free = state.resources.free[0]
        for s in np.flatnonzero(mask):
            j = int(state.slots[s])
            sc = scoring.score(
                self.code,
                self.knob,
                free,
                state.capacity,
                state.jobs.demand[j],
                int(state.jobs.duration[j]),
                int(state.jobs.arrival[j]),
                j,
                state.now,
            )
            if scoring.better(sc, best_score):
                best, best_score = int(s), sc
        return best


class SJF(Heuristic):
    """Shortest job first: score ``1 / duration``."""

    name, code = "sjf", scoring.SJF


class FCFS(Heuristic):
    """First come, first served among the jobs that fit now (earliest arrival, then job_id).

    It skips a head job that does not fit (a work-conserving list scheduler, like every heuristic
    here), rather than blocking behind it.
    """

    name, code = "fcfs", scoring.FCFS


class Packer(Heuristic):
    """Packer (Tetris' packing term): score = free resources now · demand (dot product)."""

    name, code = "packer", scoring.PACKER


class HRRN(Heuristic):
    """Highest response ratio next: score ``(wait + duration) / duration``."""

    name, code = "hrrn", scoring.HRRN


class TetrisStar(Heuristic):
    """Tetris*: ``knob · alignment + (1 − knob) / duration`` with both terms in [0, 1].

    ``alignment = (free · demand) / (capacity · capacity)`` normalises the packing score by its
    largest possible value, so it is on the same scale as the shortest-job term ``1 / duration``
    (design.md §8: the raw terms differ by ~100×). ``knob = 1`` is Packer's order, ``knob = 0``
    SJF's order; the default 0.5 weighs them equally.
    """

    name, code = "tetris", scoring.TETRIS

    def __init__(self, *, knob: Annotated[float, Typical(ge=0, le=1)] = 0.5) -> None:
        self.knob = knob


class RandomPolicy(Heuristic):
    """A uniformly random job among those that fit now.

    One uniform draw ``u`` per start picks the ``floor(u · k)``-th of the ``k`` fitting slots in
    slot order. Draws come from ``numpy.random.default_rng([seed, jobset])``, so a run is
    reproducible from ``seed`` whatever order the jobsets are simulated in.
    """

    name, code = "random", scoring.RANDOM

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def reset(self, *, seed: int | None = None) -> None:
        """Restart the stream, from ``[self.seed, seed]`` (seed = jobset id) when given."""
        key = self.seed if seed is None else [self.seed, seed]
        self._rng = np.random.default_rng(key)

    def uniforms(self, n: int) -> np.ndarray:
        """``n`` draws from the current stream (one per job start)."""
        return self._rng.random(n)

    def act(self, state: Engine, *, mask: np.ndarray) -> int:
        """The ``floor(u · k)``-th fitting slot; -1 if none fits."""
        fitting = np.flatnonzero(mask)
        if fitting.size == 0:
            return -1
        return int(fitting[min(int(self._rng.random() * fitting.size), fitting.size - 1)])


HEURISTICS: tuple[type[Heuristic], ...] = (RandomPolicy, FCFS, SJF, Packer, TetrisStar, HRRN)
