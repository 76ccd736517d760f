"""What an agent trained on a schedlab environment sees, behind the common Policy protocol, and
:class:`CallablePolicy`: any function ``obs, mask -> action``
(``callable:package.module:function``).

:class:`ImageAgent` observes the engine's batch through the same view and encoding as the
Gymnasium environments (:mod:`schedlab.simulator.env`): the DeepRM image, rendered dense
(float32, ``(T, W)`` per observation, :meth:`SparseObs.dense`), and the valid-action mask (bool,
``(m·M + 1,)``; 0 is void, ``1 + i·M + q`` slot ``q`` on machine ``i``). An agent trained on
``gymnasium.make("schedlab/DeepRM-v0", ...)`` therefore sees here exactly what it saw in
training. An action outside the mask acts as void, as in the environments (it is returned as 0).

Nothing here needs torch: a function of any library (or none) runs in a light install
(``pip install .``). A Stable-Baselines3 model is :class:`~schedlab.policies.external.SB3Policy`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import ParameterError, SchedlabError
from schedlab.policies.base import ParamsMixin, QueueNamed, Reloaded, policy_fields
from schedlab.simulator.cluster.batched import AgentQueue
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage, Layout, SparseObs


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
            "slots": c.slots,
            "horizon": c.horizon,
            "backlog_view": c.backlog_view,
            "machines": c.machines,
            "layout": "deeprm",
        }
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


class ImageAgent(QueueNamed, ParamsMixin):
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


def import_object(target: str) -> Any:
    """The object ``"package.module:attr"`` (:func:`schedlab.entries.import_target`).

    Raises
    ------
    ParameterError
        If ``target`` is malformed or names nothing importable.
    """
    from schedlab.entries import import_target

    module, colon, attr = target.partition(":")
    if not colon or not module or not attr:
        msg = f"{target!r}: expected package.module:attribute"
        raise ParameterError(msg)
    try:
        return import_target(target)
    except (ImportError, AttributeError) as exc:
        msg = f"{target!r} cannot be imported ({type(exc).__name__}: {exc})"
        raise ParameterError(msg) from exc


class AgentError(SchedlabError, RuntimeError):
    """A callable agent raised while choosing actions; the message names it and where."""


@policy_fields
class CallablePolicy(Reloaded, ImageAgent):
    """Any function of the environments' observation and mask: ``fn(obs, mask) -> action``.

    Attributes
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
    transient: ClassVar[tuple[str, ...]] = ("_fn",)

    fn: Callable[[np.ndarray, np.ndarray], Any] | str
    batched: bool = False
    layout: Layout = "deeprm"
    queue: AgentQueue = "greedy"

    def __post_init__(self) -> None:
        self._fn: Callable[[np.ndarray, np.ndarray], Any] | None = None

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
