"""The pick engine's state: arrays packed into nine (:data:`Packed`, what crosses into compiled
code) and named views of them (:data:`PickState`, what kernels and the engine read and write).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

PickState = namedtuple(
    "PickState",
    "arrival runtime estimate demand run_s capacity iparams fparams "
    "lo hi now nxt free wq wn rq rn start machine phase queue head shadow hm extra cand cn "
    "n_started done stalled paid first last busy",
)
"""Views of the pick engine's arrays by name (``B`` envs, ``n`` jobs, ``W`` jobs per env at most,
``m`` machines, ``d`` resources, ``K`` candidates); kernels and the engine read and write the
state through them (:func:`unpack`).

Jobs (shared): ``arrival``, ``runtime`` (steps it runs), ``estimate`` (steps the scheduler
sees) (int64, ``(n,)``), ``demand`` (float64, ``(n, d)``), ``run_s`` (float64, ``(n,)``: run time
in seconds), ``capacity`` (float64, ``(d,)``: one machine), ``iparams`` (int64: ``K``, placement
rule, skip forced decisions, objective), ``fparams`` (float64: seconds per step, τ of the
bounded slowdown in seconds). Per env: ``lo``/``hi`` (rows), ``now``, ``nxt`` (next row to
arrive), ``free`` (``(B, m, d)``), ``wq``/``wn`` (waiting rows in arrival order, ``(B, W)``, and
their count), ``rq``/``rn`` (running rows), ``start``/``machine`` (``(B, W)``, by row − lo, -1
before), ``phase`` (:data:`.kernels.HEAD`, ``BACKFILL`` or ``IDLE``), ``queue`` (the
discipline, :data:`.kernels.QUEUES`), ``head`` (EASY's head row), ``shadow``/``hm``/``extra`` (its
reservation: time,
machine, ``(B, d)`` capacity it leaves free there), ``cand``/``cn`` (``(B, K)`` candidate rows of
the pending decision, and their count), ``n_started``, ``done``, ``stalled`` (0 or 1), ``paid``
(reward since the last decision), ``first``/``last`` (first arrival, last finish), ``busy``
(processor seconds run, as a share of the cluster).
"""

Packed = namedtuple("Packed", "jobs_i jobs_f params iparams env_i env_f lists cand free")
"""The same arrays packed into nine, which is what crosses into compiled code (unboxing a
namedtuple costs about half a microsecond per array, per call): ``jobs_i`` (``(n, 3)``:
arrival, runtime, estimate), ``jobs_f`` (``(n, 1 + d)``: run_s, demand), ``params`` (``2 + d``:
fparams, capacity), ``iparams``, ``env_i`` (``(B, 17)``: the per-env integers in
:data:`ENV_INTS` order), ``env_f`` (``(B, 2 + d)``: paid, busy, extra), ``lists`` (``(B, 4, W)``:
wq, rq, start, machine), ``cand``, ``free``."""
ENV_INTS = (
    "lo",
    "hi",
    "now",
    "nxt",
    "wn",
    "rn",
    "phase",
    "queue",
    "head",
    "shadow",
    "hm",
    "cn",
    "n_started",
    "done",
    "stalled",
    "first",
    "last",
)
"""Columns of ``env_i``."""


def pack(n: int, d: int, n_envs: int, m: int, width: int, visible: int) -> Packed:
    """Zeroed arrays for ``n`` jobs, ``d`` resources, ``n_envs`` envs of ``m`` machines, at
    most ``width`` jobs each, ``visible`` candidates."""
    i64 = np.int64
    return Packed(
        np.zeros((n, 3), i64),
        np.zeros((n, 1 + d)),
        np.zeros(2 + d),
        np.zeros(4, i64),
        np.zeros((n_envs, len(ENV_INTS)), i64),
        np.zeros((n_envs, 2 + d)),
        np.zeros((n_envs, 4, width), i64),
        np.zeros((n_envs, visible), i64),
        np.zeros((n_envs, m, d)),
    )


@numba.njit(cache=True, inline="always")
def views(p: Packed) -> PickState:
    e, f, q = p.env_i, p.env_f, p.lists
    return PickState(
        p.jobs_i[:, 0],
        p.jobs_i[:, 1],
        p.jobs_i[:, 2],
        p.jobs_f[:, 1:],
        p.jobs_f[:, 0],
        p.params[2:],
        p.iparams,
        p.params[:2],
        e[:, 0],
        e[:, 1],
        e[:, 2],
        e[:, 3],
        p.free,
        q[:, 0],
        e[:, 4],
        q[:, 1],
        e[:, 5],
        q[:, 2],
        q[:, 3],
        e[:, 6],
        e[:, 7],
        e[:, 8],
        e[:, 9],
        e[:, 10],
        f[:, 2:],
        p.cand,
        e[:, 11],
        e[:, 12],
        e[:, 13],
        e[:, 14],
        f[:, 0],
        e[:, 15],
        e[:, 16],
        f[:, 1],
    )


def unpack(p: Packed) -> PickState:
    """The named views of ``p`` (numpy views: writing them writes ``p``)."""
    e, f, q = p.env_i, p.env_f, p.lists
    named = dict(zip(ENV_INTS, e.T, strict=True))
    return PickState(
        arrival=p.jobs_i[:, 0],
        runtime=p.jobs_i[:, 1],
        estimate=p.jobs_i[:, 2],
        demand=p.jobs_f[:, 1:],
        run_s=p.jobs_f[:, 0],
        capacity=p.params[2:],
        iparams=p.iparams,
        fparams=p.params[:2],
        free=p.free,
        wq=q[:, 0],
        rq=q[:, 1],
        start=q[:, 2],
        machine=q[:, 3],
        extra=f[:, 2:],
        cand=p.cand,
        paid=f[:, 0],
        busy=f[:, 1],
        **named,
    )
