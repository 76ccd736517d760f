"""Gymnasium adapters over the batched engine (style.md §4): one env, and a vector env.

Both replay the jobsets of a JobSet (a jobset is drawn with ``np_random`` at each reset unless
``options={"jobset": id}`` names one). Observations are the DeepRM image (float32, shape
``(T, W)``, see :mod:`schedlab.simulator.observation`); actions are ``Discrete(M + 1)``: 0 is
void, ``i`` allocates the job in slot ``i − 1`` at its earliest fit. ``info["action_mask"]``
(int8, shape ``(M + 1,)``) marks the valid actions; an invalid action acts as void. The engine
skips steps where only void is valid unless ``skip_forced=False`` (:mod:`.batched`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from schedlab.jobset import JobSet
from schedlab.simulator.batched import BatchedEngine, Objective, default_time_limit
from schedlab.simulator.config import ClusterConfig


def _spaces(engine: BatchedEngine) -> tuple[spaces.Box, spaces.Discrete]:
    shape = engine.geometry.shape
    return (
        spaces.Box(0.0, 1.0, shape=shape, dtype=np.float32),
        spaces.Discrete(engine.geometry.n_actions),
    )


def _bounds(jobset: JobSet) -> tuple[np.ndarray, np.ndarray]:
    ids = jobset.jobs.get_column("jobset").to_numpy()
    change = np.flatnonzero(np.diff(ids)) + 1
    bounds = np.concatenate([[0], change, [ids.size]]).astype(np.int64)
    if bounds.size < 2 or ids.size == 0:
        msg = "the JobSet has no jobs; an environment needs at least one jobset with jobs"
        raise ValueError(msg)
    return bounds, ids[bounds[:-1]]


class DeepRMEnv(gym.Env[np.ndarray, np.int64]):
    """The DeepRM scheduling task as a Gymnasium environment (seed 000 §3.2).

    Parameters
    ----------
    jobset : JobSet
        Jobsets to replay, one per episode.
    config : ClusterConfig, optional
        ``M``, ``T``, backlog shown.
    objective : ``"slowdown"`` or ``"completion"``
        Reward ``−Σ 1/T_j`` or ``−|J|`` per time step over jobs in the system.
    skip_forced : bool
        Do not ask for decisions where only void is valid.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(
        self,
        jobset: JobSet,
        config: ClusterConfig | None = None,
        *,
        objective: Objective = "slowdown",
        skip_forced: bool = True,
    ) -> None:
        self._bounds, self._ids = _bounds(jobset)
        self.engine = BatchedEngine(
            *_arrays(jobset), np.zeros(1, np.int64), np.zeros(1, np.int64), jobset.capacity,
            config or ClusterConfig(), objective=objective, skip_forced=skip_forced,
            time_limit=np.zeros(1, np.int64), max_jobs=int(np.diff(self._bounds).max()),
        )  # fmt: skip
        self.observation_space, self.action_space = _spaces(self.engine)
        self._limits = _limits(self.engine, self._bounds)

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        obs = self.engine.observe()
        s = self.engine.state
        info = {
            "action_mask": obs.mask[0].astype(np.int8),
            "jobset": int(self._ids[np.searchsorted(self._bounds, s.lo[0], side="right") - 1]),
            "now": int(s.now[0]),
        }
        return obs.dense()[0], info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a jobset: ``options["jobset"]`` (an id) or one drawn with ``np_random``."""
        super().reset(seed=seed)
        if options and "jobset" in options:
            hits = np.flatnonzero(self._ids == options["jobset"])
            if hits.size == 0:
                msg = f"no jobset {options['jobset']!r} (known: {self._ids.tolist()[:10]} ...)"
                raise ValueError(msg)
            k = int(hits[0])
        else:
            k = int(self.np_random.integers(self._ids.size))
        s = self.engine.state
        s.lo[0], s.hi[0], s.limit[0] = self._bounds[k], self._bounds[k + 1], self._limits[k]
        self.engine.reset()
        return self._obs_info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply ``action``; terminated once every job is placed (the rest is in the reward)."""
        reward = float(self.engine.step(np.array([int(action)]))[0])
        obs, info = self._obs_info()
        done = bool(self.engine.done[0])
        if done:
            info["forced_jobs"] = int(self.engine.forced[0])
        return obs, reward, done, False, info


class DeepRMVectorEnv(VectorEnv):
    """``num_envs`` DeepRM environments advanced by one compiled call per step (next-step
    autoreset: the step after an episode ends resets that env and ignores its action)."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(
        self,
        jobset: JobSet,
        num_envs: int,
        config: ClusterConfig | None = None,
        *,
        objective: Objective = "slowdown",
        skip_forced: bool = True,
    ) -> None:
        self._bounds, self._ids = _bounds(jobset)
        zeros = np.zeros(num_envs, np.int64)
        self.engine = BatchedEngine(
            *_arrays(jobset), zeros, zeros.copy(), jobset.capacity, config or ClusterConfig(),
            objective=objective, skip_forced=skip_forced, time_limit=zeros.copy(),
            max_jobs=int(np.diff(self._bounds).max()),
        )  # fmt: skip
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(self.engine)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._limits = _limits(self.engine, self._bounds)
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def _restart(self, envs: np.ndarray) -> None:
        k = self.np_random.integers(self._ids.size, size=envs.size)
        s = self.engine.state
        s.lo[envs], s.hi[envs], s.limit[envs] = (
            self._bounds[k],
            self._bounds[k + 1],
            self._limits[k],
        )
        self.engine.reset(envs)

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        obs = self.engine.observe()
        mask = obs.mask.astype(np.int8)
        return obs.dense(), {"action_mask": mask, "_action_mask": np.ones(self.num_envs, bool)}

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a jobset for every env."""
        super().reset(seed=seed if not isinstance(seed, list) else seed[0])
        self._restart(np.arange(self.num_envs))
        self._autoreset[:] = False
        return self._obs_info()

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per env; envs that ended at the previous step restart instead."""
        actions = np.asarray(actions, dtype=np.int64)
        rewards = np.zeros(self.num_envs)
        go = np.flatnonzero(~self._autoreset)
        rewards[go] = self.engine.step(actions[go], go)
        again = np.flatnonzero(self._autoreset)
        if again.size:
            self._restart(again)
        terminated = self.engine.done.copy()
        terminated[again] = False
        self._autoreset = terminated.copy()
        obs, info = self._obs_info()
        return obs, rewards, terminated, np.zeros(self.num_envs, bool), info


def _arrays(jobset: JobSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    jobs = jobset.jobs
    return (
        jobs.get_column("arrival").to_numpy(),
        jobs.get_column("duration").to_numpy(),
        jobset.demands(),
    )


def _limits(engine: BatchedEngine, bounds: np.ndarray) -> np.ndarray:
    """Default time limit of each jobset (see :class:`BatchedEngine`)."""
    s = engine.state
    return default_time_limit(s.arrival, s.duration, bounds[:-1], bounds[1:], engine.config.horizon)
