"""Agents trained elsewhere, behind the common Policy protocol: a saved Stable-Baselines3 /
sb3-contrib model (:class:`SB3Policy`, ``sb3:PATH.zip``) or any callable ``obs, mask -> action``
(:class:`CallablePolicy`, ``callable:package.module:function``).

Both observe the engine's batch through the same view and encoding as the Gymnasium
environments (:mod:`schedlab.simulator.env`): the DeepRM image, rendered dense (float32,
``(T, W)`` per observation, :meth:`SparseObs.dense`), and the valid-action mask (bool,
``(m·M + 1,)``; 0 is void, ``1 + i·M + q`` slot ``q`` on machine ``i``). An agent trained on
``gymnasium.make("schedlab/DeepRM-v0", ...)`` therefore sees here exactly what it saw in training,
and runs in ``simulate`` and experiment specs beside the heuristics and the shipped learned
policies (paired statistics, per-length breakdown, Gantt views). An action outside the mask acts
as void, as in the environments (it is returned as 0).

Stable-Baselines3 is an optional dependency (``pip install 'schedlab[rl]'``), imported only when
a model is first used. A model zip is read without unpickling anything (:mod:`.sb3_zip`): the
network is rebuilt from the plain JSON of its ``data`` and the tensors of its ``policy.pth``, and
a model that needs a pickled object is refused, naming the member. docs/environments.md
documents the spaces, the mask and the reward.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch  # imported with the policy, so an experiment's run limits its threads (runs.py)

from schedlab.errors import ParameterError, SchedlabError
from schedlab.policies.base import ParamsMixin, QueueNamed
from schedlab.policies.sb3_zip import (
    MissingExtraError,
    ModelMismatchError,
    UnsafeModelError,
    load_policy,
    read_algo,
    read_data,
)
from schedlab.simulator.cluster.batched import AgentQueue
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage, Layout, ObsGeometry, SparseObs

__all__ = [
    "ALGOS",
    "AgentError",
    "CallablePolicy",
    "EnvSettings",
    "MissingExtraError",
    "ModelMismatchError",
    "SB3Policy",
    "UnsafeModelError",
    "detect_algo",
    "import_object",
]
"""Public names (the errors are :mod:`.sb3_zip`'s, re-exported)."""

Algo = Literal["auto", "maskable_ppo", "ppo", "a2c", "dqn"]
"""Algorithms :class:`SB3Policy` loads (``auto``: read from the saved model)."""
EnvId = Literal["schedlab/DeepRM-v0", "schedlab/MultiMachine-v0"]
"""Registered environment ids (:data:`schedlab.simulator.registration.ENV_IDS`)."""
ALGOS: dict[str, tuple[str, str]] = {
    "maskable_ppo": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "dqn": ("stable_baselines3", "DQN"),
}
"""Algorithm name -> (module, class) of its Stable-Baselines3 implementation."""
MASKABLE = frozenset({"maskable_ppo"})
"""Algorithms whose policy takes the action mask (the others may choose an invalid action,
which acts as void)."""


def detect_algo(path: str | os.PathLike[str]) -> str:
    """The algorithm (a key of :data:`ALGOS`) that saved the model at ``path``, read from the
    zip's ``data`` (JSON) without unpickling anything (:func:`.sb3_zip.read_algo`).

    Raises
    ------
    ModelMismatchError
        If the file is not a Stable-Baselines3 zip or its algorithm is none of these.
    """
    return read_algo(read_data(path), path)


@dataclass(frozen=True, kw_only=True, slots=True)
class EnvSettings:
    """What an agent was trained on that fixes its observation and actions: the environment's
    cluster geometry and image layout (``machines`` None: the JobSet's own count)."""

    slots: int
    """M: visible job slots."""
    horizon: int
    """T: image rows."""
    backlog_view: int
    """Backlog jobs drawn."""
    machines: int | None
    """m (None: as many as the JobSet has, one for DeepRM workloads)."""
    layout: Layout
    """Image layout."""

    @classmethod
    def of(cls, env: str, **given: Any) -> EnvSettings:
        """The settings of ``gymnasium.make(env, **given)``: ``ClusterConfig``'s defaults, then
        the id's registered arguments, then ``given`` (None: not given)."""
        from schedlab.simulator.registration import ENV_IDS

        if env not in ENV_IDS:
            msg = f"unknown environment {env!r} (known: {', '.join(ENV_IDS)})"
            raise ParameterError(msg)
        c = ClusterConfig()
        base: dict[str, Any] = {
            "slots": c.slots, "horizon": c.horizon, "backlog_view": c.backlog_view,
            "machines": c.machines, "layout": "deeprm",
        }  # fmt: skip
        base.update({k: v for k, v in ENV_IDS[env].items() if k in base})
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)

    def describe(self) -> str:
        """``machines=1, slots=10, horizon=20, backlog_view=60, layout=deeprm``."""
        m = "the JobSet's" if self.machines is None else self.machines
        return (
            f"machines={m}, slots={self.slots}, horizon={self.horizon}, "
            f"backlog_view={self.backlog_view}, layout={self.layout}"
        )


