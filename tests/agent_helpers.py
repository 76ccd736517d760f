"""A test agent drives the batched and the step engine alike; its return is minus slowdown."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.cluster.engine import Engine, Jobs
from schedlab.simulator.config import ClusterConfig
from tests.strategies import jobset_arrays


def agent_and_step_engines(jobset: JobSet, config: ClusterConfig) -> tuple[BatchedEngine, Engine]:
    """``jobset`` (one jobset) on the batched engine in agent mode and on the step engine.

    The batched engine asks for every decision (forced ones too) and has no time limit short of
    10^6 steps: the agent's actions alone decide the schedule, which the step engine, given the
    same actions, must reproduce.
    """
    ((arrival, duration, demand, _),) = jobset_arrays(jobset)
    batched = BatchedEngine.from_jobset(
        jobset, config, skip_forced=False, time_limit=np.array([10**6])
    )
    return batched, Engine(Jobs(arrival, duration, demand), jobset.machine_capacity, config)


def assert_return_is_minus_slowdown(total: float, start: np.ndarray, jobset: JobSet) -> None:
    """An episode's return ``total`` is minus the summed slowdown of ``jobset``'s jobs started
    at ``start`` (shape ``(n,)``, in the jobset's row order)."""
    arrival = jobset.jobs.get_column("arrival").to_numpy()
    duration = jobset.jobs.get_column("duration").to_numpy()
    slowdown = (start + duration - arrival) / duration
    assert total == pytest.approx(-slowdown.sum(), rel=1e-9)
