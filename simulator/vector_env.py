"""What schedlab's two vector environments share (:class:`~.env.ClusterVectorEnv`,
:class:`~.pick.env.PickVectorEnv`): spaces batched from one environment's, and a reset that
starts an episode in every environment."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv


class BatchedEnv(VectorEnv):
    """A :class:`gymnasium.vector.VectorEnv` of ``num_envs`` copies of one environment, whose
    subclass sets ``_single_spaces`` (observation and action space of one copy) and starts
    episodes in ``_restart``."""

    _single_spaces: tuple[spaces.Box, spaces.Discrete]

    def _batch_spaces(self, num_envs: int) -> None:
        """Declare ``num_envs`` and the batched spaces of ``num_envs`` copies."""
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = self._single_spaces
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)

    def _restart(self, envs: np.ndarray) -> None:
        """Start a new episode in the environments ``envs`` (int, ``(n,)``)."""
        raise NotImplementedError

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        """Observations and info of every environment now."""
        raise NotImplementedError

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode in every environment (``seed``, or the first of a list, seeds the
        draws of all of them)."""
        super().reset(seed=seed if not isinstance(seed, list) else seed[0])
        self._restart(np.arange(self.num_envs))
        return self._obs_info()