class _ImageAgent(QueueNamed, ParamsMixin):
    """What both adapters share: the view, the name, and the batch loop of :meth:`act_batch`."""

    key: ClassVar[str]
    models: ClassVar[frozenset[str]] = frozenset({"cluster"})
    queue: AgentQueue
    layout: Layout | None

    def _view_settings(self) -> tuple[Layout, int | None]:
        return self.layout or "deeprm", None

    @property
    def view(self) -> DeepRMImage:
        """The image the agent observes (the environments' view)."""
        layout, backlog_view = self._view_settings()
        return DeepRMImage(layout=layout, backlog_view=backlog_view)

    def act_batch(self, obs: SparseObs, *, mask: np.ndarray) -> np.ndarray:
        """Actions (int64, shape ``(N,)``; 0 = void, ``1 + i·M + q`` = slot ``q`` on machine
        ``i``) for a batch of observations whose valid actions are ``mask``; an invalid choice is
        returned as void (what the environments do with it)."""
        images = obs.dense()  # float32 (N, T, W): the environments' observations
        actions = np.asarray(self._choose(images, np.asarray(mask, dtype=bool), obs), np.int64)
        actions = actions.reshape(-1)
        if actions.shape != (len(obs),):
            msg = f"{self.name}: {actions.shape[0]} actions for {len(obs)} observations"
            raise ValueError(msg)
        inside = (actions >= 0) & (actions < mask.shape[1])
        ok = inside & mask[np.arange(actions.size), np.where(inside, actions, 0)]
        return np.where(ok, actions, 0)

    def _choose(self, images: np.ndarray, mask: np.ndarray, obs: SparseObs) -> Any:
        raise NotImplementedError


