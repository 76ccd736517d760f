"""Gymnasium adapters over the batched cluster engine (style.md §4): one env, and a vector env.

Registered ids (:mod:`.registration`; ``import schedlab`` registers them)::

    gymnasium.make("schedlab/DeepRM-v0", load=0.7)  # DeepRM: one pool, M = 10
    gymnasium.make("schedlab/MultiMachine-v0", machines=2, load=0.7)  # Chen et al.: reshaped

Both replay the jobsets of a JobSet (``jobset=``, or generated from ``workload``, ``load``,
``jobsets`` and ``workload_seed``); a jobset is drawn with ``np_random`` at each reset unless
``options={"jobset": id}`` names one. Observations are the image (float32, shape ``(T, W)``, see
:mod:`schedlab.simulator.views.deeprm_image`); actions are ``Discrete(m·M + 1)``: 0 is void,
``1 + i·M + q`` allocates the job in slot ``q`` on machine ``i`` at its earliest fit.
``info["action_mask"]`` (int8, shape ``(m·M + 1,)``) marks the valid actions; an invalid action acts
as void. ``action_masks()`` returns the same mask as bool (sb3-contrib's convention, so
``MaskablePPO`` finds it; the vector env's has shape ``(num_envs, m·M + 1)``). The engine skips
steps where only void is valid unless ``skip_forced=False``. docs/environments.md documents the
spaces, the mask and the reward of each id.

``queue=`` puts the agent under a queue discipline (:mod:`schedlab.simulator.cluster.batched`),
so learned policies can be compared with backfilling heuristics: ``"greedy"`` (default, the
above), ``"strict"`` (only the earliest-arrived waiting job may be allocated, and only to start
now) or ``"easy"`` (EASY backfilling: the agent chooses among the jobs EASY would allow to start
now, i.e. the earliest-arrived one, or one that does not delay its reservation). The
observation is unchanged; ``info["action_mask"]`` reflects the discipline, and a disallowed
action acts as void. ``"conservative"`` is for heuristics only and is refused::

    gymnasium.make("schedlab/DeepRM-v0", load=0.7, queue="easy")
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypedDict, Unpack

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched import (
    AgentQueue,
    BatchedEngine,
    Objective,
    RewardWeights,
)
from schedlab.simulator.cluster.engine_inputs import (
    default_time_limit,
    jobset_bounds,
    resolve_machines,
)
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.vector_env import BatchedEnv
from schedlab.simulator.views.deeprm_image import DeepRMImage, Layout


def _workload(
    jobset: JobSet | None,
    workload: str,
    load: float,
    jobsets: int,
    seed: int,
    params: dict[str, Any] | None,
) -> JobSet:
    if jobset is not None:
        return jobset
    from schedlab.registry import generators

    result: JobSet = generators.make(workload, **(params or {})).generate(
        load, n_jobsets=jobsets, seed=seed
    )
    return result


class AgentOptions(TypedDict, total=False):
    """How both adapters run the agent: the :class:`BatchedEngine` options they pass on as
    given (the engine's defaults where not: ``"slowdown"``, no ``rewards``, ``True``,
    ``"greedy"``; :class:`ClusterEnv` documents them)."""

    objective: Objective
    rewards: RewardWeights | None
    skip_forced: bool
    queue: AgentQueue


class _Adapter:
    """What both adapters share: the jobsets, the engine, the view and the spaces."""

    def _setup(
        self,
        jobset: JobSet,
        num_envs: int,
        config: ClusterConfig,
        layout: Layout,
        options: AgentOptions,
    ) -> None:
        known = sorted(AgentOptions.__optional_keys__)
        if unknown := sorted(set(options) - set(known)):
            msg = f"unexpected keyword arguments {unknown} (known: layout, {', '.join(known)})"
            raise TypeError(msg)
        ids = jobset.jobs.get_column("jobset").to_numpy()
        if ids.size == 0:
            msg = "the JobSet has no jobs; an environment needs at least one jobset with jobs"
            raise ValueError(msg)
        self._bounds = jobset_bounds(ids)
        self._ids = ids[self._bounds[:-1]]
        zeros = np.zeros(num_envs, np.int64)
        config = resolve_machines(config, jobset)
        if "parents" in jobset.jobs.columns:
            msg = (
                "the environments do not model DAG precedence: simulate DAG workloads with "
                "`schedlab simulate` (heuristics, learned policies and `sb3:` agents)"
            )
            raise ValueError(msg)
        runtime, seen = job_times(jobset, config.overrun)  # agents see estimates, as policies do
        self.engine = BatchedEngine(
            jobset.jobs.get_column("arrival").to_numpy(),
            runtime,
            jobset.demands(),
            zeros,
            zeros.copy(),
            jobset.machine_capacity,
            config,
            seen=seen,
            time_limit=zeros.copy(),
            max_jobs=int(np.diff(self._bounds).max()),
            **options,
        )
        self.view = DeepRMImage(layout=layout)
        g = self.view.geometry(self.engine.snapshot(np.zeros(0, np.int64)))
        self._single_spaces: tuple[spaces.Box, spaces.Discrete] = (
            spaces.Box(0.0, 1.0, shape=g.shape, dtype=np.float32),
            spaces.Discrete(g.n_actions),
        )
        s = self.engine.state
        self._limits = default_time_limit(
            s.arrival, s.duration, self._bounds[:-1], self._bounds[1:], config.horizon
        )

    def _start(self, envs: np.ndarray, k: np.ndarray) -> None:
        """Env ``envs[x]`` replays jobset ``k[x]`` from its start."""
        s = self.engine.state
        s.lo[envs], s.hi[envs] = self._bounds[k], self._bounds[k + 1]
        s.limit[envs] = self._limits[k]
        self.engine.reset(envs)

    def _observe(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense images ``(B, T, W)`` and action masks ``(B, m·M + 1)`` (int8)."""
        return self.engine.observe(self.view).dense(), self.engine.action_mask().astype(np.int8)

    def _masks(self) -> np.ndarray:
        """The current valid actions of every env, bool, shape ``(B, m·M + 1)``."""
        return self.engine.action_mask()


