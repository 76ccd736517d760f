"""What a ``jobscore`` PPO run is made of: its config (:class:`JobScoreConfig`), the jobs it
trains and validates on (:func:`make_data`), and the heuristics it is measured against
(:func:`heuristic_values`).

On a trace, the log is split **in time**: training episodes are windows drawn from the jobs
arriving before ``train_end`` seconds (since the log's first arrival), validation windows from
those arriving in ``[train_end, val_end)``, and everything from ``val_end`` on is left for the
test (never read here). The defaults split the bundled KTH-SP2 log (333 days) at days 230 and
265; validation follows the replay guide's sampling (windows of consecutive jobs at seeded start
points), as the held-out test of ``experiments/jobscore_kth.toml`` does after day 265.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from schedlab.errors import ParameterError
from schedlab.jobset import JobSet
from schedlab.param_checks import did_you_mean
from schedlab.params import Count, NonNegative, Positive, Share
from schedlab.policies.training import RunConfig
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.pick.engine import PickConfig, PickQueue
from schedlab.traces import KTH_TRAIN_END, KTH_VAL_END

Queues = Literal[
    "greedy", "strict", "easy", "greedy+easy", "greedy+strict", "strict+easy", "greedy+strict+easy"
]
"""The disciplines a run trains and validates under (each episode draws one)."""
HEURISTICS = ("fcfs", "sjf", "f1", "wfp3", "unicep")
"""The job orders the learning curves are measured against, under each discipline."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobScoreConfig(RunConfig):
    """Everything that determines a ``jobscore`` training run (written as ``config.json``;
    validation, checkpoints, seed and threads as :class:`~schedlab.policies.training.RunConfig`,
    validated every 10 iterations)."""

    workload: str = "kth-sp2"
    """A bundled trace (``kth-sp2``), an SWF file, or a registered generator's name."""
    time_step: Positive = 1.0
    """Seconds per step of a trace."""
    train_end: Positive = KTH_TRAIN_END
    """Training episodes come from the trace's jobs arriving before this (seconds since its
    first arrival)."""
    val_end: Positive = KTH_VAL_END
    """Validation windows from those arriving in ``[train_end, val_end)``; later jobs are the
    test's and are never read."""
    load: Positive = 0.7
    """Offered load of a generator's jobsets."""
    jobsets: Count = 50
    """Training jobsets of a generator (validation: ``val_windows`` more, another seed)."""
    workload_params: dict[str, Any] = field(default_factory=dict)
    """A generator's parameters."""
    window: Count = 256
    """Jobs per training episode (RLScheduler's sequences of 256)."""
    val_windows: Count = 20
    """Validation windows."""
    val_size: Count = 500
    """Jobs per validation window (the replay guide's 500)."""
    val_seed: int = 0
    """Seed of the validation windows' start points."""
    queues: Queues = "greedy+easy"
    """Disciplines of the training episodes (drawn per episode; the observation says which)
    and of the validation."""
    visible: Count = 128
    """K: candidates the network chooses among (RLScheduler's 128)."""
    objective: Literal["bounded_slowdown", "wait"] = "bounded_slowdown"
    """Reward and validation metric: the mean bounded slowdown (τ = 10 s) or the mean wait
    (seconds) of a window (:class:`~schedlab.simulator.pick.engine.PickConfig`)."""
    relative_to: str | None = None
    """Divide each training window's rewards by the mean bounded slowdown of this order of
    :data:`HEURISTICS` (such as ``"sjf"``; none by default) on the same window under the
    episode's discipline (:class:`WindowBaseline`), so every window weighs the same in the
    policy gradient: the return is minus the ratio to the heuristic, where by default a few
    congested windows, whose slowdowns are 10-50 times a quiet window's, dominate it. Needs
    ``objective`` ``bounded_slowdown``; validation and ``best.pt`` still use the plain mean."""
    iterations: Count = 1000
    """PPO iterations (one rollout and one update each)."""
    envs: Count = 16
    """Environments stepped together."""
    steps: Count = 256
    """Decisions per environment and iteration."""
    epochs: Count = 10
    """Passes over each rollout."""
    minibatches: Count = 8
    """Minibatches per pass."""
    lr: NonNegative = 1e-3
    """Adam learning rate (annealed linearly to 0 over ``iterations`` if ``anneal_lr``)."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0."""
    gamma: Share = 1.0
    """Discount over decisions (1: the window's mean, undiscounted)."""
    gae_lambda: Share = 0.95
    """λ of generalised advantage estimation."""
    clip: Positive = 0.2
    """PPO's clipping of the probability ratio."""
    ent_coef: NonNegative = 0.0
    """Weight of the entropy bonus (0, as RLScheduler's PPO: a bonus kept the sampled policy
    near uniform over the candidates, far from the highest-score policy that is evaluated)."""
    vf_coef: NonNegative = 0.5
    """Weight of the value loss."""
    max_grad_norm: Positive = 0.5
    """Gradient norm clip."""
    hidden: tuple[int, int, int] = (32, 16, 8)
    """Hidden sizes of the per-job scoring MLP (RLScheduler's kernel)."""
    critic: Count = 32
    """Width of the critic."""
    eval_every: Count = 10
    eval_greedy: bool = True
    """Validate (and select ``best.pt`` on) the highest-score policy; false: sampled."""
    device: str = "cpu"
    """torch device of the network (``cuda`` on a GPU machine: the update's minibatches, about
    nine tenths of an iteration on a CPU, run there; the environments stay on the CPU).
    Checkpoints are written from the CPU either way."""

    def queue_list(self) -> list[PickQueue]:
        """The disciplines, in order."""
        return [cast(PickQueue, q) for q in self.queues.split("+")]

    def pick(self) -> PickConfig:
        """The environment's settings."""
        return PickConfig(visible=self.visible, objective=self.objective)


