"""Liu et al.'s action values, computed after the fact (ICPP'20, §4.2 and §4.3, Eq. 1).

The value of dispatching job ``j`` to cluster ``c`` is known only once ``j`` has terminated. With
``η_c`` the cluster's and ``η_j`` the job's expected heterogeneity factor, its three components are

* ``v1 = −(η_c · m_ih · m_ic / η_j) · (M_j + Σ_t β^{D_t} W_j(t))``: the job's own missed
  deadlines, ``M_j`` of executions that did not wait to start (undecayed), ``W_j(t)`` of those
  that waited, finishing at ``t``;
* ``v2 = −(η_c · m_ih · m_ic / η_j) · Σ_{t = t_s}^{t_e} β^{D_t} W_cl(t)``: missed deadlines of
  executions that waited, of every job on the cluster (``j`` included), finishing at ``t``
  while ``j`` was there (dispatch ``t_s`` to its last finish ``t_e``);
* ``v3 = −ψ_ih · ψ_ic · R_j``: ``R_j`` = mean execution time over standard time, minus 1.

``D_t`` counts the jobs dispatched to the same cluster after ``t_s`` and up to ``t``; ``β``
decays what later jobs share the blame for. Eq. 1: ``m_Ω = P_mΩ`` if event Ω happened, else 1;
``ψ_Ω = P_ψΩ`` if it happened and ``R_j > 0``, ``1 / P_ψΩ`` if it happened and ``R_j ≤ 0``,
else 1; events **IH** (improper heterogeneity: the job's execution time on the cluster alone
exceeds its deadline there) and **IC** (initial competition: its first execution had to wait).
The paper gives neither β nor the ``P`` (only ``P ≥ 1``): :class:`ValueParams` holds our
defaults. The scalarised value is ``Σ_k w_k v_k`` (:func:`scalarise`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated

import numba as nb
import numpy as np

from schedlab.param_checks import check_params
from schedlab.params import Interval
from schedlab.simulator.multicluster.model import MultiClusterModel

Decay = Annotated[float, Interval(gt=0, le=1)]
"""β of the values: 0 < β <= 1."""
Factor = Annotated[float, Interval(ge=1)]
"""A ``P`` of Eq. 1: >= 1 (the paper's only constraint)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ValueParams:
    """Constants of the value definition (unstated in the paper; our defaults)."""

    beta: Decay = 0.9
    """Decay per job dispatched later to the same cluster."""
    p_m_ih: Factor = 2.0
    """``P_m`` of improper heterogeneity."""
    p_m_ic: Factor = 2.0
    """``P_m`` of initial competition."""
    p_psi_ih: Factor = 2.0
    """``P_ψ`` of improper heterogeneity."""
    p_psi_ic: Factor = 2.0
    """``P_ψ`` of initial competition."""

    def __post_init__(self) -> None:
        check_params(ValueParams, asdict(self), owner="ValueParams")


@dataclass(frozen=True, slots=True)
class JobValues:
    """Per job row of a finished model (``N`` rows; float64 unless stated)."""

    v: np.ndarray
    """``(N, 3)``: v1, v2, v3."""
    ih: np.ndarray
    """bool ``(N,)``: improper heterogeneity."""
    ic: np.ndarray
    """bool ``(N,)``: initial competition."""
    delay: np.ndarray
    """``(N,)``: ``R_j``."""


def scalarise(v: np.ndarray, weights: tuple[float, float, float]) -> np.ndarray:
    """``Σ_k w_k v_k`` over the last axis (length 3)."""
    return np.asarray(v, dtype=np.float64) @ np.asarray(weights, dtype=np.float64)


def action_values(model: MultiClusterModel, params: ValueParams | None = None) -> JobValues:
    """The values of every job's dispatch in ``model`` (every env must be done)."""
    if not model.done.all():
        msg = "action values are known only once every episode has finished"
        raise ValueError(msg)
    p = params or ValueParams()
    jobs, log = model.jobs, model.executions()
    n, rows = jobs.arrival.size, np.arange(jobs.arrival.size)
    cluster = model.placements().target
    t_s, t_e = model.dispatch_times(), model.placements().finish
    env = np.repeat(np.arange(jobs.bounds.size - 1), np.diff(jobs.bounds))
    group = env * jobs.n_clusters + cluster
    first = jobs.exec_bounds[:-1]
    deadline = jobs.deadline[rows, cluster]
    exec_time = jobs.exec_time[rows, cluster]
    ih = (deadline >= 0) & (exec_time > deadline)
    ic = log.waited[first]
    delay = exec_time / jobs.standard_time - 1.0
    waited_miss = log.missed & log.waited
    own_undecayed = np.bincount(log.job[log.missed & ~log.waited], minlength=n)
    dep_order = np.lexsort((t_s, group))
    ev = np.flatnonzero(waited_miss)
    ev = ev[np.lexsort((log.finish[ev], group[log.job[ev]]))]
    n_groups = int(group.max()) + 1
    own, shared = _decayed(
        group,
        t_s,
        t_e,
        t_s[dep_order],
        np.searchsorted(group[dep_order], np.arange(n_groups + 1)),
        log.finish[ev],
        log.job[ev],
        np.searchsorted(group[log.job[ev]], np.arange(n_groups + 1)),
        p.beta,
    )
    factor = np.asarray(model.config.hetero)[cluster] / jobs.hetero
    factor = factor * np.where(ih, p.p_m_ih, 1.0) * np.where(ic, p.p_m_ic, 1.0)
    psi = _psi(ih, delay, p.p_psi_ih) * _psi(ic, delay, p.p_psi_ic)
    v = np.stack([-factor * (own_undecayed + own), -factor * shared, -psi * delay], axis=1)
    return JobValues(v=v, ih=ih, ic=ic, delay=delay)


def _psi(event: np.ndarray, delay: np.ndarray, p: float) -> np.ndarray:
    """ψ of Eq. 1."""
    return np.where(event, np.where(delay > 0, p, 1.0 / p), 1.0)


@nb.njit(cache=True)
def _decayed(
    group: np.ndarray,
    t_s: np.ndarray,
    t_e: np.ndarray,
    dep_times: np.ndarray,
    dep_off: np.ndarray,
    ev_time: np.ndarray,
    ev_job: np.ndarray,
    ev_off: np.ndarray,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per job: ``Σ β^{D_t}`` over its own waited misses and over its cluster's, in
    ``[t_s, t_e]``. Deployments and events are sorted by (group, time); ``*_off`` index them."""
    n = group.shape[0]
    own = np.zeros(n)
    shared = np.zeros(n)
    for j in range(n):
        g = group[j]
        deps = dep_times[dep_off[g] : dep_off[g + 1]]
        base = np.searchsorted(deps, t_s[j], side="right")
        lo, hi = ev_off[g], ev_off[g + 1]
        k = lo + np.searchsorted(ev_time[lo:hi], t_s[j], side="left")
        while k < hi and ev_time[k] <= t_e[j]:
            w = beta ** (np.searchsorted(deps, ev_time[k], side="right") - base)
            shared[j] += w
            if ev_job[k] == j:
                own[j] += w
            k += 1
    return own, shared
