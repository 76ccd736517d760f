"""Gymnasium adapters over the pick engine: :class:`PickEnv` (``schedlab/Pick-v0``) and the
vector env :class:`PickVectorEnv`.

An episode replays a window of consecutive jobs of a JobSet (:mod:`.windows`; by default
windows of 256 jobs of the bundled KTH-SP2 log) on an empty cluster. At each decision the agent
picks one of the first ``K`` candidate jobs (:mod:`.kernels`: the waiting jobs the queue
discipline lets it pick now, in arrival order) and the discipline (``greedy``, ``strict`` or
``easy``) runs around the pick::

    env = gymnasium.make("schedlab/Pick-v0", queue="easy")          # KTH-SP2, windows of 256
    env = PickEnv(jobset, window=None, queue=("greedy", "easy"))     # whole jobsets, both

* **observation**: float32, ``(K, F)``: one row per candidate, its job features then the
  cluster's (:mod:`.features`: names in ``env.unwrapped.features``); rows past the candidates
  are zero;
* **action**: ``Discrete(K)``, the candidate's position; ``info["action_mask"]`` (int8,
  ``(K,)``) and ``action_masks()`` (bool, sb3-contrib's convention) mark the candidates; an
  action without a candidate picks candidate 0 (the earliest arrived). Once the episode has
  ended (or if it ends before any decision) the mask holds position 0 alone;
* **reward**: ``objective`` (:class:`~.engine.PickConfig`): by default ``−bsld_j / n`` as each
  job starts, so the return is minus the window's mean bounded slowdown (τ = 10 s, times in
  seconds); ``wait``: minus the mean wait in hours; ``utilisation``: the window's utilisation,
  at its end. Rewards of jobs started before the first decision are paid with it;
* **termination**: once every job of the window has started; ``info`` then carries the
  window's ``bounded_slowdown`` and ``wait`` (seconds) means.

Jobs run their recorded time, or are killed at their request (``overrun``), and the scheduler
(the agent included) sees only the requests (estimates). ``queue`` may be a sequence: each
episode draws its discipline, which the observation shows (one-hot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from schedlab.jobset import JobSet
from schedlab.simulator.pick.engine import PickConfig, PickEngine, PickQueue, candidates
from schedlab.simulator.pick.features import FEATURES, N_FEATURES, PickView
from schedlab.simulator.pick.kernels import QUEUES
from schedlab.simulator.pick.windows import Windows, episode_jobset
from schedlab.simulator.vector_env import BatchedEnv

_VIEW = PickView()
_QUEUE_NAMES = {code: name for name, code in QUEUES.items()}

Baseline = Callable[[np.ndarray, np.ndarray, list[str]], np.ndarray]
"""A reference value per episode: its first and one-past-last rows (int64 ``(n,)``) and
disciplines to the value (``(n,)``, > 0) its rewards are divided by (:class:`PickVectorEnv`)."""


class _Adapter:
    """What both adapters share: the windows, the engine, the spaces, the rewards carried."""

    features = FEATURES

    def _setup(
        self,
        jobset: JobSet,
        config: PickConfig,
        window: int | None,
        queue: PickQueue | Sequence[PickQueue] | None,
        num_envs: int,
    ) -> None:
        queues = [config.queue] if queue is None else [queue] if isinstance(queue, str) else queue
        if not queues or any(q not in QUEUES for q in queues):
            msg = f"queue must be one or more of {list(QUEUES)}, got {queue!r}"
            raise ValueError(msg)
        self._queues = np.array([QUEUES[q] for q in queues], dtype=np.int64)
        self.config = replace(config, queue=queues[0])
        self.windows = Windows.of(jobset, window)
        self._ids = jobset.jobs.get_column("jobset").to_numpy()[self.windows.bounds[:-1]]
        self.engine = PickEngine(jobset, self.config, num_envs, max_jobs=self.windows.widest)
        self._carry = np.zeros(num_envs)
        self._scale = np.ones(num_envs)
        self._baseline: Baseline | None = None
        K = self.config.visible
        self._single_spaces: tuple[spaces.Box, spaces.Discrete] = (
            spaces.Box(0.0, 1.0, shape=(K, N_FEATURES), dtype=np.float32),
            spaces.Discrete(K),
        )

    def _start(self, envs: np.ndarray, lo: np.ndarray, hi: np.ndarray, rng: Any) -> None:
        """Env ``envs[x]`` replays rows ``lo[x] .. hi[x] − 1`` from now (discipline drawn)."""
        q = self._queues[rng.integers(self._queues.size, size=envs.size)]
        self.engine.assign(envs, lo, hi, q)
        if self._baseline is not None:
            names = [_QUEUE_NAMES[c] for c in q.tolist()]
            self._scale[envs] = 1.0 / np.maximum(self._baseline(lo, hi, names), 1e-9)
        self._carry[envs] = self.engine.reset(envs) * self._scale[envs]

    def _mask(self, envs: np.ndarray) -> np.ndarray:
        """The candidates of ``envs``, bool ``(n, K)``; position 0 alone where none (ended)."""
        return candidates(self.engine.action_mask(envs))

    def _observe(self, envs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Observations ``(n, K, F)`` and masks (bool, ``(n, K)``) of ``envs``."""
        return self.engine.observe(_VIEW, envs), self._mask(envs)

    def _step(self, actions: Any, envs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The picks ``actions`` (positions) of ``envs``: rewards (carried ones added), then
        observations and masks."""
        paid, obs, mask = self.engine.step_observe(np.asarray(actions, np.int64) + 1, envs)
        paid = paid * self._scale[envs] + self._carry[envs]
        self._carry[envs] = 0.0
        return paid, obs, mask


def _config(config: PickConfig | None, **given: Any) -> PickConfig:
    return replace(config or PickConfig(), **{k: v for k, v in given.items() if v is not None})


class PickEnv(_Adapter, gym.Env[np.ndarray, np.int64]):
    """Pick the next job from the queue of a trace replay (module docstring).

    Parameters
    ----------
    jobset : JobSet, optional
        Jobs to replay (default: the trace ``trace``, or jobsets of the generator ``workload``).
    config : PickConfig, optional
        Candidates ``visible``, ``queue``, ``placement``, ``objective``, ``tau``,
        ``skip_forced``, ``machines``, ``overrun``; the keywords of the same names override it.
    trace : str, optional
        A bundled trace name or an SWF file (one second per step); default ``kth-sp2``.
    end : float, optional
        Only the trace's jobs arriving before this many seconds since its first (default: all;
        ``schedlab/Pick-v0``: :data:`schedlab.traces.KTH_TRAIN_END`, KTH-SP2's training part).
    workload, load, jobsets, workload_seed, workload_params
        A generator, its offered load, jobsets and seed, used instead of a trace.
    window : int or None
        Jobs per episode (None: whole jobsets), :class:`~.windows.Windows`.
    queue : str or sequence of str
        The discipline, or those an episode draws from.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(
        self,
        jobset: JobSet | None = None,
        config: PickConfig | None = None,
        *,
        trace: str | None = None,
        end: float | None = None,
        workload: str | None = None,
        load: float = 0.7,
        jobsets: int = 20,
        workload_seed: int = 0,
        workload_params: dict[str, Any] | None = None,
        window: int | None = None,
        queue: PickQueue | Sequence[PickQueue] | None = None,
        visible: int | None = None,
        objective: str | None = None,
        placement: str | None = None,
        machines: int | None = None,
        overrun: str | None = None,
        skip_forced: bool | None = None,
    ) -> None:
        js = episode_jobset(
            jobset, trace, workload, load, jobsets, workload_seed, workload_params, end
        )
        cfg = _config(
            config,
            visible=visible,
            objective=objective,
            placement=placement,
            machines=machines,
            overrun=overrun,
            skip_forced=skip_forced,
        )
        self._setup(js, cfg, window, queue, 1)
        self._one = np.zeros(1, np.int64)
        self.observation_space, self.action_space = self._single_spaces
        self._episode: dict[str, Any] = {}

    def _info(self, mask: np.ndarray) -> dict[str, Any]:
        now = int(self.engine.state.now[0])
        return {"action_mask": mask.astype(np.int8), **self._episode, "now": now}

    def action_masks(self) -> np.ndarray:
        """The candidates now, bool, shape ``(K,)``: ``info["action_mask"]`` of the last
        ``reset`` or ``step`` (sb3-contrib's ``MaskablePPO`` calls this method)."""
        mask: np.ndarray = self._mask(self._one)[0]
        return mask

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: ``options["jobset"]`` (an id) and ``options["start"]`` (jobs into
        it) name one; otherwise one is drawn with ``np_random``."""
        super().reset(seed=seed)
        if options and "jobset" in options:
            lo, hi = self.windows.chosen(self._ids, options)
        else:
            lo, hi = self.windows.draw(self.np_random, 1)
        self._start(np.zeros(1, np.int64), lo, hi, self.np_random)
        k = int(np.searchsorted(self.windows.bounds, lo[0], side="right") - 1)
        queue = list(QUEUES)[int(self.engine.state.queue[0])]
        self._episode = {
            "jobset": int(self._ids[k]),
            "start": int(lo[0] - self.windows.bounds[k]),
            "jobs": int(hi[0] - lo[0]),
            "queue": queue,
        }
        obs, mask = self._observe(self._one)
        return obs[0], self._info(mask[0])

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Pick candidate ``action``; terminated once every job of the window has started."""
        paid, obs, mask = self._step((int(action),), self._one)
        info = self._info(mask[0])
        done = bool(self.engine.state.done[0])
        if done:
            info |= {key: float(v[0]) for key, v in self.engine.window_means(self._one).items()}
        return obs[0], float(paid[0]), done, False, info


class PickVectorEnv(_Adapter, BatchedEnv):
    """``num_envs`` pick environments advanced by one compiled call per step, with same-step
    autoreset: an env whose episode ends returns its next episode's first observation, and
    ``info["final_obs"]`` / ``info["final_info"]`` (its window's ``bounded_slowdown`` and
    ``wait``) under the masks ``info["_final_obs"]`` / ``info["_final_info"]``.

    Parameters as :class:`PickEnv` (a ``jobset`` is required), and ``baseline``
    (:data:`Baseline`, optional): each episode's rewards are divided by its value for the
    episode, so that every window weighs the same in a return (the return of ``objective``
    ``bounded_slowdown`` becomes minus the ratio of the window's mean to the baseline's).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012

    def __init__(
        self,
        jobset: JobSet,
        num_envs: int,
        config: PickConfig | None = None,
        *,
        window: int | None = None,
        queue: PickQueue | Sequence[PickQueue] | None = None,
        baseline: Baseline | None = None,
        **overrides: Any,
    ) -> None:
        self._setup(jobset, _config(config, **overrides), window, queue, num_envs)
        self._baseline = baseline
        self._batch_spaces(num_envs)
        self._all = np.arange(num_envs, dtype=np.int64)

    def _restart(self, envs: np.ndarray) -> None:
        lo, hi = self.windows.draw(self.np_random, envs.size)
        self._start(envs, lo, hi, self.np_random)

    def _obs_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        obs, mask = self._observe(self._all)
        return obs, {"action_mask": mask, "_action_mask": np.ones(self.num_envs, bool)}

    def action_masks(self) -> np.ndarray:
        """The candidates now, bool, shape ``(num_envs, K)``."""
        return self._mask(self._all)

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One pick per env; envs whose episode ends restart at once (same-step autoreset)."""
        rewards, obs, mask = self._step(np.asarray(actions).reshape(-1), self._all)
        ended = self.engine.done
        info: dict[str, Any] = {"action_mask": mask, "_action_mask": np.ones(self.num_envs, bool)}
        if ended.any():
            envs = np.flatnonzero(ended)
            final: dict[str, Any] = {}
            for key, values in self.engine.window_means(envs).items():
                final[key] = np.zeros(self.num_envs)
                final[key][envs] = values
                final[f"_{key}"] = ended
            info |= {
                "final_obs": obs.copy(),
                "_final_obs": ended,
                "final_info": final,
                "_final_info": ended,
            }
            self._restart(envs)
            obs[envs], info["action_mask"][envs] = self._observe(envs)
        return obs, rewards, ended, np.zeros(self.num_envs, bool), info
