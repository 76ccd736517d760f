"""Compiled time steps of the multi-cluster model over ``B`` environments (numba).

One **moment** ``t`` of an environment, in this order (Liu et al., ICPP'20, §4.4, §5):

1. **completions**: executions finishing at ``t`` release their executors; one whose elapsed
   time ``finish − request`` exceeds its deadline on the cluster is a **missed deadline** of
   that cluster; a streaming job's next execution requests its executors at ``t`` (back to
   back), with the entry of its request distribution drawn in advance;
2. **elasticity controller** of each elastic cluster, acting at most once per ``window`` steps:
   if the occupation ratio (used / current capacity) reached ``threshold`` at some moment of
   ``t − window .. t − 1``, add ``step`` executors (up to ``limit`` added in total); if it did
   not, return ``step`` of the added executors — once they are free (a running execution is
   never cut short). Reading the controller as acting every step would add the whole ``limit``
   in consecutive steps after a single busy moment; a pause of one window after each action
   makes "+100 when busy" and "returned in −100 stages" both observable;
3. **arrivals** at ``t`` join the global buffer (arrival order);
4. **decision**: if the buffer is not empty the global scheduler dispatches one job (§4.4: one job
   per moment) to a cluster; its first execution requests executors at ``t``;
5. **local FIFO scheduler with halting** of each cluster (§5): first the halting executions
   (requested before ``t``), then those requesting at ``t``, each group in job arrival order; an
   execution starts if its whole request fits in the free executors, else it halts and tries
   again at ``t + 1``. A halting job does not block later ones (each tries on its own);
6. the occupation ratio of each cluster at ``t`` is recorded (a ring of the last ``L`` moments,
   a ring of its running sum, for window averages, and sums for utilisation).

Elastic changes are logged as ``(t, executors added in effect after the change)`` in ``elog``
(``B, C, K, 2``); changes beyond ``K`` are counted but not logged.

An environment stops at a moment with a decision to take (after step 3) or when every job has
finished. State lives in int64 tables whose columns are named by the constants below; ``B``
envs, ``N`` jobs, ``C`` clusters, ``E`` executions. The job arrays are those of
:class:`~schedlab.simulator.multicluster.jobs.ClusterJobs`, passed as one tuple
(:data:`Jobs`, :func:`job_arrays`); ``buf``/``act`` (``B, N_max``) hold
the global buffer and the dispatched unfinished jobs (arrival order) of each env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba as nb
import numpy as np

if TYPE_CHECKING:
    from schedlab.simulator.multicluster.jobs import ClusterJobs

# columns of the per-env table ``env`` (B, 8)
NOW, NEXT, N_DONE, BUF_LEN, ACT_LEN, DONE, LIMIT, VOIDS = range(8)
# columns of the per-job table ``job`` (N, 7)
CLUSTER, DISPATCH, EXEC, RUNNING, REQUEST, REQ_TIME, FIN_TIME = range(7)
# columns of the per-cluster table ``cl`` (B, C, 7)
CAP, USED, EXTRA, LAST_HIGH, LAST_CHANGE, MISSES, N_CHANGES = range(7)
# columns of the per-execution table ``ex`` (E, 3)
E_REQUEST, E_START, E_FINISH = range(3)

Arr = np.ndarray
"""An array argument of a kernel (numba ignores annotations)."""
Jobs = tuple[Arr, Arr, Arr, Arr, Arr, Arr, Arr, Arr]
"""The job arrays of :class:`~schedlab.simulator.multicluster.jobs.ClusterJobs`, in the order of
the positions below."""
# positions in ``Jobs``
BOUNDS, ARRIVAL, EXECUTIONS, EXEC_TIME, DEADLINE, REQUESTS, DRAWS, EXEC_BOUNDS = range(8)


def job_arrays(jobs: ClusterJobs) -> Jobs:
    """The arrays of ``jobs`` the steps read, at the positions above."""
    j = jobs
    return (
        j.bounds,
        j.arrival,
        j.executions,
        j.exec_time,
        j.deadline,
        j.requests,
        j.draws,
        j.exec_bounds,
    )


OK, TIME_LIMIT = 0, 1
"""Status codes of :func:`advance`."""


@nb.njit(cache=True)
def _completions(b: int, t: int, env: Arr, job: Arr, cl: Arr, ex: Arr, act: Arr, jobs: Jobs) -> int:
    """Step 1; returns the number of missed deadlines at ``t``."""
    executions, deadline, draws = jobs[EXECUTIONS], jobs[DEADLINE], jobs[DRAWS]
    requests, exec_bounds = jobs[REQUESTS], jobs[EXEC_BOUNDS]
    missed = 0
    keep = 0
    for idx in range(env[b, ACT_LEN]):
        j = act[b, idx]
        if job[j, RUNNING] == 1 and job[j, FIN_TIME] == t:
            c = job[j, CLUSTER]
            cl[b, c, USED] -= job[j, REQUEST]
            e = exec_bounds[j] + job[j, EXEC]
            ex[e, E_FINISH] = t
            if deadline[j, c] >= 0 and t - ex[e, E_REQUEST] > deadline[j, c]:
                cl[b, c, MISSES] += 1
                missed += 1
            job[j, RUNNING] = 0
            job[j, EXEC] += 1
            if job[j, EXEC] == executions[j]:
                env[b, N_DONE] += 1
                continue  # leaves the active list
            e += 1
            job[j, REQUEST] = requests[j, c, draws[e]]
            job[j, REQ_TIME] = t
            ex[e, E_REQUEST] = t
        act[b, keep] = j
        keep += 1
    env[b, ACT_LEN] = keep
    return missed


@nb.njit(cache=True)
def _elasticity(
    b: int, t: int, cl: Arr, elog: Arr, elastic: Arr, step: int, limit: int, window: int
) -> None:
    """Step 2 for every elastic cluster of env ``b``; each change is logged in ``elog``."""
    for c in range(elastic.shape[0]):
        if not elastic[c] or t - cl[b, c, LAST_CHANGE] < window:
            continue
        change = 0
        if cl[b, c, LAST_HIGH] >= t - window:
            change = min(step, limit - cl[b, c, EXTRA])
        elif cl[b, c, EXTRA] > 0 and cl[b, c, USED] <= cl[b, c, CAP] - min(step, cl[b, c, EXTRA]):
            change = -min(step, cl[b, c, EXTRA])
        if change != 0:
            cl[b, c, EXTRA] += change
            cl[b, c, CAP] += change
            cl[b, c, LAST_CHANGE] = t
            n = cl[b, c, N_CHANGES]
            if n < elog.shape[2]:
                elog[b, c, n, 0] = t
                elog[b, c, n, 1] = cl[b, c, EXTRA]
            cl[b, c, N_CHANGES] = n + 1


@nb.njit(cache=True)
def _arrivals(b: int, t: int, env: Arr, buf: Arr, jobs: Jobs) -> None:
    """Step 3."""
    bounds, arrival = jobs[BOUNDS], jobs[ARRIVAL]
    while env[b, NEXT] < bounds[b + 1] and arrival[env[b, NEXT]] <= t:
        buf[b, env[b, BUF_LEN]] = env[b, NEXT]
        env[b, BUF_LEN] += 1
        env[b, NEXT] += 1


@nb.njit(cache=True)
def _dispatch(
    b: int, t: int, q: int, i: int, env: Arr, job: Arr, ex: Arr, buf: Arr, act: Arr, jobs: Jobs
) -> None:
    """Step 4: the job in buffer position ``q`` goes to cluster ``i``."""
    requests, draws, exec_bounds = jobs[REQUESTS], jobs[DRAWS], jobs[EXEC_BOUNDS]
    j = buf[b, q]
    for k in range(q, env[b, BUF_LEN] - 1):
        buf[b, k] = buf[b, k + 1]
    env[b, BUF_LEN] -= 1
    e = exec_bounds[j]
    job[j, CLUSTER] = i
    job[j, DISPATCH] = t
    job[j, EXEC] = 0
    job[j, REQUEST] = requests[j, i, draws[e]]
    job[j, REQ_TIME] = t
    ex[e, E_REQUEST] = t
    pos = env[b, ACT_LEN]  # keep the active list in arrival (row) order
    while pos > 0 and act[b, pos - 1] > j:
        act[b, pos] = act[b, pos - 1]
        pos -= 1
    act[b, pos] = j
    env[b, ACT_LEN] += 1


@nb.njit(cache=True)
def _local_and_record(
    b: int,
    t: int,
    env: Arr,
    job: Arr,
    cl: Arr,
    ex: Arr,
    act: Arr,
    jobs: Jobs,
    ring: Arr,
    cum: Arr,
    sums: Arr,
    high: float,
) -> None:
    """Steps 5 and 6."""
    exec_time, exec_bounds = jobs[EXEC_TIME], jobs[EXEC_BOUNDS]
    for halting in (True, False):
        for idx in range(env[b, ACT_LEN]):
            j = act[b, idx]
            if job[j, RUNNING] == 1 or (job[j, REQ_TIME] < t) != halting:
                continue
            c = job[j, CLUSTER]
            if cl[b, c, USED] + job[j, REQUEST] <= cl[b, c, CAP]:
                cl[b, c, USED] += job[j, REQUEST]
                job[j, RUNNING] = 1
                job[j, FIN_TIME] = t + exec_time[j, c]
                ex[exec_bounds[j] + job[j, EXEC], E_START] = t
    slot = t % ring.shape[2]
    before = (t - 1) % ring.shape[2]
    for c in range(cl.shape[1]):
        ratio = cl[b, c, USED] / cl[b, c, CAP]
        ring[b, c, slot] = ratio
        cum[b, c, slot] = ratio + (cum[b, c, before] if t > 0 else 0.0)
        if ratio >= high:
            cl[b, c, LAST_HIGH] = t
        sums[b, c, 0] += cl[b, c, USED]
        sums[b, c, 1] += cl[b, c, CAP]


@nb.njit(cache=True)
def advance(
    envs: Arr,
    actions: Arr,
    fresh: bool,
    slots: int,
    env: Arr,
    job: Arr,
    cl: Arr,
    ex: Arr,
    buf: Arr,
    act: Arr,
    ring: Arr,
    cum: Arr,
    sums: Arr,
    elog: Arr,
    jobs: Jobs,
    elastic: Arr,
    step: int,
    limit: int,
    window: int,
    high: float,
) -> tuple[Arr, int]:
    """Apply one action per env of ``envs`` and run each to its next decision (or its end).

    ``fresh``: the envs were just reset (no moment has begun; ``actions`` are ignored). Action
    ``a ≥ 1`` dispatches buffer position ``q`` to cluster ``i`` with ``a = 1 + i·slots + q``;
    ``0`` or an invalid action dispatches nothing (counted in ``VOIDS``). Returns
    ``(missed, status)``: missed deadlines per env during the call (int64, ``(n,)``) and
    :data:`OK` or :data:`TIME_LIMIT` (an env passed its time limit plus its void moments, which
    a correct model never does).
    """
    missed = np.zeros(envs.shape[0], dtype=np.int64)
    n_clusters = cl.shape[1]
    bounds = jobs[BOUNDS]
    for idx in range(envs.shape[0]):
        b = envs[idx]
        if env[b, DONE] == 1:
            continue
        if not fresh:
            t = env[b, NOW]
            a = actions[idx] - 1
            i, q = a // slots, a % slots
            if a >= 0 and i < n_clusters and q < min(env[b, BUF_LEN], slots):
                _dispatch(b, t, q, i, env, job, ex, buf, act, jobs)
            else:
                env[b, VOIDS] += 1
            _local_and_record(b, t, env, job, cl, ex, act, jobs, ring, cum, sums, high)
            env[b, NOW] += 1
        while True:
            t = env[b, NOW]
            if t > env[b, LIMIT] + env[b, VOIDS]:
                return missed, TIME_LIMIT
            missed[idx] += _completions(b, t, env, job, cl, ex, act, jobs)
            _elasticity(b, t, cl, elog, elastic, step, limit, window)
            _arrivals(b, t, env, buf, jobs)
            if env[b, N_DONE] == bounds[b + 1] - bounds[b]:
                env[b, DONE] = 1
                break
            if env[b, BUF_LEN] > 0:
                break
            _local_and_record(b, t, env, job, cl, ex, act, jobs, ring, cum, sums, high)
            env[b, NOW] += 1
    return missed, OK
