"""The state of the batched engine (:mod:`schedlab.simulator.cluster.batched`) as arrays.

:data:`State` is a namedtuple of arrays, so that one compiled call
(:mod:`schedlab.simulator.cluster.kernels`) advances every environment; :func:`new_state` makes
the state of ``B`` environments before their first reset.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from schedlab.simulator.cluster.precedence import Precedence

State = namedtuple(
    "State",
    "arrival duration seen demand weight lo hi limit capacity horizon alpha beta gamma "
    "now free dep alloc_w queue_w backlog_w slot bq bq_head bq_tail nxt last_arr n_started "
    "start machine done forced steps withhold_steps withheld queue "
    "release n_parents task task_rows child_offsets children task_lo task_left task_end "
    "waiting ready rel_t rel_r rel_n",
)
"""Arrays of the batched state (``B`` envs, ``n`` jobs, ``H`` tracked steps, ``m`` machines,
``d`` resources).

Jobs (shared by envs that replay the same jobset): ``arrival``, ``duration`` (steps run), ``seen``
(the length heuristics' scores see: the estimate, or ``duration``) (int64, ``(n,)``),
``demand`` (float64, ``(n, d)``), ``weight`` (float64, ``(n,)``: reward weight). Reward weights of
where a job is: ``alpha`` (``(m,)``: allocated to machine ``i``), ``beta`` (visible slots),
``gamma`` (backlog). Per env: ``lo``, ``hi`` (its job rows), ``limit`` (time limit), ``now``,
``free`` (``(B, H, m, d)``: free capacity at ``now + k``), ``dep`` (``(B, H)``: α-weighted weight
of jobs finishing at ``now + k``), ``alloc_w``/``queue_w``/``backlog_w`` (weight allocated and
unfinished (α-weighted), in the slots, in the backlog), ``slot`` (``(B, M)``, job row or -1),
``bq`` (``(B, n_max)``, backlog ring), ``bq_head``/``bq_tail``, ``nxt`` (next job row to arrive),
``last_arr``, ``n_started``, ``start``/``machine`` (``(B, n_max)``, per job, -1 before),
``done``, ``forced``, ``steps`` (time steps advanced by void or invalid actions),
``withhold_steps`` (of those, steps that left a visible job waiting that the agent could have
started now), ``withheld`` (``(B, Dmax + 1)``: withheld job counts by duration). Shared:
``queue`` (int64, ``(1,)``: the queue discipline, a code of
:data:`~schedlab.simulator.cluster.disciplines.DISCIPLINES`: greedy, strict or easy).

Precedence of a DAG workload (:mod:`.precedence`; empty arrays without one, and jobs then
arrive in row order through ``nxt``; with one, ``arrival`` (a copy) becomes each task's ready
time when it is admitted, what scores and views see): shared ``release``, ``n_parents``,
``task`` (per job), ``task_rows``, ``child_offsets``, ``children`` (the graph); per env
``task_lo`` (its first task), ``task_left``/``task_end`` (``(B, tasks)``: rows of each task not
started, latest finish), ``waiting``/``ready`` (``(B, n_max)``: parent tasks each job waits
for, its ready time so far) and the heap of known ready times ``rel_t``/``rel_r``
(``(B, n_max)``), ``rel_n``.
"""


def new_state(
    *,
    jobs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
    time_limit: np.ndarray,
    capacity: np.ndarray,
    horizon: int,
    weights: tuple[np.ndarray, float, float],
    slots: int,
    machines: int,
    n_max: int,
    queue: int,
    precedence: Precedence | None,
) -> State:
    """The state of ``B`` envs before their first reset.

    Parameters
    ----------
    jobs
        ``arrival``, ``duration``, ``seen`` (int64, ``(n,)``), ``demand`` (float64,
        ``(n, d)``) and ``weight`` (float64, ``(n,)``) of the job rows (:data:`State`).
    lo, hi, time_limit
        int64, ``(B,)``: each env's job rows and time limit (steps).
    capacity
        float64, ``(d,)``: one machine's capacity.
    horizon
        T, steps.
    weights
        α per machine (float64, ``(m,)``), β and γ of the reward.
    slots, machines, n_max
        M, m and the most jobs an env replays.
    queue
        The agents' discipline, a code of
        :data:`~schedlab.simulator.cluster.disciplines.DISCIPLINES`.
    precedence
        The DAG workload's graph and release times, or None.
    """
    # one array type per field (C-contiguous, writable): a read-only twin (an Arrow-backed
    # column) would compile every kernel of the engine once more (about 20 s each)
    arrival, duration, seen, demand, weight, lo, hi, time_limit, capacity = (
        np.require(a, requirements=["C", "W"]) for a in (*jobs, lo, hi, time_limit, capacity)
    )
    alpha, beta, gamma = weights
    alpha = np.require(alpha, requirements=["C", "W"])
    B, d, m = lo.size, capacity.size, machines
    longest = int(duration.max(initial=1))
    H = horizon + 2 * longest + 1
    zeros, minus_one = np.zeros(B, np.int64), np.full((B, n_max), -1, np.int64)
    return State(
        arrival=arrival,
        duration=duration,
        seen=seen,
        demand=demand,
        weight=weight,
        lo=lo,
        hi=hi,
        limit=time_limit,
        capacity=capacity,
        horizon=horizon,
        alpha=alpha,
        beta=beta,
        gamma=gamma,
        now=zeros.copy(),
        free=np.zeros((B, H, m, d)),
        dep=np.zeros((B, H)),
        alloc_w=np.zeros(B),
        queue_w=np.zeros(B),
        backlog_w=np.zeros(B),
        slot=np.full((B, slots), -1, np.int64),
        bq=np.zeros((B, n_max), np.int64),
        bq_head=zeros.copy(),
        bq_tail=zeros.copy(),
        nxt=lo.copy(),
        last_arr=zeros.copy(),
        n_started=zeros.copy(),
        start=minus_one.copy(),
        machine=minus_one.copy(),
        done=np.zeros(B, np.bool_),
        forced=zeros.copy(),
        steps=zeros.copy(),
        withhold_steps=zeros.copy(),
        withheld=np.zeros((B, longest + 1), np.int64),
        queue=np.array([queue], np.int64),
        **_precedence_arrays(precedence, lo, hi, n_max),
    )


def _precedence_arrays(
    prec: Precedence | None, lo: np.ndarray, hi: np.ndarray, n_max: int
) -> dict[str, np.ndarray]:
    """The precedence fields of the kernel ``State`` (empty arrays without ``prec``)."""
    B = lo.size
    if prec is None:
        empty, none = np.zeros(0, np.int64), np.zeros((B, 0), np.int64)
        return {
            "release": empty,
            "n_parents": np.zeros(0, np.int32),
            "task": empty,
            "task_rows": empty,
            "child_offsets": empty,
            "children": empty,
            "task_lo": np.zeros(B, np.int64),
            "task_left": none,
            "task_end": none,
            "waiting": none,
            "ready": none,
            "rel_t": none,
            "rel_r": none,
            "rel_n": np.zeros(B, np.int64),
        }
    spans = [
        (prec.task[a:b].min(), prec.task[a:b].max() + 1) if b > a else (0, 0)
        for a, b in zip(lo, hi, strict=True)
    ]
    task_lo, task_hi = (np.array(x, dtype=np.int64) for x in zip(*spans, strict=True))
    tasks = max(int((task_hi - task_lo).max(initial=1)), 1)
    per_env = np.zeros((B, n_max), np.int64)
    return {
        **{
            name: np.require(getattr(prec, name), requirements=["C", "W"])
            for name in ("release", "n_parents", "task", "task_rows", "child_offsets", "children")
        },
        "task_lo": task_lo,
        "task_left": np.zeros((B, tasks), np.int64),
        "task_end": np.zeros((B, tasks), np.int64),
        "waiting": per_env.copy(),
        "ready": per_env.copy(),
        "rel_t": per_env.copy(),
        "rel_r": per_env.copy(),
        "rel_n": np.zeros(B, np.int64),
    }
