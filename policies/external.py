"""Agents trained with Stable-Baselines3 / sb3-contrib, behind the common Policy protocol: a saved
model (:class:`SB3Policy`, ``sb3:PATH.zip``), acting on what the Gymnasium environment showed it
in training (:class:`~schedlab.policies.image_agent.ImageAgent`: the DeepRM image and the
valid-action mask). It runs in ``simulate`` and experiment specs beside the heuristics and the
shipped learned policies (paired statistics, per-length breakdown, Gantt views). Any function
``obs, mask -> action`` is :class:`~schedlab.policies.image_agent.CallablePolicy` (no torch).

Stable-Baselines3 is an optional dependency (the ``rl`` extra, :mod:`schedlab.extras`), imported
only when a model is first used. A model zip is read without unpickling anything
(:mod:`.sb3_zip`): the network is rebuilt from the plain JSON of its ``data`` and the tensors of
its ``policy.pth``, and a model that needs a pickled object is refused, naming the member.
docs/environments.md documents the spaces, the mask and the reward.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch  # imported with the policy, so an experiment's run limits its threads (runs.py)

from schedlab.errors import ParameterError
from schedlab.policies.base import Reloaded, Sampling, policy_fields
from schedlab.policies.image_agent import EnvSettings, ImageAgent
from schedlab.policies.sb3_zip import (
    ModelMismatchError,
    UnsafeModelError,
    load_policy,
    read_algo,
    read_data,
)
from schedlab.simulator.cluster.batched import AgentQueue
from schedlab.simulator.views.deeprm_image import Layout, ObsGeometry, SparseObs

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


__all__ = [
    "ALGOS",
    "EnvSettings",
    "ModelMismatchError",
    "SB3Policy",
    "UnsafeModelError",
    "detect_algo",
]
"""Public names (the errors are :mod:`.sb3_zip`'s, re-exported)."""


def detect_algo(path: str | os.PathLike[str]) -> str:
    """The algorithm (a key of :data:`ALGOS`) that saved the model at ``path``, read from the
    zip's ``data`` (JSON) without unpickling anything (:func:`.sb3_zip.read_algo`).

    Raises
    ------
    ModelMismatchError
        If the file is not a Stable-Baselines3 zip or its algorithm is none of these.
    """
    return read_algo(read_data(path), path)


@policy_fields
class SB3Policy(Reloaded, Sampling, ImageAgent):
    """A model saved by Stable-Baselines3 or sb3-contrib (``model.save("model.zip")``) after
    training on a schedlab environment, acting on what that environment observed.

    Attributes
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
    transient: ClassVar[tuple[str, ...]] = ("_loaded", "_checked")

    checkpoint: str
    algo: Algo = "auto"
    deterministic: bool = True
    seed: int = 0
    env: EnvId = "schedlab/DeepRM-v0"
    layout: Layout | None = None
    slots: int | None = None
    horizon: int | None = None
    machines: int | None = None
    backlog_view: int | None = None
    queue: AgentQueue = "greedy"

    def __post_init__(self) -> None:
        self.reset()  # the sampling stream of ``seed``
        self._loaded: tuple[Any, str] | None = None
        self._checked: ObsGeometry | None = None

    @property
    def geometry(self) -> EnvSettings:
        """The settings of the environment it was trained on (the simulator refuses another
        number of machines, slots or horizon before it starts)."""
        return EnvSettings.of(
            self.env,
            layout=self.layout,
            slots=self.slots,
            horizon=self.horizon,
            machines=self.machines,
            backlog_view=self.backlog_view,
        )

    def _view_settings(self) -> tuple[Layout, int | None]:
        g = self.geometry
        return g.layout, g.backlog_view

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