def trace_path(workload: str) -> Path | None:
    """The file a trace workload names (a bundled name or a path), None for a generator."""
    from schedlab.registry import generators
    from schedlab.traces import BUNDLED, bundled

    if workload in BUNDLED:
        return bundled(workload)
    if Path(workload).is_file():
        return Path(workload)
    if workload in generators:
        return None
    hint = did_you_mean(workload, [*BUNDLED, *generators.names()])
    msg = (
        f"workload {workload!r} is no file, bundled trace ({', '.join(BUNDLED)}) or registered "
        f"generator{hint}"
    )
    raise ParameterError(msg)


def make_data(config: JobScoreConfig) -> tuple[JobSet, JobSet, dict[str, Any]]:
    """Training jobs (one jobset per trace part, or a generator's jobsets), validation
    windows, and where they came from."""
    path = trace_path(config.workload)
    if path is None:
        from schedlab.registry import generators

        gen = generators.create(config.workload, config.workload_params, where="workload_params")
        seeds = [
            int(s.generate_state(1)[0])
            for s in np.random.SeedSequence([config.seed, 0x70B5]).spawn(2)
        ]
        train = gen.generate(config.load, n_jobsets=config.jobsets, seed=seeds[0])
        val = gen.generate(config.load, n_jobsets=config.val_windows, seed=seeds[1])
        return train, val, {"generator": config.workload, "seeds": seeds}
    from schedlab.loaders.traces.load import load_trace
    from schedlab.loaders.traces.options import TraceOptions

    step = config.time_step
    train, _ = load_trace("swf", path, options=TraceOptions(time_step=step, end=config.train_end))
    options = TraceOptions(
        time_step=step,
        start=config.train_end,
        end=config.val_end,
        jobset_size=config.val_size,
        windows=config.val_windows,
        seed=config.val_seed,
    )
    val, _ = load_trace("swf", path, options=options)
    where = {
        "trace": str(path),
        "train": [0.0, config.train_end],
        "validation": [config.train_end, config.val_end],
    }
    return train.jobs, val.jobs, where


