"""The contract between simulator models, views and policies (docs/architecture.md).

A **model** simulates ``B`` environments at once (:class:`Model`); a **view** turns a model's
:class:`Snapshot` into what a policy observes; a **policy** maps observations to actions with one
convention everywhere: ``0`` is void (time advances), ``a ≥ 1`` names a (job, target) pair. On
the cluster model, ``a = 1 + i·M + q`` places the job of visible slot ``q`` on machine ``i``.

A **model kind** (:class:`ModelKind`, registered in :data:`schedlab.registry.models`) says what
a model is made from and what comes with it: its config class, its constructor from a JobSet,
its results builder, its schedule check and its policy check. :func:`model_kind` finds the kind
a list of policies acts on; :func:`rollout` is the one loop that drives a model with a policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from schedlab.errors import ParameterError

if TYPE_CHECKING:
    from schedlab.jobset import JobSet
    from schedlab.results import Results


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What views may read of ``n`` environments of a cluster model (arrays are the model's own,
    indexed by env id: read, never write).

    ``free[b, k, i, r]``: free amount of resource ``r`` on machine ``i`` at ``now[b] + k``, shape
    ``(B, H, m, d)`` with ``H ≥ horizon``. ``view[b, q]``: job row in visible position ``q`` (-1:
    empty), shape ``(B, q)``. Job arrays are shared by all envs: ``demand`` (``(N, d)``),
    ``duration`` (steps each job runs), ``seen`` (the length a scheduler sees: the job's
    estimate where the JobSet has one, else ``duration``), ``arrival`` (``(N,)``); ``base[b]``
    is the row of env ``b``'s first job (a job's index in its jobset is ``row − base``).
    """

    envs: np.ndarray
    """int64, shape ``(n,)``: the env ids observed."""
    free: np.ndarray
    capacity: np.ndarray
    """float64, shape ``(d,)``: one machine's capacity."""
    view: np.ndarray
    demand: np.ndarray
    duration: np.ndarray
    seen: np.ndarray
    arrival: np.ndarray
    base: np.ndarray
    """int64, shape ``(B,)``."""
    backlog: np.ndarray
    """int64, shape ``(B,)``: jobs waiting beyond the visible positions."""
    since: np.ndarray
    """int64, shape ``(B,)``: steps since the last arrival."""
    now: np.ndarray
    """int64, shape ``(B,)``."""
    horizon: int
    """T: steps of look-ahead an agent may place a job at."""
    backlog_view: int
    """Backlog jobs the cluster's configuration shows by default (a view may show another)."""

    @property
    def machines(self) -> int:
        """m."""
        return int(self.free.shape[2])


@dataclass(frozen=True, slots=True)
class Placements:
    """Where and when every job ran, per job row (int64, shape ``(n,)`` each)."""

    start: np.ndarray
    finish: np.ndarray
    target: np.ndarray
    """Machine (cluster model) or cluster (multi-cluster model) of each job."""


S_contra = TypeVar("S_contra", contravariant=True)


@runtime_checkable
class View(Protocol[S_contra]):
    """Turns a model's snapshot (a :class:`Snapshot` of the cluster model) into an observation
    (never changes state)."""

    name: ClassVar[str]

    def observe(self, snapshot: S_contra) -> Any:
        """The observation of ``snapshot.envs``."""
        ...


@dataclass(frozen=True, slots=True)
class Traits:
    """What a policy tells the simulator besides its actions: the declared part of the policy
    contract, read once per simulation by :func:`traits` (a policy declares any of them as an
    attribute; one it leaves out takes the default here)."""

    queue: str = "greedy"
    """Its queue discipline: ``greedy``, ``strict``, ``easy`` or ``conservative``
    (:data:`~schedlab.simulator.cluster.disciplines.DISCIPLINES`; agents: no ``conservative``)."""
    clairvoyant: bool = False
    """It sees jobs' real run times instead of their estimates."""
    sees: str = "length"
    """What its job order sees of a DAG task: its ``length`` or its ``rank`` (upward rank)."""
    geometry: Any = None
    """The cluster a learned network was trained on (``machines``, ``slots``, ``horizon``
    attributes, None where any cluster goes)."""
    static: bool = False
    """Its job order depends only on the job (a heuristic's score)."""
    candidates: int = 128
    """K: the waiting jobs an agent of the pick engine chooses among (:mod:`.pick`)."""


QUEUES = ("greedy", "strict", "easy", "conservative")
SEES = ("length", "rank")


