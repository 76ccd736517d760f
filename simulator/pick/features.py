"""What an agent of the pick engine observes: per candidate job, its own features and the
cluster's (:class:`PickView`, compiled :func:`observe_envs`).

The observation of one env is float32, shape ``(K, F)``: row ``q`` describes candidate ``q``
(the waiting jobs the current decision may pick, in arrival order; rows past the candidates
are zero and masked). Every row holds :data:`JOB_FEATURES` then :data:`CLUSTER_FEATURES` (the
same for every row), so a network that scores each row with shared weights (RLScheduler's
kernel, Zhang et al. SC'20) sees the job and the state it would start in. Everything is
normalised to ``[0, 1]`` independently of the cluster's size and of the time step: times are
in seconds (steps × the JobSet's seconds per step, or 1 s for workloads defined in steps)
through :func:`squash`, demands as shares of one machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np

from schedlab.simulator.cluster.placement import place
from schedlab.simulator.pick.kernels import (
    BACKFILL,
    GREEDY,
    HEAD,
    K_,
    NEVER,
    RULE_,
    step_state,
)
from schedlab.simulator.pick.state import Packed, PickState, views

JOB_FEATURES = ("wait", "estimate", "size", "log_size", "max_share", "fits_now", "wait_ratio")
"""Per job: time waited so far and requested time (the estimate the scheduler sees), both
:func:`squash`-ed; demand of the first resource (processors) as a share of one machine, and on
a log scale, ``log1p(demand) / log1p(capacity)`` (so that ``estimate + log_size`` orders by
requested area); the largest demand share over the resources; 1 if it fits now on some machine
(always 1 in the greedy and backfill phases, whose candidates all fit); ``wait / (wait +
estimate)``."""
CLUSTER_FEATURES = (
    "free",
    "queue",
    "next_end",
    "backfill",
    "to_reservation",
    "greedy",
    "strict",
    "easy",
)
"""Per env: free share of the first resource over the cluster; waiting jobs,
``log1p(n) / log1p(1024)`` (at most 1); time to the running jobs' first expected end
(``start + estimate``; 0 if none) and, in the backfill phase, to the head's reservation, both
:func:`squash`-ed; 1 in the backfill phase (picking around EASY's head); the discipline, one-hot."""
FEATURES = (*JOB_FEATURES, *CLUSTER_FEATURES)
"""Column names of an observation row."""
N_FEATURES = len(FEATURES)
TAU_S, TOP_S = 10.0, 1e6
""":func:`squash` maps 0 s to 0, ``TAU_S`` to about 0.06, one hour to 0.51 and ``TOP_S`` (about
11.6 days) or more to 1."""
_LOG_TOP = np.log1p(TOP_S / TAU_S)
_LOG_QUEUE = np.log1p(1024.0)


@numba.njit(cache=True, inline="always")
def squash(seconds: float) -> float:
    """``min(1, log1p(seconds / 10) / log1p(10^5))``: a time in seconds in ``[0, 1]``."""
    return float(min(1.0, np.log1p(max(seconds, 0.0) / TAU_S) / _LOG_TOP))


@numba.njit(cache=True)
def observe_envs(p: Packed, envs: np.ndarray, out: np.ndarray) -> None:
    """Write the observation of ``envs[x]`` into ``out[x]`` (float32, ``(n, K, F)``)."""
    _observe(views(p), envs, out)


@numba.njit(cache=True)
def step_observe(
    p: Packed, envs: np.ndarray, actions: np.ndarray, out: np.ndarray, mask: np.ndarray
) -> None:
    """:func:`~.kernels.step_envs`, then the observations (``out``) and the candidates (bool
    ``mask``, ``(n, K)``: position 0 alone where there is none) of ``envs``, in one call."""
    s = views(p)
    step_state(s, envs, actions)
    _observe(s, envs, out)
    for x in range(envs.size):
        c = s.cn[envs[x]]
        for q in range(mask.shape[1]):
            mask[x, q] = q < c or (q == 0 and c == 0)


@numba.njit(cache=True)
def _observe(s: PickState, envs: np.ndarray, out: np.ndarray) -> None:
    step = s.fparams[0]
    m = s.free.shape[1]
    nj = len(JOB_FEATURES)
    for x in range(envs.size):
        b = envs[x]
        out[x] = 0.0
        c, now, lo = s.cn[b], s.now[b], s.lo[b]
        if c == 0:
            continue
        free = 0.0
        for i in range(m):
            free += s.free[b, i, 0]
        first_end = NEVER
        for y in range(s.rn[b]):
            j = s.rq[b, y]
            first_end = min(first_end, max(s.start[b, j - lo] + s.estimate[j], now + 1))
        backfill = s.phase[b] == BACKFILL
        cluster = np.zeros(len(CLUSTER_FEATURES), dtype=np.float32)
        cluster[0] = free / (m * s.capacity[0])
        cluster[1] = min(1.0, np.log1p(s.wn[b]) / _LOG_QUEUE)
        cluster[2] = squash((first_end - now) * step) if first_end < NEVER else 0.0
        cluster[3] = 1.0 if backfill else 0.0
        cluster[4] = squash((s.shadow[b] - now) * step) if backfill and s.hm[b] >= 0 else 0.0
        q = s.queue[b]
        cluster[5 + q] = 1.0  # greedy, strict, easy (the codes 0, 1, 2)
        check = s.phase[b] == HEAD and q != GREEDY
        for k in range(min(c, s.iparams[K_])):
            j = s.cand[b, k]
            row = out[x, k]
            wait = (now - s.arrival[j]) * step
            est = s.estimate[j] * step
            row[0] = squash(wait)
            row[1] = squash(est)
            share = 0.0
            for r in range(s.demand.shape[1]):
                share = max(share, s.demand[j, r] / s.capacity[r])
            row[2] = s.demand[j, 0] / s.capacity[0]
            row[3] = np.log1p(s.demand[j, 0]) / np.log1p(s.capacity[0])
            row[4] = share
            fits = not check or place(s.iparams[RULE_], s.free[b], s.capacity, s.demand[j]) >= 0
            row[5] = 1.0 if fits else 0.0
            row[6] = wait / max(wait + est, 1e-12)
            row[nj:] = cluster


@dataclass(frozen=True, slots=True)
class PickSnapshot:
    """What a :class:`PickView` reads of the envs ``envs`` of a pick engine (read only)."""

    state: Packed
    envs: np.ndarray
    """int64, shape ``(n,)``."""
    visible: int
    """K: candidates per decision."""


class PickView:
    """The pick engine's observation: float32, shape ``(n, K, F)`` (module docstring)."""

    name: ClassVar[str] = "pick"
    features: ClassVar[tuple[str, ...]] = FEATURES

    def observe(self, snapshot: PickSnapshot) -> np.ndarray:
        """The observations of ``snapshot.envs``."""
        out = np.empty((snapshot.envs.size, snapshot.visible, N_FEATURES), dtype=np.float32)
        observe_envs(snapshot.state, snapshot.envs, out)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PickView)

    def __hash__(self) -> int:
        return hash(self.name)
