"""Queue disciplines by name, and the one entry to the compiled rules for a heuristic.

A heuristic runs under a **queue discipline**: ``greedy`` (:mod:`.greedy`: start any visible
job that fits, in order), ``strict`` and ``easy`` (:mod:`.easy`) or ``conservative``
(:mod:`.conservative`), each a decision rule on the event core (:mod:`.core`). Each rule is its
own compiled kernel, so a run compiles only the rule it uses. :mod:`.backfill_steps` is the
readable reference of strict, EASY and conservative, and :class:`.engine.Engine` of greedy,
which the tests hold the compiled rules to.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.simulator.cluster import conservative, easy, greedy
from schedlab.simulator.cluster.core import NEVER, STALLED, Jobs, Out, Precedence, Setting
from schedlab.simulator.cluster.greedy import WHOLE_QUEUE

GREEDY, STRICT, EASY, CONSERVATIVE = range(4)
DISCIPLINES = {"greedy": GREEDY, "strict": STRICT, "easy": EASY, "conservative": CONSERVATIVE}
"""Queue discipline name -> code."""

__all__ = [
    "CONSERVATIVE",
    "DISCIPLINES",
    "EASY",
    "GREEDY",
    "NEVER",
    "STALLED",
    "STRICT",
    "WHOLE_QUEUE",
]

Prec = Precedence


def _c(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as the kernels take it: C-contiguous, writable, of ``dtype`` (one compiled
    signature per kernel, whatever the caller holds: read-only Arrow buffers included)."""
    return np.require(a, dtype, ["C", "W"])


def jobs(
    arrival: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    draw: np.ndarray | None = None,
) -> Jobs:
    """The jobs of every jobset (each contiguous, in arrival order) as the rules take them.

    Parameters
    ----------
    arrival, runtime, estimate, seen : int, shape ``(n,)``
        Arrival step, steps each job runs, the estimate (request) reservations see, and the
        length the order's score sees (the estimate; a DAG order's remaining critical path).
    demand : float, shape ``(n, d)``
    draw : float, shape ``(n,)``, optional
        The Random mode's uniform draws in [0, 1) (per jobset in order); none for an order.
    """
    return Jobs(
        _c(arrival, np.int64),
        _c(runtime, np.int64),
        _c(estimate, np.int64),
        _c(seen, np.int64),
        _c(demand, np.float64),
        _c(np.empty(0) if draw is None else draw, np.float64),
    )


def setting(
    capacity: np.ndarray,
    machines: int,
    score: Any,
    rule: int,
    knob: float,
    static: bool,
    *,
    slots: int = WHOLE_QUEUE,
    uniform: bool = False,
) -> Setting:
    """What the rules run with (:class:`~.core.Setting`): one machine's ``capacity`` (float,
    ``(d,)``) and the ``machines``; the job order (``score``,
    :data:`~.dispatch.SCORE_SIGNATURE`, and ``knob``), placement ``rule``; ``static``: the
    order depends only on the job (its scores are computed once, not at every event); greedy's
    visible ``slots`` (or :data:`WHOLE_QUEUE`) and Random mode (``uniform``)."""
    return Setting(
        _c(capacity, np.float64),
        int(machines),
        score,
        int(rule),
        float(knob),
        bool(static),
        int(slots),
        bool(uniform),
        False,
    )


def _prec(prec: Prec) -> Prec:
    """``prec`` as the kernels take it (:func:`_c`)."""
    release, n_parents, task, task_rows, offsets, children = prec
    return (
        _c(release, np.int64),
        _c(n_parents, np.int32),
        _c(task, np.int64),
        _c(task_rows, np.int64),
        _c(offsets, np.int64),
        _c(children, np.int64),
    )


def run_jobsets(
    jobs: Jobs, bounds: np.ndarray, how: Setting, discipline: int, prec: Prec
) -> tuple[Out, np.ndarray]:
    """Schedule every jobset (rows ``bounds[b]:bounds[b + 1]``, int, ``(J + 1,)``) of
    :func:`jobs` with :func:`setting` under a queue discipline (:data:`DISCIPLINES`); ``prec``:
    :func:`.precedence.engine_arrays` (DAG workloads; empty graph arrays otherwise).

    Returns
    -------
    out : Out
        Start step and machine of every job (int64, ``(n,)``), the first reservation it got
        (:data:`NEVER`: none; strict and greedy: none) and when it became ready (its arrival, or
        a DAG task's release and parents' finish).
    status : int64, shape ``(J,)``
        0 (every job ran) or :data:`STALLED` per jobset.
    """
    bounds, prec = _c(bounds, np.int64), _prec(prec)
    if discipline == CONSERVATIVE:
        return conservative.run(jobs, bounds, how, prec)
    if discipline == GREEDY:
        whole_static = how.slots == WHOLE_QUEUE and how.static and not how.uniform
        columns, status = (greedy.run_tree if whole_static else greedy.run_scan)(
            jobs, bounds, how, prec
        )
    elif discipline in (STRICT, EASY):
        columns, status = easy.run(jobs, bounds, how._replace(backfill=discipline == EASY), prec)
    else:
        msg = f"queue discipline code {discipline} is not greedy, strict, easy or conservative"
        raise ValueError(msg)
    return Out(*columns), status