def window_metric(
    jobset: JobSet, start: np.ndarray, metric: str = "bounded_slowdown", tau: float = 10.0
) -> np.ndarray:
    """Per jobset (in order), the mean ``bounded_slowdown`` (τ = ``tau``) or ``wait`` of the
    schedule ``start`` (steps, rows in ``jobset.jobs`` order; jobs killed at their request), in
    seconds: the pick engine's measure (:meth:`~.PickEngine.window_means`) and ``schedlab
    report``'s."""
    jobs = jobset.jobs
    runtime, _ = job_times(jobset, "kill")
    step = float(jobset.meta.time_step_seconds or 1.0)
    run = runtime * step
    wait = (start - jobs.get_column("arrival").to_numpy()) * step
    value = np.maximum(1.0, (wait + run) / np.maximum(run, tau)) if metric != "wait" else wait
    ids = jobs.get_column("jobset").to_numpy()
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    out: np.ndarray = np.add.reduceat(value, first) / counts
    return out


def under(order: str, queue: str) -> str:
    """The policy spec of the heuristic ``order`` under the discipline ``queue``."""
    return order if queue == "greedy" else f"{order}+{queue}"


class WindowBaseline:
    """The mean ``bounded_slowdown`` of the order ``order`` on windows of ``jobset``'s rows
    under a discipline, computed once per (window, discipline) on the compiled engines
    (:func:`~schedlab.simulator.run.run_policy`, about 6 ms per window of 256 jobs): the
    :data:`~schedlab.simulator.pick.env.Baseline` of :class:`JobScoreConfig.relative_to`."""

    def __init__(self, jobset: JobSet, order: str, metric: str) -> None:
        if order not in HEURISTICS:
            msg = f"relative_to must be one of {list(HEURISTICS)}, got {order!r}"
            raise ValueError(msg)
        if metric != "bounded_slowdown":
            msg = f"relative_to needs objective 'bounded_slowdown' (>= 1), not {metric!r}"
            raise ValueError(msg)
        self.jobset, self.order = jobset, order
        self._cache: dict[tuple[int, int, str], float] = {}

    def __call__(self, lo: np.ndarray, hi: np.ndarray, queues: list[str]) -> np.ndarray:
        """The order's mean bounded slowdown on rows ``lo[x] .. hi[x] − 1`` under
        ``queues[x]``, ``(n,)``."""
        from schedlab.registry import make_policy
        from schedlab.simulator.run import run_policy

        out = np.empty(len(queues))
        for x, key in enumerate(zip(lo.tolist(), hi.tolist(), queues, strict=True)):
            if key not in self._cache:
                a, b, queue = key
                window = JobSet.create(self.jobset.jobs.slice(a, b - a), self.jobset.meta)
                policy = make_policy(under(self.order, queue))
                start = run_policy(window, policy, ClusterConfig(slots=None)).start
                self._cache[key] = float(window_metric(window, start)[0])
            out[x] = self._cache[key]
        return out


def heuristic_values(
    jobset: JobSet, queues: Sequence[str], metric: str = "bounded_slowdown"
) -> dict[str, dict[str, float]]:
    """Mean over the windows of ``jobset`` of the per-window ``metric`` of every order of
    :data:`HEURISTICS` under every discipline of ``queues``: ``{queue: {order: value}}``."""
    from schedlab.registry import make_policy
    from schedlab.simulator.run import run_policy

    whole = ClusterConfig(slots=None)
    out: dict[str, dict[str, float]] = {}
    for queue in queues:
        out[queue] = {}
        for order in HEURISTICS:
            start = run_policy(jobset, make_policy(under(order, queue)), whole).start
            out[queue][order] = float(window_metric(jobset, start, metric).mean())
    return out