class SB3Policy(_ImageAgent):
    """A model saved by Stable-Baselines3 or sb3-contrib (``model.save("model.zip")``) after
    training on a schedlab environment, acting on what that environment observed.

    Parameters
    ----------
    checkpoint : str
        The ``.zip`` written by ``model.save`` (``sb3:runs/ppo/model.zip``).
    algo : ``"auto"``, ``"maskable_ppo"``, ``"ppo"``, ``"a2c"`` or ``"dqn"``
        The algorithm that saved it (``auto``: read from the zip, :func:`detect_algo`).
        MaskablePPO is given the valid-action mask; the others choose without it and an invalid
        choice acts as void (as it did in training).
    deterministic : bool
        The most probable action (SB3's ``predict(..., deterministic=True)``); false samples
        from the policy's distribution (actor-critic algorithms) with this policy's ``seed``.
    seed : int
        Seed of the sampling when ``deterministic`` is false: ``default_rng(seed)``, or
        ``default_rng([seed, jobset])`` when one jobset is run at a time.
    env : ``"schedlab/DeepRM-v0"`` or ``"schedlab/MultiMachine-v0"``
        The environment id it was trained on; with ``layout``, ``slots``, ``horizon``,
        ``machines`` and ``backlog_view`` (None: the id's) it fixes the observation, which is
        checked against the model's ``observation_space`` and ``action_space``.
    layout, slots, horizon, machines, backlog_view
        Arguments given to ``gymnasium.make`` in training, if any.
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        Queue discipline it acts under (the environments' ``queue=``; ``sb3+easy`` names it).
    """

    key: ClassVar[str] = "sb3"

    def __init__(
        self,
        *,
        checkpoint: str,
        algo: Algo = "auto",
        deterministic: bool = True,
        seed: int = 0,
        env: EnvId = "schedlab/DeepRM-v0",
        layout: Layout | None = None,
        slots: int | None = None,
        horizon: int | None = None,
        machines: int | None = None,
        backlog_view: int | None = None,
        queue: AgentQueue = "greedy",
    ) -> None:
        self.checkpoint = checkpoint
        self.algo = algo
        self.deterministic = deterministic
        self.seed = seed
        self.env = env
        self.layout = layout
        self.slots = slots
        self.horizon = horizon
        self.machines = machines
        self.backlog_view = backlog_view
        self.queue = queue
        self._rng = np.random.default_rng(seed)
        self._loaded: tuple[Any, str] | None = None
        self._checked: ObsGeometry | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_loaded"] = state["_checked"] = None  # reloaded on first use
        return state

    @property
    def geometry(self) -> EnvSettings:
        """The settings of the environment it was trained on (the simulator refuses another
        number of machines, slots or horizon before it starts)."""
        return EnvSettings.of(
            self.env, layout=self.layout, slots=self.slots, horizon=self.horizon,
            machines=self.machines, backlog_view=self.backlog_view,
        )  # fmt: skip

    def _view_settings(self) -> tuple[Layout, int | None]:
        g = self.geometry
        return g.layout, g.backlog_view

    def reset(self, *, seed: int | None = None) -> None:
        """Restart the sampling stream (from ``[self.seed, seed]`` when given)."""
        self._rng = np.random.default_rng(self.seed if seed is None else [self.seed, seed])

    def load(self) -> tuple[Any, str]:
        """The saved policy network (Stable-Baselines3's policy object, on the CPU) and its
        algorithm, rebuilt without unpickling anything (:func:`.sb3_zip.load_policy`); loaded
        once."""
        if self._loaded is None:
            path = Path(self.checkpoint)
            if not path.is_file():
                msg = f"{path}: no such model file (a .zip saved by Stable-Baselines3)"
                raise ModelMismatchError(msg)
            self._loaded = load_policy(path, self.algo)
        return self._loaded

    def check_spaces(self, obs: SparseObs) -> None:
        """Raise :class:`ModelMismatchError`, naming both shapes, unless the model's
        ``observation_space`` and ``action_space`` are those of ``obs``'s cluster."""
        model, _ = self.load()
        g = obs.geometry
        have = (tuple(g.shape), g.n_actions)
        space = model.observation_space
        want = (
            tuple(getattr(space, "shape", None) or ()),
            int(getattr(model.action_space, "n", -1)),
        )
        if want != have or str(getattr(space, "dtype", "")) != "float32":
            msg = (
                f"{self.name}: the model {self.checkpoint} expects observations {space} and "
                f"actions {model.action_space}, but this cluster gives observations of shape "
                f"{have[0]} (float32) and Discrete({have[1]}) actions ({_cluster(g)}); run it on "
                f"the cluster and with the settings it was trained with ({self.geometry.describe()}"
                " as given to the adapter: env=, layout=, slots=, machines=, horizon=)"
            )
            raise ModelMismatchError(msg)

    def _choose(self, images: np.ndarray, mask: np.ndarray, obs: SparseObs) -> Any:
        model, algo = self.load()
        if self._checked != obs.geometry:
            self.check_spaces(obs)
            self._checked = obs.geometry
        kwargs = {"action_masks": mask} if algo in MASKABLE else {}
        if self.deterministic:
            actions, _ = model.predict(images, deterministic=True, **kwargs)
            return actions
        if algo == "dqn":
            msg = f"{self.name}: DQN acts greedily on its Q-values; use deterministic=true"
            raise ParameterError(msg)
        from schedlab.policies.deeprm import sample_actions

        with torch.no_grad():
            tensor, _ = model.obs_to_tensor(images)
            dist = model.get_distribution(tensor, **kwargs)
            logits = dist.distribution.logits.double().numpy()
        if algo in MASKABLE:
            logits = np.where(mask, logits, -np.inf)
        return sample_actions(logits, self._rng)


