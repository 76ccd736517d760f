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
from schedlab.simulator.cluster.core import NEVER, STALLED

GREEDY, STRICT, EASY, CONSERVATIVE = range(4)
DISCIPLINES = {"greedy": GREEDY, "strict": STRICT, "easy": EASY, "conservative": CONSERVATIVE}
"""Queue discipline name -> code."""

__all__ = ["CONSERVATIVE", "DISCIPLINES", "EASY", "GREEDY", "NEVER", "STALLED", "STRICT"]

Prec = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _c(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as the kernels take it: C-contiguous, writable, of ``dtype`` (one compiled
    signature per kernel, whatever the caller holds: read-only Arrow buffers included)."""
    return np.require(a, dtype, ["C", "W"])


def _prec(prec: Prec) -> Prec:
    release, n_parents, task, task_rows, offsets, children = prec
    return (
        _c(release, np.int64),
        _c(n_parents, np.int32),
        _c(task, np.int64),
        _c(task_rows, np.int64),
        _c(offsets, np.int64),
        _c(children, np.int64),
    )


def run_greedy(
    arrival: np.ndarray,
    runtime: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    bounds: np.ndarray,
    capacity: np.ndarray,
    machines: int,
    slots: int,
    score: Any,
    rule: int,
    knob: float,
    uniform: bool,
    uniforms: np.ndarray,
    static: bool,
    prec: Prec,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every jobset under the greedy discipline (:func:`.greedy.run_scan`, or
    :func:`.greedy.run_tree` on the whole queue under a static order): ``(start, machine,
    ready, status)``."""
    args = (
        _c(arrival, np.int64),
        _c(runtime, np.int64),
        _c(seen, np.int64),
        _c(demand, np.float64),
        _c(bounds, np.int64),
        _c(capacity, np.float64),
        int(machines),
    )
    if slots == greedy.WHOLE_QUEUE and static and not uniform:
        return greedy.run_tree(*args, score, int(rule), float(knob), _prec(prec))
    return greedy.run_scan(
        *args,
        int(slots),
        score,
        int(rule),
        float(knob),
        bool(uniform),
        _c(uniforms, np.float64),
        bool(static),
        _prec(prec),
    )


def run_jobsets(
    arrival: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    seen: np.ndarray,
    demand: np.ndarray,
    bounds: np.ndarray,
    capacity: np.ndarray,
    machines: int,
    score: Any,
    rule: int,
    knob: float,
    discipline: int,
    static: bool,
    prec: Prec,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Schedule every jobset (rows ``bounds[b]:bounds[b + 1]``, each in arrival order) under a
    queue discipline (strict, EASY or conservative).

    Parameters
    ----------
    arrival, runtime, estimate, seen : int64, shape ``(n,)``
        Arrival step, steps each job runs, the estimate (request) reservations see, and the
        length the order's score sees (the estimate; a DAG order's remaining critical path).
    demand : float64, shape ``(n, d)``
    bounds : int64, shape ``(J + 1,)``
    capacity : float64, shape ``(d,)``
        One machine's capacity; ``machines`` identical machines.
    score, rule, knob
        The job order (:data:`~.dispatch.SCORE_SIGNATURE`), placement rule and its parameter.
    discipline
        :data:`STRICT`, :data:`EASY` or :data:`CONSERVATIVE`.
    static
        The order depends only on the job (its scores are computed once, not at every event).
    prec
        :func:`.precedence.engine_arrays` (DAG workloads; empty graph arrays otherwise).

    Returns
    -------
    start, machine, reserved, ready : int64, shape ``(n,)``
        Start step and machine of every job, the first reservation it got (:data:`NEVER`:
        none) and when it became ready (its arrival, or a DAG task's release and parents'
        finish).
    status : int64, shape ``(J,)``
        0 (every job ran) or :data:`STALLED` per jobset.
    """
    args = (
        _c(arrival, np.int64),
        _c(runtime, np.int64),
        _c(estimate, np.int64),
        _c(seen, np.int64),
        _c(demand, np.float64),
        _c(bounds, np.int64),
        _c(capacity, np.float64),
        int(machines),
        score,
        int(rule),
        float(knob),
        bool(static),
    )
    if discipline == CONSERVATIVE:
        return conservative.run(*args, _prec(prec))
    if discipline in (STRICT, EASY):
        return easy.run(*args, discipline == EASY, _prec(prec))
    msg = f"queue discipline code {discipline} is not strict, easy or conservative"
    raise ValueError(msg)
