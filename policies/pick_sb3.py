"""A Stable-Baselines3 / sb3-contrib agent trained on the pick environment
(``schedlab/Pick-v0``, :mod:`schedlab.simulator.pick.env`), behind the common Policy protocol:
``sb3-pick:PATH.zip`` (``sb3-pick+easy:PATH.zip`` under EASY), so it runs in ``simulate`` and
experiment specs beside the heuristics and the ``jobscore`` networks and enters the same
reports.

It observes what the environment gave in training (float32 ``(K, F)`` per decision, one row
per candidate) and, for MaskablePPO, the candidates' mask (bool ``(K,)``); its pick ``q`` is the
engine's action ``1 + q``. The model is loaded by :class:`~schedlab.policies.external.SB3Policy`
(which reads the zip's algorithm and refuses foreign files); Stable-Baselines3 is the optional
``rl`` extra.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from schedlab.policies.base import Reloaded, policy_fields
from schedlab.policies.external import MASKABLE, Algo, ModelMismatchError, SB3Policy
from schedlab.policies.pick_agent import PickAgent
from schedlab.simulator.pick.engine import PickQueue, candidates
from schedlab.simulator.pick.features import N_FEATURES


@policy_fields
class SB3PickPolicy(Reloaded, PickAgent):
    """A model saved by Stable-Baselines3 or sb3-contrib after training on the pick environment.

    Attributes
    ----------
    checkpoint : str
        The ``.zip`` written by ``model.save``.
    algo : ``"auto"``, ``"maskable_ppo"``, ``"ppo"``, ``"a2c"`` or ``"dqn"``
        The algorithm that saved it (``auto``: read from the zip). MaskablePPO is given the
        candidates' mask; the others choose without it, and a pick without a candidate picks
        the earliest-arrived one, as in the environment.
    deterministic : bool
        The most probable pick (SB3's ``predict(..., deterministic=True)``).
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        The discipline around the picks (the environment's ``queue=``).
    """

    key: ClassVar[str] = "sb3-pick"
    transient: ClassVar[tuple[str, ...]] = ("_loader",)

    checkpoint: str
    algo: Algo = "auto"
    deterministic: bool = True
    queue: PickQueue = "greedy"

    def __post_init__(self) -> None:
        self._loader: SB3Policy | None = None

    def load(self) -> tuple[Any, str]:
        """The model and its algorithm (loaded once), its spaces checked.

        Raises
        ------
        ModelMismatchError
            Not a model of the pick environment (another observation or action space).
        """
        if self._loader is None:
            loader = SB3Policy(checkpoint=self.checkpoint, algo=self.algo)
            model, _ = loader.load()
            shape = tuple(getattr(model.observation_space, "shape", ()) or ())
            n = int(getattr(model.action_space, "n", -1))
            if len(shape) != 2 or shape[1] != N_FEATURES or shape[0] != n:
                msg = (
                    f"{self.name}: {self.checkpoint} was trained on observations {shape} and "
                    f"Discrete({n}) actions, not on the pick environment's (K, {N_FEATURES}) "
                    "and Discrete(K)"
                )
                raise ModelMismatchError(msg)
            self._loader = loader
        return self._loader.load()

    @property
    def candidates(self) -> int:
        """K: the candidates the model was trained with."""
        return int(self.load()[0].action_space.n)

    def reset(self, *, seed: int | None = None) -> None:
        """Nothing to reset (deterministic, or SB3's own sampling)."""

    def act_batch(self, obs: np.ndarray, *, mask: np.ndarray) -> np.ndarray:
        """Picks (int64 ``(n,)``, ``1 + q``) of observations ``obs`` (``(n, K, F)``) whose
        valid actions are ``mask`` (bool ``(n, K + 1)``)."""
        model, algo = self.load()
        rows = candidates(mask)
        kwargs = {"action_masks": rows} if algo in MASKABLE else {}
        picks, _ = model.predict(obs, deterministic=self.deterministic, **kwargs)
        return np.asarray(picks, dtype=np.int64).reshape(-1) + 1
