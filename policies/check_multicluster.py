"""Conformance check of a multi-cluster policy (the multi-cluster side of
:func:`schedlab.policies.check.check_policy`).

On small seeded ``liu-multicluster`` jobsets (Uniform and Bernoulli arrivals): the policy
declares ``name``, ``models`` and ``view``; ``get_params()`` rebuilds it; its actions are int64,
one per observation and inside the mask; ``act_batch`` leaves its observation unchanged; every
episode ends and passes :func:`~schedlab.simulator.multicluster.check.check_run`; the same policy
(fresh, or pickled) gives the same placements.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np

from schedlab.jobset import JobSet
from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.check import check_actions
from schedlab.simulator.multicluster.check import check_run
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.run import run_policy


def _jobsets(seed: int) -> list[JobSet]:
    out = []
    for pattern in ("uniform", "bernoulli"):
        gen = LiuMultiClusterGenerator(pattern=pattern, n_jobs=80)
        out.append(gen.generate_rates([gen.natural_rate()], n_jobsets=2, seed=seed))
    return out


def check_multicluster_policy(policy: Any, *, seed: int = 0) -> None:
    """Raise ``AssertionError`` if ``policy`` (an instance) breaks the multi-cluster contract."""
    for attr in ("name", "models", "view", "reset", "act_batch", "get_params"):
        assert hasattr(policy, attr), f"{type(policy).__name__} has no {attr!r}"
    assert "multicluster" in policy.models, f"{policy.name}: not a multi-cluster policy"
    params = policy.get_params()
    assert isinstance(params, dict), f"{policy.name}: get_params() must return a dict"
    assert type(policy)(**params).get_params() == params, f"{policy.name}: not rebuilt"
    for jobset in _jobsets(seed):
        model = MultiClusterModel.from_jobset(jobset)
        model.reset()
        check_actions(copy.deepcopy(policy), model, steps=40)
        first = run_policy(model, copy.deepcopy(policy))
        check_run(first)
        placed = first.placements()
        again = run_policy(model, pickle.loads(pickle.dumps(policy))).placements()
        for a, b in zip((placed.start, placed.finish, placed.target), (again.start, again.finish,
                        again.target), strict=True):  # fmt: skip
            assert np.array_equal(a, b), f"{policy.name}: not reproducible"