def traits(policy: object) -> Traits:
    """The :class:`Traits` ``policy`` declares, checked: the one place the simulator reads them
    (a plug-in's wrong value is a one-line :class:`~schedlab.errors.ParameterError`)."""
    declared = {f.name: getattr(policy, f.name) for f in fields(Traits) if hasattr(policy, f.name)}
    t = Traits(**declared)
    name = getattr(policy, "name", type(policy).__name__)
    if t.queue not in QUEUES:
        raise ParameterError(f"policy {name!r}: queue {t.queue!r} is not one of {QUEUES}")
    if t.sees not in SEES:
        raise ParameterError(f"policy {name!r}: sees {t.sees!r} is not one of {SEES}")
    if not isinstance(t.clairvoyant, bool | np.bool_) or not isinstance(t.static, bool | np.bool_):
        raise ParameterError(f"policy {name!r}: clairvoyant and static are booleans")
    return t


@runtime_checkable
class Policy(Protocol):
    """What every registered policy provides: these members, and any of :class:`Traits`'
    (``queue``, ``clairvoyant``, ``sees``, ``geometry``, ``static``, ``candidates``) it does not
    leave to their defaults."""

    name: str
    """Label in results (a policy made with parameters is named by its spec)."""
    models: frozenset[str]
    """Model kinds it can act on (:attr:`schedlab.simulator.model.Model.kind`)."""

    @property
    def view(self) -> View[Any]:
        """The view it observes."""
        ...

    def reset(self, *, seed: int | None = None) -> None:
        """Prepare for a new batch of episodes; randomised policies reseed here (``seed`` is the
        jobset id when one jobset is run at a time)."""
        ...

    def act_batch(self, obs: Any, *, mask: np.ndarray) -> np.ndarray:
        """Actions, int64, shape ``(n,)``, for ``n`` observations whose valid actions are
        ``mask`` (bool, shape ``(n, n_actions)``); an action outside ``mask`` acts as void."""
        ...

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters, for reports and reproducibility."""
        ...


@runtime_checkable
class Model(Protocol):
    """``B`` environments simulated together (see the module docstring for actions)."""

    kind: ClassVar[str]

    @property
    def n_envs(self) -> int:
        """B."""
        ...

    @property
    def n_actions(self) -> int:
        """Actions per decision, void included."""
        ...

    @property
    def done(self) -> np.ndarray:
        """bool, shape ``(B,)``: every job of the env has been placed."""
        ...

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` (all by default); rewards of steps skipped before a decision."""
        ...

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """Apply one action per env (int, shape ``(n,)``); returns the rewards, shape ``(n,)``."""
        ...

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Valid actions, bool, shape ``(n, n_actions)``; column 0 (void) is always True."""
        ...

    def observe(self, view: View[Any], envs: np.ndarray | None = None) -> Any:
        """What ``view`` shows of ``envs``."""
        ...

    def placements(self) -> Placements:
        """Start, finish and target of every job (valid once ``done``)."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelKind:
    """What one kind of simulator model is made of (registered in
    :data:`schedlab.registry.models`, under :attr:`name`); a new kind is its own package plus one
    registration."""

    name: str
    """The kind (:attr:`Model.kind`); policies acting on it list it in ``models`` and carry the
    registry tag :attr:`tag`."""
    config: type
    """Frozen dataclass of the model's settings (the experiment spec's ``[cluster]`` table)."""
    from_jobset: Callable[[JobSet, Any], Model]
    """``from_jobset(jobset, config)``: a fresh :class:`Model` with one env per jobset."""
    simulate: Callable[..., Results]
    """``simulate(jobset, policies, config, **options)``: per-job results of every policy on
    every jobset (:data:`~schedlab.results.RESULT_COLUMNS` and the kind's own columns)."""
    check_schedule: Callable[[JobSet, Any], None]
    """``check_schedule(jobset, model)``: raise
    :class:`~schedlab.simulator.check.InvalidScheduleError` unless the finished ``model`` of
    ``jobset`` obeys the kind's rules."""
    check_policy: str
    """``"module:attr"`` of ``check(policy, *, seed)``, the kind's policy conformance check
    (policies sit above the simulator, so it is imported when asked for)."""

    @property
    def tag(self) -> str:
        """The registry tag of policies (and generators) for this kind: ``model:<name>``."""
        return f"model:{self.name}"

    def load_policy_check(self) -> Callable[..., None]:
        """Import and return :attr:`check_policy`."""
        import importlib

        module, _, attr = self.check_policy.partition(":")
        check: Callable[..., None] = getattr(importlib.import_module(module), attr)
        return check

    def make_config(self, config: Any = None) -> Any:
        """``config`` as this kind's config: an instance (as is), a mapping of its fields
        (checked, lists made tuples) or None (the defaults)."""
        if config is None:
            return self.config()
        if isinstance(config, self.config):
            return config
        if isinstance(config, Mapping):
            from schedlab.param_checks import check_params

            return self.config(**check_params(self.config, config, owner=self.config.__name__))
        msg = f"the {self.name} model takes a {self.config.__name__}, not a {type(config).__name__}"
        raise TypeError(msg)


