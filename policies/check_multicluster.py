"""Conformance check of a multi-cluster policy (the multi-cluster kind's part of
:func:`schedlab.policies.check.check_policy`, which checks ``name``, ``models``, ``view`` and
``get_params()`` first).

On small seeded ``liu-multicluster`` jobsets (Uniform and Bernoulli arrivals): its actions are
int64, one per observation and inside the mask; ``act_batch`` leaves its observation unchanged;
every episode ends and passes :func:`~schedlab.simulator.multicluster.check.check_run`; the same
policy (fresh, or pickled) gives the same placements.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from schedlab.jobset import JobSet
from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.check import check_actions, check_reproducible
from schedlab.simulator.model import Policy
from schedlab.simulator.multicluster.check import check_run
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.run import run_policy


def _jobsets(seed: int) -> list[JobSet]:
    out = []
    for pattern in ("uniform", "bernoulli"):
        gen = LiuMultiClusterGenerator(pattern=pattern, n_jobs=80)
        out.append(gen.generate_rates([gen.natural_rate()], n_jobsets=2, seed=seed))
    return out


def check_multicluster_policy(policy: Policy, *, seed: int = 0) -> None:
    """The multi-cluster model's part of :func:`~schedlab.policies.check.check_policy`
    (module docstring); ``AssertionError`` names the broken rule."""
    for jobset in _jobsets(seed):
        model = MultiClusterModel.from_jobset(jobset)
        model.reset()
        check_actions(copy.deepcopy(policy), model, steps=40)

        def run(p: Any, model: MultiClusterModel = model) -> tuple[np.ndarray, ...]:
            check_run(run_policy(model, p))
            placed = model.placements()
            return placed.start, placed.finish, placed.target

        check_reproducible(policy, run)
