"""Work-conserving list-scheduling heuristics (Mao et al. 2016, §4.1; Guo et al. 2021, Table II;
design.md §8).

A heuristic is a **job order** — a compiled score of scalar features, higher first — and a
**placement rule** that picks the machine (:mod:`schedlab.simulator.cluster.placement`:
``firstfit`` by default, ``bestfit``, ``worstfit``, ``align``; irrelevant with one machine). It
sees only the visible jobs, considers only those that fit *now* for their whole duration, starts
the one with the strictly highest score (ties: lowest slot, or the earlier arrival for the whole
queue) and repeats until nothing fits (:func:`schedlab.simulator.cluster.dispatch.choose`). Name a
combination as ``sjf+bestfit`` (= ``sjf:placement=bestfit``).

A new heuristic is one class: a score decorated with :func:`score_function` (signature
:data:`~schedlab.simulator.cluster.dispatch.SCORE_SIGNATURE`) and a name, plus one registry line::

    @score_function
    def longest(duration, arrival, index, now, knob, alignment, capacity2, size):
        return float(duration)

    class LJF(Heuristic):
        key, score, static = "ljf", longest, True

The one parameter a score receives, ``knob``, is a field of a class decorated with
:func:`~schedlab.policies.base.policy_fields` (Tetris*'). The compiled paths take the score as an
argument, so nothing in ``simulator/`` changes and no kernel is recompiled. A score's ``duration``
is the job's estimate (the user's request) where the JobSet has an ``estimate`` column, unless the
policy is ``clairvoyant``; jobs still run their true duration (or are killed at their estimate:
:attr:`~schedlab.simulator.config.ClusterConfig.overrun`).

The orders HPC papers compare against rank by waiting time, requested processors (``size``: the
demand of the first resource, processors for SWF logs) and the estimate: :class:`WFP3`,
:class:`UNICEP` (Tang et al. 2009) and :class:`F1` (Carastan-Santos and de Camargo 2017).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np

from schedlab.errors import UnknownNameError
from schedlab.params import Typical
from schedlab.policies import scores
from schedlab.policies.base import ParamsMixin, Sampling, policy_fields
from schedlab.policies.scores import score_function  # noqa: F401  (plug-ins import it here)
from schedlab.simulator.cluster.dispatch import arrival_order, choose_batch
from schedlab.simulator.cluster.placement import PLACEMENTS
from schedlab.simulator.model import Snapshot
from schedlab.simulator.views.queue import QueueView

Placement = Literal["firstfit", "bestfit", "worstfit", "align"]
"""Placement rules (:data:`schedlab.simulator.cluster.placement.PLACEMENTS`)."""
Queue = Literal["greedy", "strict", "easy", "conservative"]
"""Queue disciplines (:data:`schedlab.simulator.cluster.disciplines.DISCIPLINES`)."""


@policy_fields
class Heuristic(ParamsMixin):
    """Base class: subclasses set ``key`` (the registry name) and ``score`` (and ``static`` when
    the score depends only on the job, which lets the whole-queue replay keep the queue in score
    order); the parameters every heuristic has are the fields below."""

    key: ClassVar[str]
    score: ClassVar[Any]
    """Compiled job-order score (:func:`score_function`)."""
    static: ClassVar[bool] = False
    uniform: ClassVar[bool] = False
    """Pick uniformly among the jobs that fit (Random) instead of by score."""
    sees: ClassVar[str] = "length"
    """What the score's ``duration`` is: a job's ``length`` (its estimate, or its duration
    when clairvoyant), or for DAG orders its remaining critical path (``rank``)."""
    models: ClassVar[frozenset[str]] = frozenset({"cluster"})
    view: ClassVar[QueueView] = QueueView()
    knob = 0.0
    """The score's ``knob`` (a parameter of the heuristics whose score reads it: Tetris*)."""

    placement: Placement = "firstfit"
    """Placement rule on several machines (``firstfit``, ``bestfit``, ``worstfit``, ``align``)."""
    queue: Queue = "greedy"
    """Queue discipline: ``greedy`` (default: start any job that fits now, in order, among the
    visible ones) or, over the whole queue, ``strict`` (the first waiting job blocks the others),
    ``easy`` (EASY backfilling) or ``conservative`` (conservative backfilling)
    (:mod:`schedlab.simulator.cluster.disciplines`). Named as ``fcfs+easy``."""
    clairvoyant: bool = False
    """Order (and, under a queue discipline, reserve) by the steps each job will actually run
    instead of its ``estimate`` (the user's request, when the JobSet has one; without one every
    policy sees the true duration, DeepRM's setting)."""

    @property
    def name(self) -> str:
        """``key``, with ``+queue`` unless greedy and ``+placement`` unless first fit
        (``sjf+easy+bestfit``), or a label given by assignment."""
        label: str | None = getattr(self, "_label", None)
        if label is not None:
            return label
        extras = [
            x for x, plain in ((self.queue, "greedy"), (self.placement, "firstfit")) if x != plain
        ]
        return "+".join([self.key, *extras])

    @name.setter
    def name(self, value: str) -> None:
        self._label = value

    @property
    def rule(self) -> int:
        """Code of the placement rule (:data:`~schedlab.simulator.cluster.placement.PLACEMENTS`)."""
        if self.placement not in PLACEMENTS:
            msg = f"unknown placement {self.placement!r}; known: {', '.join(PLACEMENTS)}"
            raise UnknownNameError(msg)
        return PLACEMENTS[self.placement]

    def reset(self, *, seed: int | None = None) -> None:
        """Deterministic heuristics keep no state."""

    def uniforms(self, n: int) -> np.ndarray:
        """Uniform draws for the compiled paths (only Random uses them)."""
        return np.zeros(n)

    def act_batch(self, obs: Snapshot, *, mask: np.ndarray | None = None) -> np.ndarray:
        """Start now the best job that fits now (action ``1 + i·M + q``), else void (0), for
        each env of the queue view ``obs``; ``mask`` is not needed (the choice always fits)."""
        out = np.empty(obs.envs.size, dtype=np.int64)
        choose_batch(
            obs.envs,
            obs.free,
            obs.view,
            obs.capacity,
            obs.demand,
            obs.duration,
            obs.seen,
            obs.arrival,
            obs.base,
            obs.now,
            self.score,
            self.rule,
            float(self.knob),
            self.uniform,
            self.uniforms(obs.envs.size),
            out,
        )
        return out


