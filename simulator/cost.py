"""How long a heuristic's simulation will take, estimated before it runs (issue 36).

The compiled engines simulate a whole jobset per call, so a long simulation cannot report
progress from inside; the command line says up front when one will take long
(:func:`estimate`, :attr:`Cost.long`) and then shows progress per jobset and per policy.

What costs time is the queue. Per decision (an arrival, a completion, a reservation time):

* greedy list scheduling scans the waiting jobs for a dynamic order (``O(Q·m)``); a static
  order over the whole queue and the M visible slots cost next to nothing;
* EASY backfilling walks the running jobs' expected ends and the queue (``O(Q·m·d)``);
* conservative backfilling (one path for every order and placement rule) compresses the
  queue's reservations whenever a job ends before its estimate (``O(Q·s)``, ``s`` a machine's
  segments, up to ``Q/m``, per reservation): ``O(Q^2/m)`` per decision, as measured on
  overloaded logs for static and dynamic orders alike (WFP3 and FCFS within 10% of each
  other).

The queue length ``Q`` is estimated by a fluid model: the work each job brings (its largest
share of the cluster's capacity times its run time) against a cluster that clears one unit of
work per step (Lindley's recursion on the work found by each arrival), ``Q`` being that work
over the mean job's. Summed over decisions (two per job, and the queue left at the last
arrival draining one job at a time), the operations times :data:`SECONDS_PER_OP` give the
estimate: an order of magnitude, measured on a KTH-SP2 log (28,475 jobs) compressed to offered
loads up to 2.8 on a shared 2-core machine, not a promise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.jobset import JobSet
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.model import traits

LONG_SECONDS = 20.0
"""An estimate above this many seconds is announced (:attr:`Cost.long`)."""
UNINTERRUPTIBLE = "Ctrl-C takes effect when the jobset being simulated ends"
"""What an announcement adds: a compiled engine cannot be interrupted inside a jobset."""
SECONDS_PER_OP = {"conservative": 2e-10, "easy": 2e-9, "greedy": 2e-9}
"""Seconds per operation of each path's count (module docstring), measured."""
PATHS = {
    "conservative": "conservative backfilling (a compression of the whole queue at every early "
    "end: about O(Q^2/m) per decision)",
    "easy": "EASY backfilling (O(Q·m·d) per decision)",
    "greedy": "list scheduling with a dynamic order over the queue (O(Q·m) per decision)",
}
"""What each path costs, for messages."""


@dataclass(frozen=True, slots=True)
class Cost:
    """The estimated cost of one policy's simulation of a JobSet."""

    seconds: float
    """Estimated CPU seconds (an order of magnitude)."""
    path: str
    """A key of :data:`PATHS` (``""``: none that grows with the queue)."""
    jobs: int
    """Jobs of the largest jobset."""
    queue: float
    """Most jobs estimated waiting at once."""
    load: float
    """Offered load of the largest jobset (the fluid model's)."""

    @property
    def long(self) -> bool:
        """Whether the simulation is expected to take more than :data:`LONG_SECONDS`."""
        return self.seconds > LONG_SECONDS

    def describe(self) -> str:
        """One line: the estimate and what it is made of."""
        what = PATHS.get(self.path, "the list scheduler")
        return (
            f"estimated {_duration(self.seconds)} of CPU: {what}, with up to about "
            f"{self.queue:,.0f} jobs waiting (largest jobset: {self.jobs:,} jobs at offered "
            f"load {self.load:.2f})"
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


def path_of(policy: object, config: ClusterConfig) -> str:
    """Which path of :data:`PATHS` ``policy`` takes (``""``: one whose cost stays small)."""
    said = traits(policy)
    if said.queue in ("conservative", "easy"):
        return said.queue
    if said.queue == "greedy" and not said.static and config.slots is None:
        return "greedy"
    return ""


def queue_lengths(arrival: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, float]:
    """Per arrival, the jobs estimated waiting (the fluid model of the module docstring), and
    the mean work of a job; ``arrival`` (steps, sorted) and ``work`` (capacity·steps over the
    cluster's capacity), shape ``(n,)``."""
    mean = float(work.mean()) if work.size else 1.0
    before = np.concatenate([[0.0], np.cumsum(work)[:-1]]) - (arrival - arrival[0])
    found = before - np.minimum.accumulate(np.minimum(before, 0.0))
    return found / max(mean, 1e-300), mean


def estimate(jobset: JobSet, policy: object, config: ClusterConfig) -> Cost:
    """The :class:`Cost` of simulating every jobset of ``jobset`` under ``policy`` (a
    heuristic; other policies cost what their network costs, estimated as nothing here)."""
    path = path_of(policy, config)
    jobs = jobset.jobs
    if not path or jobs.height == 0:
        return Cost(seconds=0.0, path="", jobs=0, queue=0.0, load=0.0)
    runtime, _ = job_times(jobset, config.overrun)
    share: np.ndarray = (jobset.demands() / jobset.capacity).max(axis=1)
    m = int(config.machines or jobset.meta.machines)
    d = len(jobset.resources)
    total, top = 0.0, (0, 0.0, 0.0)
    ids = jobs.get_column("jobset").to_numpy()
    arrival = jobs.get_column("arrival").to_numpy().astype(np.float64)
    bounds = np.flatnonzero(np.diff(ids)) + 1
    for lo, hi in zip([0, *bounds], [*bounds, ids.size], strict=True):
        work = share[lo:hi] * runtime[lo:hi]
        q, _ = queue_lengths(arrival[lo:hi], work)
        end = float(q[-1])
        sums = {p: float((q**p).sum()) + end ** (p + 1) / (p + 1) for p in (1, 2)}
        ops = {
            "conservative": sums[2] * d / m,
            "easy": sums[1] * m * d,
            "greedy": sums[1] * m,
        }[path]
        total += ops * SECONDS_PER_OP[path]
        span = float(arrival[hi - 1] - arrival[lo] + 1)
        if hi - lo > top[0]:
            top = (hi - lo, float(q.max()), float(work.sum()) / span)
    return Cost(seconds=total, path=path, jobs=top[0], queue=top[1], load=top[2])


def jobset_subsets(jobset: JobSet) -> list[JobSet]:
    """One JobSet per jobset of ``jobset`` (same metadata), to simulate one at a time."""
    parts = jobset.jobs.group_by("jobset", maintain_order=True)
    return [JobSet(part, jobset.meta) for _, part in parts]
