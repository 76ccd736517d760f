"""Pick agents in ``simulate``: every jobset of a JobSet replayed at once by the pick engine,
one observation batch and one ``act_batch`` call per decision (:func:`run_picks`).

A policy whose ``view`` is a :class:`~schedlab.simulator.pick.features.PickView` is a pick
agent: :func:`schedlab.simulator.run.run_policy` hands it here, with its ``queue`` (the
discipline around its picks) and ``candidates`` (K; default 128). The whole queue is scheduled
whatever the cluster's ``slots`` (as the heuristics' disciplines do); the cluster's ``machines``
and ``overrun`` apply.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from schedlab.errors import SimulationError
from schedlab.jobset import JobSet
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import Placements, Policy, rollout, traits
from schedlab.simulator.pick.engine import PickConfig, PickEngine, PickQueue
from schedlab.simulator.pick.features import PickView


def is_pick_agent(policy: Policy) -> bool:
    """Whether ``policy`` observes the pick engine."""
    return isinstance(policy.view, PickView)


def run_picks(jobset: JobSet, policy: Policy, config: ClusterConfig) -> Placements:
    """Start and machine of every job (rows in ``jobset.jobs`` order) under the pick agent
    ``policy``, every jobset replayed from an empty cluster.

    Raises
    ------
    ValueError
        A DAG workload, or a discipline the pick engine does not run.
    SimulationError
        Waiting jobs that could never start.
    """
    said = traits(policy)
    pick = PickConfig(
        visible=said.candidates,
        queue=cast(PickQueue, said.queue),
        machines=config.machines,
        overrun=config.overrun,
    )
    engine = PickEngine.for_jobsets(jobset, pick)
    policy.reset(seed=None)
    engine.reset()
    rollout(engine, policy)
    stalled = np.flatnonzero(engine.state.stalled)
    if stalled.size:
        ids = jobset.jobs.get_column("jobset").to_numpy()[engine.state.lo[stalled]]
        msg = f"jobsets {ids[:10].tolist()} stalled: waiting jobs could never start"
        raise SimulationError(msg)
    return engine.placements()
