"""The cluster engine, compiled and batched over ``B`` environments (design.md §5, §8).

Same semantics as :class:`schedlab.simulator.cluster.engine.Engine` (tests check identical
schedules), held as arrays so that one compiled call advances every environment; it is the
cluster's :class:`~schedlab.simulator.model.Model`:

* ``m`` identical machines, ``M`` slots filled in arrival order, a FIFO backlog that never drops
  a job;
* action ``a`` (Gymnasium convention): ``0`` is void; ``a = 1 + i·M + q`` allocates the job in
  slot ``q`` on machine ``i`` at the earliest offset ``0 .. max(0, T − duration)`` where it fits
  there for its whole duration (time does not move); void or an invalid action advances one step
  (completions, then arrivals);
* heuristics run on it through their ``act_batch`` (start-now actions), as agents do;
* a queue discipline for agents (``queue``, codes of
  :data:`~schedlab.simulator.cluster.disciplines.DISCIPLINES`), enforced alike by the action mask,
  :meth:`~BatchedEngine.step` (a disallowed action acts as void) and ``skip_forced``:
  ``greedy`` (default) as above; ``strict``: only the *head* (the earliest-arrived waiting job,
  the slot job with the smallest row) may be allocated, and only to start now; ``easy`` (EASY
  backfilling): the head may start now, and another slot job may start now on machine ``i`` if
  the head's **reservation** (its earliest start over all machines in the free-capacity profile)
  is not later once that job is placed. Under strict and easy nothing is allocated into the
  future: only the reservation is. It is looked for over the whole tracked profile
  (``T + 2·longest + 1`` steps), where every allocation has ended, so the head always has one,
  even beyond the horizon the image shows. ``conservative`` keeps a reservation per waiting job
  across decisions: it is for heuristics (fast and step engines), and refused here.

Rewards (Mao et al. 2016, §3.2, §3.4; Chen et al. 2017, Eq. 1): the step from
``t`` to ``t + 1`` earns ``−(Σ_i α_i·W_i + β·W_slots + γ·W_backlog)``, where ``W`` sums the
weights ``w_j = 1 / duration_j`` (objective ``slowdown``) or ``1`` (``completion``) of the jobs
allocated to machine ``i`` and not finished, waiting in the visible slots, and in the backlog; by
default α = β = γ = 1, i.e. ``−Σ w_j`` over the jobs in the system. Allocations earn 0. An episode
ends when every job has been allocated; the reward still to come then (allocated jobs until they
finish) is paid at once, so the return with γ = 1 and unit weights is exactly ``−Σ slowdown`` (or
``−Σ completion time``). With ``skip_forced`` the engine also advances on its own while no action
but void is valid (no choice to make), adding those steps' rewards to the decision that led there.

Every job finishes: an environment still running at its time limit (by default the last arrival
plus the sum of all durations plus ``T``, i.e. slower than running the jobs one by one) is
finished by FCFS start-now placement on the first fitting machine (under strict or easy, on the
lowest machine the discipline allows), and the jobs so placed are counted in :attr:`forced`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.cluster.batched_state import State, new_state
from schedlab.simulator.cluster.disciplines import DISCIPLINES
from schedlab.simulator.cluster.dispatch import arrival_order
from schedlab.simulator.cluster.engine_inputs import (
    default_time_limit,
    jobset_bounds,
    resolve_machines,
    writable,
)
from schedlab.simulator.cluster.kernels import (
    job_means,
    reset_envs,
    step_envs,
    valid_mask,
)
from schedlab.simulator.cluster.precedence import Precedence, remaining_paths
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.model import Placements, Snapshot, View
from schedlab.simulator.state_sizes import StateSizes

Objective = Literal["slowdown", "completion"]
AgentQueue = Literal["greedy", "strict", "easy"]
"""Queue disciplines an agent can act under (:class:`BatchedEngine`'s ``queue``)."""
FALLBACK = arrival_order
"""The order that finishes an env at its time limit (on first-fit machines): FCFS."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RewardWeights:
    """Weights of where a job waits or runs in the per-step reward (Chen et al. 2017, Eq. 1)."""

    alpha: tuple[float, ...] | float = 1.0
    """Per machine (or one value for all): jobs allocated to machine ``i``, running or reserved."""
    beta: float = 1.0
    """Jobs waiting in the visible slots (Chen et al. use 2)."""
    gamma: float = 1.0
    """Jobs in the backlog."""

    def alphas(self, machines: int) -> np.ndarray:
        """α per machine, float64, shape ``(m,)``."""
        a = np.broadcast_to(np.asarray(self.alpha, dtype=np.float64), (machines,))
        return np.ascontiguousarray(a)


class BatchedEngine(StateSizes):
    """``B`` environments, each replaying the jobs in rows ``lo[b]:hi[b]``.

    Parameters
    ----------
    arrival, duration : int64, shape ``(n,)``
        Jobs, each env's rows contiguous and sorted by (arrival, job_id); ``duration`` is the
        steps each job runs.
    demand : float64, shape ``(n, d)``
    lo, hi : int64, shape ``(B,)``
        Job rows of each env (several envs may replay the same rows).
    capacity : float64, shape ``(d,)``
        One machine's capacity.
    config : ClusterConfig
        ``M``, ``T``, the backlog shown and ``m`` (``config.machines``, default 1).
    objective : ``"slowdown"`` or ``"completion"``
        Reward weight ``1 / duration`` or ``1`` per job in the system and step.
    rewards : RewardWeights
        Where-weights α, β, γ (default all 1).
    skip_forced : bool
        Advance on its own while only the void action is valid.
    time_limit : int64 array, shape ``(B,)``, optional
        Step at which an unfinished env is completed by FCFS (default: last arrival + Σ duration
        + T of its jobs).
    max_jobs : int, optional
        Most jobs an env will replay (default: the largest ``hi − lo``); needed when ``lo`` and
        ``hi`` are set later (Gymnasium adapters).
    seen : int64, shape ``(n,)``, optional
        The length heuristics' scores see of each job (its estimate; default ``duration``).
        Agents' observations show ``duration``.
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        The agents' queue discipline (module docstring); heuristics' start-now mode ignores it.
    """

    kind: ClassVar[str] = "cluster"
    state: State

    def __init__(
        self,
        arrival: np.ndarray,
        duration: np.ndarray,
        demand: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        capacity: np.ndarray,
        config: ClusterConfig,
        *,
        objective: Objective = "slowdown",
        rewards: RewardWeights | None = None,
        skip_forced: bool = True,
        time_limit: np.ndarray | None = None,
        max_jobs: int | None = None,
        seen: np.ndarray | None = None,
        queue: AgentQueue = "greedy",
        precedence: Precedence | None = None,
    ) -> None:
        check_agent_queue(queue)
        if objective not in ("slowdown", "completion"):
            msg = f"objective must be 'slowdown' or 'completion', got {objective!r}"
            raise ValueError(msg)
        if config.slots is None:
            msg = (
                "the batched engine needs visible slots (ClusterConfig.slots), not the whole queue"
            )
            raise ValueError(msg)
        arrival = np.array(arrival, dtype=np.int64)  # a copy: DAG tasks arrive when ready
        duration = np.ascontiguousarray(duration, dtype=np.int64)
        seen = duration if seen is None else np.ascontiguousarray(seen, dtype=np.int64)
        demand = writable(np.asarray(demand, dtype=np.float64).reshape(arrival.size, -1))
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        capacity = writable(np.asarray(capacity, dtype=np.float64))
        self.config, self.objective, self.skip_forced = config, objective, skip_forced
        self.queue = queue
        self.rewards = rewards or RewardWeights()
        n_max = max(int((hi - lo).max(initial=1)) if max_jobs is None else max_jobs, 1)
        weight = 1.0 / duration if objective == "slowdown" else np.ones(arrival.size)
        if time_limit is None:
            time_limit = default_time_limit(arrival, duration, lo, hi, config.horizon)
        alphas = self.rewards.alphas(config.n_machines())
        self.state = new_state(
            jobs=(arrival, duration, seen, demand, weight.astype(np.float64)),
            lo=lo,
            hi=hi,
            time_limit=np.asarray(time_limit, dtype=np.int64),
            capacity=capacity,
            horizon=config.horizon,
            weights=(alphas, float(self.rewards.beta), float(self.rewards.gamma)),
            slots=config.slots,
            machines=config.n_machines(),
            n_max=n_max,
            queue=DISCIPLINES[queue],
            precedence=precedence,
        )
        self.reset()

    @classmethod
    def for_jobsets(
        cls,
        arrival: np.ndarray,
        duration: np.ndarray,
        demand: np.ndarray,
        bounds: np.ndarray,
        capacity: np.ndarray,
        config: ClusterConfig,
        *,
        repeats: int = 1,
        **kwargs: Any,
    ) -> BatchedEngine:
        """Envs ``k·repeats .. k·repeats + repeats − 1`` replay jobset ``k``, whose jobs are rows
        ``bounds[k]:bounds[k + 1]`` (``bounds``: int64, shape ``(K + 1,)``)."""
        lo = np.repeat(bounds[:-1], repeats)
        hi = np.repeat(bounds[1:], repeats)
        return cls(arrival, duration, demand, lo, hi, capacity, config, **kwargs)

    @classmethod
    def from_jobset(
        cls,
        jobset: JobSet,
        config: ClusterConfig,
        *,
        repeats: int = 1,
        clairvoyant: bool = False,
        ranks: bool = False,
        **kwargs: Any,
    ) -> BatchedEngine:
        """Envs replaying every jobset of ``jobset``, ``repeats`` envs each, in jobset order, on
        ``config``'s machines (default: the JobSet's); jobs run and are seen as
        :func:`~schedlab.simulator.config.job_times` says (``config.overrun``, ``clairvoyant``).
        ``ranks``: heuristics' scores see a DAG task's remaining critical path instead of its
        length (:class:`~schedlab.policies.heuristics.CPF`). ``kwargs`` go to the constructor
        (``queue``: the agents' discipline, ...)."""
        jobs = jobset.jobs
        config = resolve_machines(config, jobset)
        runtime, seen = job_times(jobset, config.overrun, clairvoyant=clairvoyant)
        prec = Precedence.of(jobset, config.release)
        if ranks and prec.dag:
            seen = remaining_paths(prec, seen)
        return cls.for_jobsets(
            jobs.get_column("arrival").to_numpy(),
            runtime,
            jobset.demands(),
            jobset_bounds(jobs.get_column("jobset").to_numpy()),
            jobset.machine_capacity,
            config,
            repeats=repeats,
            seen=seen,
            precedence=prec if prec.dag else None,
            **kwargs,
        )

    # -- the Model protocol ----------------------------------------------------------------
    @property
    def n_actions(self) -> int:
        """``m·M + 1``."""
        return self.machines * int(self.config.slots or 0) + 1

    def _envs(self, envs: np.ndarray | None) -> np.ndarray:
        if envs is None:
            return np.arange(self.n_envs, dtype=np.int64)
        return np.asarray(envs, dtype=np.int64)

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Restart ``envs`` (all by default); returns the reward of skipped forced steps."""
        envs = self._envs(envs)
        rewards = np.empty(envs.size)
        reset_envs(self.state, envs, self.skip_forced, FALLBACK, rewards)
        return rewards

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        """Apply ``actions`` (int, shape ``(n,)``, 0 = void, ``1 + i·M + q`` = slot ``q`` on
        machine ``i``) to ``envs``. Returns the rewards, float64, shape ``(n,)``."""
        envs = self._envs(envs)
        rewards = np.empty(envs.size)
        actions = np.asarray(actions, dtype=np.int64)
        step_envs(self.state, envs, actions, self.skip_forced, FALLBACK, rewards)
        return rewards

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        """Valid actions, bool, shape ``(n, m·M + 1)``: void, then slot ``q`` on machine ``i``
        where the job fits within the horizon and the queue discipline allows it."""
        envs = self._envs(envs)
        out = np.empty((envs.size, self.n_actions), dtype=np.bool_)
        valid_mask(self.state, envs, out)
        return out

    def snapshot(self, envs: np.ndarray | None = None) -> Snapshot:
        """The state of ``envs`` for views (the engine's own arrays, not copies)."""
        s = self.state
        return Snapshot(
            envs=self._envs(envs),
            free=s.free,
            capacity=s.capacity,
            view=s.slot,
            demand=s.demand,
            duration=s.duration,
            seen=s.seen,
            arrival=s.arrival,
            base=s.lo,
            backlog=s.bq_tail - s.bq_head,
            since=s.now - s.last_arr,
            now=s.now,
            horizon=self.config.horizon,
            backlog_view=self.config.backlog_view,
        )

    def observe(self, view: View[Snapshot], envs: np.ndarray | None = None) -> Any:
        """What ``view`` shows of ``envs`` (all by default)."""
        return view.observe(self.snapshot(envs))

    # -- results ---------------------------------------------------------------------------
    @property
    def done(self) -> np.ndarray:
        """bool, shape ``(B,)``: every job of the env has been placed."""
        result: np.ndarray = self.state.done
        return result

    @property
    def forced(self) -> np.ndarray:
        """int64, shape ``(B,)``: jobs placed by the time-limit fallback."""
        result: np.ndarray = self.state.forced
        return result

    def starts(self, env: int) -> np.ndarray:
        """Start step of every job of ``env`` (its rows in order), int64."""
        s = self.state
        result: np.ndarray = s.start[env, : s.hi[env] - s.lo[env]].copy()
        return result

    def _concat(self, per_env: np.ndarray) -> np.ndarray:
        s = self.state
        keep = np.arange(per_env.shape[1])[None, :] < (s.hi - s.lo)[:, None]
        result: np.ndarray = per_env[keep]
        return result

    def all_starts(self) -> np.ndarray:
        """Start steps of all envs concatenated (the job rows in order when each env replays
        its own jobset)."""
        return self._concat(self.state.start)

    def ready_times(self) -> np.ndarray:
        """When every job of every env became ready (int64, concatenated in env order): its
        arrival, or for a DAG task its release and parents' finish (:mod:`.precedence`)."""
        s = self.state
        return np.concatenate([s.arrival[lo:hi] for lo, hi in zip(s.lo, s.hi, strict=True)])

    def placements(self) -> Placements:
        """Start, finish and machine of every job of every env, concatenated in env order."""
        s = self.state
        start = self.all_starts()
        rows = np.concatenate([np.arange(lo, hi) for lo, hi in zip(s.lo, s.hi, strict=True)])
        finish = start + s.duration[rows.astype(np.int64)] if rows.size else start
        return Placements(start=start, finish=finish, target=self._concat(s.machine))

    def job_means(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean slowdown and mean completion time (steps) per env, float64, shape ``(B,)`` each
        (nan for an env without jobs); valid once the env is done."""
        return job_means(self.state)

    def withholding(self, envs: np.ndarray | None = None) -> dict[str, Any]:
        """Totals over ``envs`` (all by default): time steps advanced by the agent, steps that
        left a visible job waiting although it fitted now, withheld jobs by length (steps ->
        count, one count per job and step), and jobs placed by the time-limit fallback."""
        s, envs = self.state, self._envs(envs)
        counts = s.withheld[envs].sum(axis=0)
        return {
            "time_steps": int(s.steps[envs].sum()),
            "withholding_steps": int(s.withhold_steps[envs].sum()),
            "withheld_lengths": {int(k): int(v) for k, v in enumerate(counts) if v},
            "forced_jobs": int(s.forced[envs].sum()),
        }


def check_agent_queue(queue: str) -> None:
    """Refuse a queue discipline agents cannot act under (``ValueError`` saying why)."""
    if queue == "conservative":
        msg = (
            "queue discipline 'conservative' keeps a reservation for every waiting job across "
            "decisions: it is for heuristics on the fast and step engines "
            "(e.g. fcfs+conservative), not for agents; use greedy, strict or easy"
        )
        raise ValueError(msg)
    if queue not in get_args(AgentQueue):
        msg = f"queue must be one of {', '.join(get_args(AgentQueue))}, got {queue!r}"
        raise ValueError(msg)