def model_kind(policies: Sequence[Any] = ()) -> ModelKind:
    """The kind of model every one of ``policies`` acts on (their ``models``): the first
    registered kind they all support (the cluster model for no policies).

    Raises
    ------
    ValueError
        If no registered kind is supported by every policy.
    """
    from schedlab.registry import models

    common = [k for k in models.names() if all(k in getattr(p, "models", ()) for p in policies)]
    if not common:
        said = {getattr(p, "name", repr(p)): sorted(getattr(p, "models", ())) for p in policies}
        msg = f"the policies act on no common model kind ({said}; known: {models.names()})"
        raise ValueError(msg)
    kind: ModelKind = models.load(common[0])
    return kind


M = TypeVar("M", bound=Model)


def rollout(
    model: M,
    policy: Policy | None = None,
    *,
    view: View[Any] | None = None,
    act: Callable[[Any, np.ndarray, np.ndarray], np.ndarray] | None = None,
    rewards: Callable[[np.ndarray, np.ndarray], object] | None = None,
    steps: int | None = None,
) -> M:
    """Drive ``model`` until every env is done (or for ``steps`` decisions): per decision, one
    observation batch of the active envs (through ``view``, default ``policy.view``) and one
    action per active env.

    Neither is reset here. ``act(obs, mask, envs)`` chooses the actions instead of
    ``policy.act_batch(obs, mask=mask)`` (a check, a recorder or a trainer's sampling);
    ``rewards(r, envs)`` receives each decision's rewards (float, shape ``(n,)``).
    """
    if view is None:
        if policy is None:
            msg = "rollout needs a policy, or a view and an act function"
            raise TypeError(msg)
        view = policy.view
    choose = act if act is not None else _policy_act(policy)
    active = np.flatnonzero(~model.done)
    taken = 0
    while active.size and (steps is None or taken < steps):
        obs, mask = model.observe(view, active), model.action_mask(active)
        paid = model.step(choose(obs, mask, active), active)
        if rewards is not None:
            rewards(paid, active)
        active = active[~model.done[active]]
        taken += 1
    return model


def _policy_act(policy: Policy | None) -> Callable[[Any, np.ndarray, np.ndarray], np.ndarray]:
    if policy is None:
        msg = "rollout needs an act function without a policy"
        raise TypeError(msg)
    return lambda obs, mask, _envs: policy.act_batch(obs, mask=mask)


@runtime_checkable
class ListSchedulingRule(Policy, Protocol):
    """A policy that is a work-conserving list scheduler with compiled parts (the heuristics):
    the fast paths take its ``score`` and placement ``rule`` as arguments."""

    score: Any
    """Job-order score (:data:`~schedlab.simulator.cluster.dispatch.SCORE_SIGNATURE`)."""
    knob: float
    static: bool
    """The score depends only on the job."""
    uniform: bool
    """Pick uniformly among fitting jobs (draws from :meth:`uniforms`)."""

    @property
    def rule(self) -> int:
        """Placement rule (a code of :data:`~schedlab.simulator.cluster.placement.PLACEMENTS`)."""
        ...

    def uniforms(self, n: int) -> np.ndarray:
        """``n`` uniform draws of the current stream."""
        ...

    def act_batch(self, obs: Any, *, mask: np.ndarray | None = None) -> np.ndarray:
        """As :meth:`Policy.act_batch`; a work-conserving rule needs no ``mask`` (its choice
        always fits)."""
        ...


def checked_knob(policy: ListSchedulingRule) -> float:
    """The policy's ``knob`` as the kernels take it (float); a
    :class:`~schedlab.errors.ParameterError` naming the policy and the parameter if it is not a
    finite number (a NaN knob would make every score NaN and no job ever start)."""
    knob = float(policy.knob)
    if not math.isfinite(knob):
        msg = f"policy {policy.name!r}: parameter 'knob' is {policy.knob!r}, not a finite number"
        raise ParameterError(msg)
    return knob