def _cluster(g: Any) -> str:
    return (
        f"machines={g.machines}, slots={g.slots}, horizon={g.horizon}, "
        f"backlog_view={g.backlog_view}, layout={g.layout}, capacity units {g.cap_units}"
    )


class AgentError(SchedlabError, RuntimeError):
    """A callable agent raised while choosing actions; the message names it and where."""


def import_object(target: str) -> Any:
    """The object ``"package.module:attr"`` (:func:`schedlab.registry.import_target`).

    Raises
    ------
    ParameterError
        If ``target`` is malformed or names nothing importable.
    """
    from schedlab.registry import import_target

    module, colon, attr = target.partition(":")
    if not colon or not module or not attr:
        msg = f"{target!r}: expected package.module:attribute"
        raise ParameterError(msg)
    try:
        return import_target(target)
    except (ImportError, AttributeError) as exc:
        msg = f"{target!r} cannot be imported ({type(exc).__name__}: {exc})"
        raise ParameterError(msg) from exc


class CallablePolicy(_ImageAgent):
    """Any function of the environments' observation and mask: ``fn(obs, mask) -> action``.

    Parameters
    ----------
    fn : callable or str
        The function, or ``"package.module:function"`` to import (in a spec:
        ``callable:mypackage.agents:act``). It is called once per observation with ``obs``
        (float32, ``(T, W)``) and ``mask`` (bool, ``(m·M + 1,)``) and returns an action; with
        ``batched`` it is called once per decision step with ``(N, T, W)`` and ``(N, m·M + 1)``
        and returns ``N`` actions. An action outside the mask acts as void.
    batched : bool
        Call ``fn`` on the whole batch of environments at once.
    layout : ``"deeprm"`` or ``"reshaped"``
        Image layout (``schedlab/MultiMachine-v0``'s is ``reshaped``).
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        Queue discipline it acts under (the environments' ``queue=``).
    """

    key: ClassVar[str] = "callable"

    def __init__(
        self,
        *,
        fn: Callable[[np.ndarray, np.ndarray], Any] | str,
        batched: bool = False,
        layout: Layout = "deeprm",
        queue: AgentQueue = "greedy",
    ) -> None:
        self.fn = fn
        self.batched = batched
        self.layout = layout
        self.queue = queue
        self._fn: Callable[[np.ndarray, np.ndarray], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fn"] = None  # imported again on first use
        return state

    def function(self) -> Callable[[np.ndarray, np.ndarray], Any]:
        """``fn``, imported if given by name (once), checked to take ``(obs, mask)``."""
        if self._fn is None:
            fn = import_object(self.fn) if isinstance(self.fn, str) else self.fn
            if not callable(fn):
                msg = f"{self.name}: fn {self.fn!r} is not callable"
                raise ParameterError(msg)
            try:
                inspect.signature(fn).bind(None, None)
            except TypeError as exc:
                msg = (
                    f"{self.name}: {self.fn!r} cannot be called as fn(obs, mask) -> action (its "
                    f"signature is {inspect.signature(fn)}: {exc})"
                )
                raise ParameterError(msg) from None
            except ValueError:  # no signature to read (some built-ins): called and seen
                pass
            self._fn = fn
        return self._fn

    def _call(self, obs: np.ndarray, mask: np.ndarray) -> Any:
        """``fn(obs, mask)``; what it raises is one :class:`AgentError` naming it and where."""
        fn = self.function()
        try:
            return fn(obs, mask)
        except Exception as exc:
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            at = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""
            msg = f"{self.name}: {self.fn!r} raised {type(exc).__name__}{at}: {exc}"
            raise AgentError(msg) from exc

    def reset(self, *, seed: int | None = None) -> None:
        """Nothing to reset (a stateful function resets itself)."""

    def _choose(self, images: np.ndarray, mask: np.ndarray, obs: SparseObs) -> Any:
        if self.batched:
            return self._call(images, mask)
        return [int(self._call(images[i], mask[i])) for i in range(len(obs))]