class ClusterEnv(_Adapter, gym.Env[np.ndarray, np.int64]):
    """The cluster scheduling task (Mao et al. 2016, §3.2; with ``machines > 1``, Chen et al.
    2017, §II).

    Parameters
    ----------
    jobset : JobSet, optional
        Jobsets to replay, one per episode (default: generated, see below).
    config : ClusterConfig, optional
        ``M``, ``T``, backlog shown, machines; ``slots``, ``horizon`` and ``machines`` override
        its fields.
    workload, load, jobsets, workload_seed, workload_params
        Generator, offered load, jobsets and seed used when no ``jobset`` is given.
    layout : ``"deeprm"`` or ``"reshaped"``
        Image layout.
    **options
        The agent's options (:class:`AgentOptions`): ``objective``, ``"slowdown"`` or
        ``"completion"`` (reward ``−Σ 1/T_j`` or ``−|J|`` per time step over jobs in the
        system); ``rewards``, where-weights α, β, γ (Chen et al. 2017, Eq. 1); ``skip_forced``,
        do not ask for decisions where only void is valid; ``queue``, ``"greedy"``,
        ``"strict"`` or ``"easy"``, the queue discipline the agent acts under (module
        docstring).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(
        self,
        jobset: JobSet | None = None,
        config: ClusterConfig | None = None,
        *,
        workload: str = "deeprm",
        load: float = 0.7,
        jobsets: int = 100,
        workload_seed: int = 0,
        workload_params: dict[str, Any] | None = None,
        slots: int | None = None,
        horizon: int | None = None,
        machines: int | None = None,
        layout: Layout = "deeprm",
        **options: Unpack[AgentOptions],
    ) -> None:
        config = _override(config or ClusterConfig(), slots, horizon, machines)
        js = _workload(jobset, workload, load, jobsets, workload_seed, workload_params)
        self._setup(js, 1, config, layout, options)
        self.observation_space, self.action_space = self._single_spaces

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        images, masks = self._observe()
        s = self.engine.state
        info = {
            "action_mask": masks[0],
            "jobset": int(self._ids[np.searchsorted(self._bounds, s.lo[0], side="right") - 1]),
            "now": int(s.now[0]),
        }
        return images[0], info

    def action_masks(self) -> np.ndarray:
        """The valid actions now, bool, shape ``(m·M + 1,)``: ``info["action_mask"]`` of the last
        ``reset`` or ``step`` (sb3-contrib's ``MaskablePPO`` calls this method)."""
        mask: np.ndarray = self._masks()[0]
        return mask

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
        self._start(np.zeros(1, np.int64), np.array([k]))
        return self._obs_info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply ``action``; terminated once every job is placed (the rest is in the reward)."""
        reward = float(self.engine.step(np.array([int(action)]))[0])
        obs, info = self._obs_info()
        done = bool(self.engine.done[0])
        if done:
            info["forced_jobs"] = int(self.engine.forced[0])
        return obs, reward, done, False, info


DeepRMEnv = ClusterEnv
"""The single-pool task under its paper's name."""


class ClusterVectorEnv(_Adapter, BatchedEnv):
    """``num_envs`` cluster environments advanced by one compiled call per step (next-step
    autoreset: the step after an episode ends resets that env and ignores its action).

    Parameters as :class:`ClusterEnv` (a ``jobset`` is required).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(
        self,
        jobset: JobSet,
        num_envs: int,
        config: ClusterConfig | None = None,
        *,
        layout: Layout = "deeprm",
        **options: Unpack[AgentOptions],
    ) -> None:
        self._setup(jobset, num_envs, config or ClusterConfig(), layout, options)
        self._batch_spaces(num_envs)
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def _restart(self, envs: np.ndarray) -> None:
        self._start(envs, self.np_random.integers(self._ids.size, size=envs.size))

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        images, masks = self._observe()
        return images, {"action_mask": masks, "_action_mask": np.ones(self.num_envs, bool)}

    def action_masks(self) -> np.ndarray:
        """The valid actions now, bool, shape ``(num_envs, m·M + 1)``: ``info["action_mask"]``
        of the last ``reset`` or ``step`` (an env that just ended: its final state's mask)."""
        return self._masks()

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a jobset for every env."""
        self._autoreset[:] = False
        return super().reset(seed=seed, options=options)

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


DeepRMVectorEnv = ClusterVectorEnv


def _override(
    config: ClusterConfig, slots: int | None, horizon: int | None, machines: int | None
) -> ClusterConfig:
    given: dict[str, Any] = {"slots": slots, "horizon": horizon, "machines": machines}
    return replace(config, **{k: v for k, v in given.items() if v is not None})
