"""The event core every compiled scheduling rule runs on: one jobset, one way time moves.

A rule (:mod:`.greedy`, :mod:`.easy`, :mod:`.conservative`) is a loop of decisions::

    c, g, r = core.new(jobs, out, how, lo, prec)           # arrays, DAG arrays, ready heap size
    free, runtime, demand, start, machine, end_t, end_j, rel_t, rel_r, queue, pos, ended = c
    t = core.next_event(NEVER, h, r, end_t, rel_t)
    while started < n and t != NEVER:
        h, e = core.complete(t, h, ...)                    # jobs whose run ended by t
        r, q = core.admit(t, r, q, ...)                    # jobs ready by t join the queue
        ...                                                # the rule's decision:
        h, r = core.begin(j, t, i, h, r, free, ...)        # start job j on machine i
        t = core.next_event(wake, h, r, end_t, rel_t)      # the rule's own events too
    return 0 if started == n else STALLED

:func:`next_event` is the only rule of how time moves: to the earliest of the next completion,
the next ready time (:mod:`.precedence`: an arrival, or a DAG task's release and parents'
finish) and the rule's own ``wake`` time (conservative's reservations); there
:func:`complete` ends every job whose run ends by then (capacity back on its machine, listed in
``ended``) and :func:`admit` admits every job ready by then into ``queue`` (admission order:
ready time, then row, the one tie rule of :mod:`.heap`). A job runs for its ``runtime`` (the
recorded duration, or the estimate it is killed at: the caller decides with
:func:`~schedlab.simulator.config.job_times`), so overruns are the caller's, not the rule's;
precedence is the core's: :func:`begin` tells the waiting tasks when their parent ends.
Decisions end once every job has started; a jobset whose waiting jobs can never start (no
event left) is :data:`STALLED`.

A rule takes its jobs (:class:`Jobs`), outputs (:class:`Out`) and setting (:class:`Setting`)
as three namedtuples, read once per jobset, and :func:`each_jobset` is the one loop over
jobsets. Every function here but :func:`outputs` is inlined into the rule, which allocates the
arrays (:func:`new`) and holds them, and the scalars (``h``: completions pending, ``r``: known
ready times, ``q``: waiting jobs), in local variables: measured, keeping the state in a
namedtuple passed to the helpers, or its scalars in an array, cost the kernels 1.5–2x (stores
the compiler must assume overlap, reference counts); an array taken from a namedtuple inside a
helper called at every event or start costs a reference count each time (30% of the greedy
rule), so the per-event helpers take arrays.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster import heap, precedence

Precedence = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
""":func:`.precedence.engine_arrays` (empty graph arrays without a DAG)."""
Pair = tuple[np.ndarray, np.ndarray]
"""Two int64 arrays read together: a heap's ``(times, rows)``, or the queue and each job's place
in it."""

NEVER = np.iinfo(np.int64).max // 4
"""A time later than any event."""
STALLED = -1
"""Status of a jobset whose waiting jobs could never start (0: every job ran)."""

Core = namedtuple(
    "Core", "free runtime demand start machine end_t end_j rel_t rel_r queue pos ended"
)
"""The arrays of one jobset (``n`` jobs, ``m`` machines, ``d`` resources): ``free`` (float64,
``(m, d)``: free capacity now), the jobs' ``runtime`` (int64, steps) and ``demand`` (float64,
``(n, d)``); the outputs ``start`` and ``machine``; the completion heap ``end_t``/``end_j``
and the ready heap ``rel_t``/``rel_r`` (:mod:`.heap`); the waiting jobs ``queue`` in
admission order (``pos[j]``: j's index in it, kept by :func:`compact`); ``ended``: the jobs
:func:`complete` ended."""

Graph = namedtuple(
    "Graph", "release task task_left task_end child_offsets children waiting ready lo rel_t rel_r"
)
"""What :func:`.precedence.on_start` keeps of a DAG (empty arrays without one), ``ready`` (the
output: when each job became ready), ``lo``, the jobset's first global row, and the ready heap
``rel_t``/``rel_r`` (:class:`Core`'s) it pushes the tasks whose parents' end is known on."""


Jobs = namedtuple("Jobs", "arrival runtime estimate seen demand draw")
"""A rule's jobs (rows of every jobset, or of one): ``arrival``, ``runtime`` (steps it runs),
``estimate`` (what reservations see), ``seen`` (the length the order's score sees; all int64,
``(n,)``), ``demand`` (float64, ``(n, d)``) and ``draw`` (the Random mode's uniform draws,
float64, ``(n,)``, or empty). A rule ignores the columns it does not use."""

Out = namedtuple("Out", "start machine reserved ready")
"""A rule's outputs (int64, ``(n,)``): start step and machine (-1: never started), the first
reservation each job got (:data:`NEVER`: none) and when it became ready."""
Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
""":class:`Out`'s arrays as a plain tuple, as compiled entries return them to Python."""

Setting = namedtuple("Setting", "capacity machines score rule knob static slots uniform backfill")
"""What a rule is run with: one machine's ``capacity`` (float64, ``(d,)``), the ``machines``,
the job order's ``score`` (:data:`.dispatch.SCORE_SIGNATURE`), placement ``rule`` and
``knob``, whether the order is ``static`` (depends only on the job), the visible ``slots``
(greedy), the Random mode (``uniform``) and whether EASY backfills (``backfill``; else strict)."""


@numba.njit(cache=True, inline="always")
def new(jobs: Jobs, out: Out, how: Setting, lo: int, prec: Precedence) -> tuple[Core, Graph, int]:
    """The core of one jobset (``jobs`` and ``out``: its rows, ``lo .. lo + n − 1`` of
    ``prec``, :func:`.precedence.engine_arrays`), ``how.machines`` of ``how.capacity`` every
    one free, nothing admitted yet: its arrays, its DAG and the size of its ready heap.
    ``out.start``, ``out.machine`` and ``out.ready`` are filled as jobs start and become
    ready."""
    runtime, demand, ready = jobs.runtime, jobs.demand, out.ready
    capacity, machines = how.capacity, how.machines
    n, d = runtime.shape[0], capacity.shape[0]
    release, n_parents, task, task_left, child_offsets, children = prec
    release = release[lo : lo + n]
    waiting = n_parents[lo : lo + n].copy()
    for j in range(n):
        ready[j] = release[j]
    rel_t = np.empty(n, dtype=np.int64)
    rel_r = np.empty(n, dtype=np.int64)
    readying = precedence.roots(release, waiting, rel_t, rel_r)
    free = np.empty((machines, d))
    for i in range(machines):
        for y in range(d):
            free[i, y] = capacity[y]
    c = Core(
        free,
        runtime,
        demand,
        out.start,
        out.machine,
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        rel_t,
        rel_r,
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )
    task_end = np.zeros(task_left.shape[0], dtype=np.int64)
    g = Graph(
        release,
        task,
        task_left,
        task_end,
        child_offsets,
        children,
        waiting,
        ready,
        lo,
        rel_t,
        rel_r,
    )
    return c, g, readying


@numba.njit(cache=True, inline="always")
def next_event(wake: int, h: int, r: int, end_t: np.ndarray, rel_t: np.ndarray) -> int:
    """When time moves next: the earliest of the next completion (``h`` pending), the next
    known ready time (``r`` known) and ``wake``; :data:`NEVER` if none."""
    t = wake
    if h:
        t = min(t, end_t[0])
    if r:
        t = min(t, rel_t[0])
    return t


@numba.njit(cache=True, inline="always")
def complete(
    t: int,
    h: int,
    end_t: np.ndarray,
    end_j: np.ndarray,
    free: np.ndarray,
    demand: np.ndarray,
    machine: np.ndarray,
    ended: np.ndarray,
) -> tuple[int, int]:
    """End every job whose run ends by ``t`` (its capacity back on its machine, listed in
    ``ended`` unless it is empty): ``(completions pending, jobs ended)``."""
    e = 0
    listed = ended.shape[0] > 0
    while h and end_t[0] <= t:
        j = end_j[0]
        h = heap.pop(end_t, end_j, h)
        i = machine[j]
        for y in range(free.shape[1]):
            free[i, y] += demand[j, y]
        if listed:
            ended[e] = j
        e += 1
    return h, e


@numba.njit(cache=True, inline="always")
def admit(t: int, r: int, q: int, ready: Pair, waiting: Pair) -> tuple[int, int]:
    """Admit every job ready by ``t`` (the heap ``ready`` = ``(rel_t, rel_r)``, ``r`` items) at
    the end of the queue ``waiting`` = ``(queue, pos)`` (``q`` waiting): ``(known ready times
    left, jobs waiting)``; the admitted ones are ``queue[q:]`` of the new ``q``."""
    rel_t, rel_r = ready
    queue, pos = waiting
    while r and rel_t[0] <= t:
        j = rel_r[0]
        r = heap.pop(rel_t, rel_r, r)
        queue[q] = j
        pos[j] = q
        q += 1
    return r, q


@numba.njit(cache=True, inline="always")
def begin(
    j: int,
    t: int,
    i: int,
    h: int,
    r: int,
    free: np.ndarray,
    demand: np.ndarray,
    runtime: np.ndarray,
    start: np.ndarray,
    machine: np.ndarray,
    end_t: np.ndarray,
    end_j: np.ndarray,
    g: Graph,
) -> tuple[int, int]:
    """Start job ``j`` at ``t`` on machine ``i``: its capacity taken, its completion an event,
    and the tasks waiting for it told when it ends (:func:`.precedence.on_start`); the new
    ``(h, r)``. The arrays are :class:`Core`'s, passed one by one: taken from the namedtuple
    here, at every start, they cost the greedy rule 30% (a reference count each)."""
    start[j], machine[j] = t, i
    for y in range(free.shape[1]):
        free[i, y] -= demand[j, y]
    end = t + runtime[j]
    h = heap.push(end_t, end_j, h, end, j)
    if g.task.shape[0]:
        r = precedence.on_start(
            j,
            end,
            g.lo,
            g.release,
            g.task,
            g.task_left,
            g.task_end,
            g.child_offsets,
            g.children,
            g.waiting,
            g.ready,
            g.rel_t,
            g.rel_r,
            r,
        )
    return h, r


@numba.njit(cache=True, inline="always")
def compact(q: int, queue: np.ndarray, pos: np.ndarray, start: np.ndarray) -> int:
    """Drop the jobs that started from ``queue[:q]``, keeping admission order (and ``pos``);
    the jobs left waiting."""
    w = 0
    for x in range(q):
        j = queue[x]
        if start[j] < 0:
            queue[w] = j
            pos[j] = w
            w += 1
    return w


@numba.njit(cache=True)
def outputs(n: int, jobsets: int) -> tuple[Out, np.ndarray]:
    """A rule's outputs for ``n`` jobs in ``jobsets`` jobsets, before any job ran (as
    :class:`Out` says), and the status of each jobset (int64, ``(jobsets,)``: 0, or
    :data:`STALLED` once it stalled)."""
    out = Out(
        np.full(n, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.full(n, NEVER, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )
    return out, np.zeros(jobsets, dtype=np.int64)


@numba.njit(cache=True, inline="always")
def each_jobset(
    rule: Any, jobs: Jobs, bounds: np.ndarray, setting: Setting, prec: Precedence
) -> tuple[Columns, np.ndarray]:
    """Run the compiled ``rule`` (``rule(jobs, out, lo, setting, prec) -> status`` of one
    jobset) on every jobset (rows ``bounds[b]:bounds[b + 1]``, ``bounds``: int64, ``(k + 1,)``):
    the :func:`outputs` filled in. Inlined into the rule's compiled entry, which names its rule
    (a compiled function passed on as a value could not be cached). The outputs return as a
    plain tuple: boxing an :class:`Out` runs the namedtuple's Python ``__new__``, where a
    signal's Python handler may raise, and numba's boxing does not survive that (a SIGTERM
    while a compiled entry returned crashed the process); :func:`.disciplines.run_jobsets`
    names them."""
    out, status = outputs(jobs.arrival.shape[0], bounds.shape[0] - 1)
    a, run, est, seen, dem, draw = jobs
    start, machine, reserved, ready = out
    for b in range(status.shape[0]):
        lo, hi = bounds[b], bounds[b + 1]
        part = Jobs(a[lo:hi], run[lo:hi], est[lo:hi], seen[lo:hi], dem[lo:hi], draw[lo:hi])
        part_out = Out(start[lo:hi], machine[lo:hi], reserved[lo:hi], ready[lo:hi])
        status[b] = rule(part, part_out, lo, setting, prec)
    return (start, machine, reserved, ready), status
