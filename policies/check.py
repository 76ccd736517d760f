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

Tests run it over every registered policy, learned ones included. The rules above are checked on
the model kind the policy acts on (:func:`~schedlab.simulator.model.model_kind`): this module's
:func:`check_cluster_policy` for the cluster model, the kind's own check for another
(:mod:`schedlab.policies.check_multicluster`).
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.check import check_schedule
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import Policy, model_kind, rollout, traits
from schedlab.simulator.pick.engine import PickConfig, PickEngine
from schedlab.simulator.pick.run import is_pick_agent
from schedlab.simulator.run import run_policy


def _jobsets(seed: int) -> JobSet:
    from schedlab.registry import generators

    jobs: JobSet = generators.make("deeprm").generate_sweep([0.5, 1.3], n_jobsets=3, seed=seed)
    return jobs


def _arrays(obs: Any) -> list[np.ndarray]:
    """The arrays an observation holds (an image batch, or a snapshot's fields)."""
    fields = getattr(obs, "__slots__", None) or getattr(obs, "__dataclass_fields__", {})
    out = [getattr(obs, f) for f in fields if isinstance(getattr(obs, f, None), np.ndarray)]
    return out if out else [np.asarray(obs)]


def check_actions(policy: Policy, model: Any, *, steps: int = 50) -> None:
    """Step ``model`` (any :class:`~schedlab.simulator.model.Model`, freshly reset) with
    ``policy`` for up to ``steps`` decisions: int actions, one per observation, inside the mask,
    and ``act_batch`` leaves its observation unchanged (``AssertionError`` otherwise)."""

    def act(obs: Any, mask: np.ndarray, active: np.ndarray) -> np.ndarray:
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
        return actions

    policy.reset(seed=0)
    rollout(model, policy, act=act, steps=steps)


def check_reproducible(
    policy: Any, run: Callable[[Any], tuple[np.ndarray, ...]]
) -> tuple[np.ndarray, ...]:
    """``run`` (a policy -> the arrays of its schedule) gives the same arrays for a copy of
    ``policy`` and for ``policy`` pickled and unpickled (experiment workers receive policies
    pickled); returns the first run's arrays."""
    first = run(copy.deepcopy(policy))
    again = run(pickle.loads(pickle.dumps(policy)))
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a, b), f"{policy.name}: not reproducible"
    return first


def _configs(policy: Any) -> list[ClusterConfig]:
    """One pool and two machines; a learned policy only on the geometry it was trained on."""
    g = traits(policy).geometry
    if g is None:
        return [ClusterConfig(machines=1), ClusterConfig(machines=2)]
    return [
        ClusterConfig(
            slots=g.slots, horizon=g.horizon, backlog_view=g.backlog_view, machines=g.machines
        )
    ]


def check_policy(policy: Policy, *, seed: int = 0) -> None:
    """Raise ``AssertionError`` if ``policy`` (an instance) breaks the policy contract: the
    checks common to every model, then those of the model kind it acts on
    (:attr:`~schedlab.simulator.model.ModelKind.check_policy`)."""
    for attr in ("name", "models", "view", "reset", "act_batch", "get_params"):
        assert hasattr(policy, attr), f"{type(policy).__name__} has no {attr!r}"
    try:
        kind = model_kind([policy])
    except ValueError as exc:
        raise AssertionError(f"{policy.name}: {exc}") from None
    params = policy.get_params()
    assert isinstance(params, dict), f"{policy.name}: get_params() must return a dict"
    clone = type(policy)(**params)
    assert clone.get_params() == params, f"{policy.name}: get_params() does not rebuild it"
    kind.load_policy_check()(policy, seed=seed)


def _model(policy: Any, jobset: JobSet, config: ClusterConfig) -> Any:
    """The engine ``policy`` acts on, fresh: the pick engine for a pick agent (a learned job
    order under its discipline), else the batched engine."""
    if not is_pick_agent(policy):
        return BatchedEngine.from_jobset(jobset, config)
    pick = PickConfig(visible=policy.candidates, queue=policy.queue, machines=config.machines)
    engine = PickEngine.for_jobsets(jobset, pick)
    engine.reset()
    return engine


def check_cluster_policy(policy: Policy, *, seed: int = 0) -> None:
    """The cluster model's part of :func:`check_policy` (module docstring)."""
    jobset = _jobsets(seed)
    for config in _configs(policy):
        check_actions(copy.deepcopy(policy), _model(policy, jobset, config))

        def run(p: Any, config: ClusterConfig = config) -> tuple[np.ndarray, ...]:
            result = run_policy(jobset, p, config)
            check_schedule(jobset, result.start, result.machine, machines=config.machines)
            return result.start, result.machine

        check_reproducible(policy, run)