class SJF(Heuristic):
    """Shortest job first: score ``1 / duration``."""

    key, score, static = "sjf", scores.shortest, True


class FCFS(Heuristic):
    """First come, first served among the jobs that fit now (earliest arrival, then job_id).

    It skips a head job that does not fit (a work-conserving list scheduler, like every heuristic
    here), rather than blocking behind it.
    """

    key, score, static = "fcfs", arrival_order, True


class Packer(Heuristic):
    """Packer (Tetris' packing term): score = free capacity of the machine · demand."""

    key, score = "packer", scores.alignment


class HRRN(Heuristic):
    """Highest response ratio next: score ``(wait + duration) / duration``."""

    key, score = "hrrn", scores.response_ratio


@policy_fields
class TetrisStar(Heuristic):
    """Tetris*: ``knob · alignment + (1 − knob) / duration`` with both terms in [0, 1].

    ``alignment = (free · demand) / (capacity · capacity)`` normalises the packing score by its
    largest possible value, so it is on the same scale as the shortest-job term ``1 / duration``
    (design.md §8: the raw terms differ by ~100×). ``knob = 1`` is Packer's order, ``knob = 0``
    SJF's order; the default 0.5 weighs them equally.
    """

    key, score = "tetris", scores.tetris
    knob: Annotated[float, Typical(ge=0, le=1)] = 0.5
    """Weight of the packing term (1: Packer's order, 0: SJF's)."""


@policy_fields
class RandomPolicy(Sampling, Heuristic):
    """A uniformly random job among those that fit now.

    One uniform draw ``u`` per start picks the ``floor(u · k)``-th of the ``k`` fitting jobs in
    slot order. Draws come from ``numpy.random.default_rng([seed, jobset])``, so a run is
    reproducible from ``seed`` whatever order the jobsets are simulated in.
    """

    key, score, uniform = "random", arrival_order, True
    seed: int = 0
    """Seed of the draws, ``default_rng([seed, jobset])``."""

    def __post_init__(self) -> None:
        self.reset()  # the sampling stream of ``seed``

    def uniforms(self, n: int) -> np.ndarray:
        """``n`` draws from the current stream (one per job start)."""
        return self._rng.random(n)


class WFP3(Heuristic):
    """WFP3 (Tang, Lan, Desai and Buettner 2009, "Fault-aware, utility-based job scheduling on
    Blue Gene/P systems", IEEE Cluster, the "WFP" utility with exponent 3): score
    ``(wait / estimate)³ · size``, highest first, where ``wait = now − arrival`` (steps),
    ``estimate`` the job's requested run time (steps) and ``size`` its processors. Jobs that
    waited long relative to their request, and wide jobs, go first."""

    key, score = "wfp3", scores.wfp3


class UNICEP(Heuristic):
    """UNICEP (Tang et al. 2009, as WFP3): score ``wait / (log2(size) · estimate)``, highest
    first (``wait = now − arrival``, ``estimate`` the requested run time, both in steps; ``size``
    the processors). ``log2(1) = 0`` would make every one-processor job rank first whatever it
    waited; ``log2(max(size, 2))`` is used instead, so a one-processor job ranks as a
    two-processor one."""

    key, score = "unicep", scores.unicep


class F1(Heuristic):
    """F1 (Carastan-Santos and de Camargo 2017, "Obtaining dynamic scheduling policies with
    simulation and machine learning", SC'17, the first of their learned functions): the job with
    the *lowest* ``log10(estimate) · size + 870 · log10(submit)`` starts first (the score is its
    negation), ``estimate`` the requested run time and ``submit`` the submit time, in seconds in
    the paper.

    Here both are in steps, so the constants hold as published at ``time_step = 1`` (SWF logs
    loaded with one second per step). ``submit`` is the arrival step, counted from the JobSet's
    time origin (the first job of a trace window arrives at 0): unlike the paper's absolute
    submit times, the order depends on that origin, because ``log10`` weighs the same gap more
    near 0. ``log10(max(arrival, 1))`` guards arrival 0 (it counts as 1).
    """

    key, score, static = "f1", scores.f1, True


class CPF(Heuristic):
    """Critical path first (DAG workloads): the ready task with the longest remaining path to
    its DAG job's end starts first. The score sees each task's *upward rank*, its own length
    plus the longest chain of tasks waiting for it (:func:`schedlab.dag_measures.upward_rank`, over
    the lengths the scheduler sees: estimates unless clairvoyant). Without a DAG the rank is the
    job's length: longest job first."""

    key, score, static = "cpf", scores.longest, True
    sees = "rank"


class SRJF(Heuristic):
    """Shortest remaining job first by remaining critical path (DAG workloads): the ready task
    whose remaining path to its DAG job's end (its upward rank, as for :class:`CPF`) is
    shortest starts first, so jobs near their end finish first. The remaining path is the
    task's own, not the maximum over its job's other ready branches (a job-level order would
    need a per-job aggregate the compiled scores do not see). Without a DAG: SJF."""

    key, score, static = "srjf", scores.shortest, True
    sees = "rank"
