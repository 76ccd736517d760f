"""Public conformance check of a policy (scikit-learn's ``check_estimator`` for schedulers).

:func:`check_policy` runs a policy through what evaluation, training and imitation ask of it
(:class:`~schedlab.policies.base.Policy`) on small seeded DeepRM jobsets, one pool and two
machines, and raises ``AssertionError`` naming the first broken rule:

* it declares a ``name``, the ``models`` it supports and a ``view``, and its ``get_params()``
  rebuild an equal policy;
* its actions are int64, one per observation, and valid in the mask (or void);
* ``act_batch`` does not change the observation it is given;
* the same seed gives the same schedule, and the schedule is feasible
  (:func:`~schedlab.simulator.check.check_schedule`);
* it survives pickling (experiment workers receive policies pickled) and schedules the same.

Tests run it over every registered policy, learned ones included; a policy of the multi-cluster
model only is checked there (:mod:`schedlab.policies.check_multicluster`).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.check import check_schedule
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy


def _jobsets(seed: int) -> JobSet:
    from schedlab.registry import generators

    return generators.make("deeprm").generate_sweep([0.5, 1.3], n_jobsets=3, seed=seed)


def _arrays(obs: Any) -> list[np.ndarray]:
    """The arrays an observation holds (an image batch, or a snapshot's fields)."""
    fields = getattr(obs, "__slots__", None) or getattr(obs, "__dataclass_fields__", {})
    out = [getattr(obs, f) for f in fields if isinstance(getattr(obs, f, None), np.ndarray)]
    return out if out else [np.asarray(obs)]


def check_actions(policy: Any, model: Any, *, steps: int = 50) -> None:
    """Step ``model`` (any :class:`~schedlab.simulator.model.Model`, freshly reset) with
    ``policy`` for up to ``steps`` decisions: int actions, one per observation, inside the mask,
    and ``act_batch`` leaves its observation unchanged (``AssertionError`` otherwise)."""
    policy.reset(seed=0)
    for _ in range(steps):
        active = np.flatnonzero(~model.done)
        if not active.size:
            return
        obs, mask = model.observe(policy.view, active), model.action_mask(active)
        before = [a.copy() for a in _arrays(obs)]
        actions = np.asarray(policy.act_batch(obs, mask=mask))
        assert all(np.array_equal(a, b) for a, b in zip(_arrays(obs), before, strict=True)), (
            f"{policy.name}: act_batch changed its observation"
        )
        assert actions.shape == (active.size,), f"{policy.name}: {actions.shape} actions"
        assert np.issubdtype(actions.dtype, np.integer), f"{policy.name}: {actions.dtype}"
        chosen = mask[np.arange(active.size), np.clip(actions, 0, mask.shape[1] - 1)]
        assert ((actions >= 0) & (actions < mask.shape[1]) & chosen).all(), (
            f"{policy.name}: actions outside the mask: {actions[~chosen][:5]}"
        )
        model.step(actions, active)


def _configs(policy: Any) -> list[ClusterConfig]:
    """One pool and two machines; a learned policy only on the geometry it was trained on."""
    g = getattr(policy, "geometry", None)
    if g is None:
        return [ClusterConfig(machines=1), ClusterConfig(machines=2)]
    return [
        ClusterConfig(
            slots=g.slots, horizon=g.horizon, backlog_view=g.backlog_view, machines=g.machines
        )
    ]


def check_policy(policy: Any, *, seed: int = 0) -> None:
    """Raise ``AssertionError`` if ``policy`` (an instance) breaks the policy contract."""
    for attr in ("name", "models", "view", "reset", "act_batch", "get_params"):
        assert hasattr(policy, attr), f"{type(policy).__name__} has no {attr!r}"
    if set(policy.models) == {"multicluster"}:
        from schedlab.policies.check_multicluster import check_multicluster_policy

        check_multicluster_policy(policy, seed=seed)
        return
    assert "cluster" in policy.models, f"{policy.name}: checks run on the cluster model"
    params = policy.get_params()
    assert isinstance(params, dict), f"{policy.name}: get_params() must return a dict"
    clone = type(policy)(**params)
    assert clone.get_params() == params, f"{policy.name}: get_params() does not rebuild it"
    jobset = _jobsets(seed)
    for config in _configs(policy):
        check_actions(copy.deepcopy(policy), BatchedEngine.from_jobset(jobset, config))
        first = run_policy(jobset, copy.deepcopy(policy), config)
        check_schedule(jobset, first.start, first.machine, machines=config.machines)
        again = run_policy(jobset, pickle.loads(pickle.dumps(policy)), config)
        assert np.array_equal(first.start, again.start), f"{policy.name}: not reproducible"
        assert np.array_equal(first.machine, again.machine), f"{policy.name}: not reproducible"
