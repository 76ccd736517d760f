"""Small simulated results shared by the report tests (DeepRM workload, two loads)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.policies.heuristics import FCFS, SJF, Packer
from schedlab.results import Results
from schedlab.simulator.run import simulate

POLICIES = ["sjf", "fcfs", "packer"]


@pytest.fixture(scope="session")
def jobs() -> JobSet:
    return DeepRMGenerator().generate_sweep([0.5, 1.5], n_jobsets=8, seed=3)


@pytest.fixture(scope="session")
def results(jobs: JobSet) -> Results:
    return simulate(jobs, [SJF(), FCFS(), Packer()])
