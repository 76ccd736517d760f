"""Helpers of the pick-engine tests: trace windows, jobsets with estimates, and agents that
pick what a heuristic's order puts first."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from schedlab.jobset import JobSet
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.options import TraceOptions
from schedlab.simulator.pick.engine import PickEngine
from schedlab.traces import bundled


def kth_windows(size: int = 200, windows: int = 3, seed: int = 5) -> JobSet:
    """Windows of the bundled KTH-SP2 log (1 s steps, the users' requests as estimates)."""
    options = TraceOptions(time_step=1, jobset_size=size, windows=windows, seed=seed)
    result, _ = load_trace("swf", bundled("kth-sp2"), options=options)
    return result.jobs


def with_estimates(js: JobSet, seed: int) -> JobSet:
    """``js`` with estimates from half to twice the durations (some jobs overrun them)."""
    rng = np.random.default_rng(seed)
    duration = js.jobs.get_column("duration").to_numpy()
    estimate = np.maximum(1, np.round(duration * rng.uniform(0.5, 2.0, duration.size)))
    return JobSet.create(
        js.jobs.with_columns(pl.Series("estimate", estimate.astype(np.int64))), js.meta
    )


def order_picks(engine: PickEngine, policy: Any) -> Any:
    """An act function ``(envs) -> actions`` that picks, among each env's candidates, the one
    ``policy``'s compiled order scores highest (the earliest on ties), as the disciplines
    order: a static order scored at time 0, a dynamic one now."""
    s, score = engine.state, policy.score.ctypes

    def act(envs: np.ndarray) -> np.ndarray:
        out = np.empty(envs.size, dtype=np.int64)
        for x, b in enumerate(envs):
            rows, lo = s.cand[b, : s.cn[b]], int(s.lo[b])
            now = 0 if policy.static else int(s.now[b])
            scores = [
                score(
                    int(s.estimate[j]),
                    int(s.arrival[j]),
                    int(j - lo),
                    now,
                    float(policy.knob),
                    0.0,
                    0.0,
                    float(s.demand[j, 0]),
                )
                for j in rows
            ]
            out[x] = 1 + int(np.argmax(scores))
        return out

    return act


def run_picks(engine: PickEngine, act: Any) -> int:
    """Reset ``engine`` and step it with ``act`` until every env is done; the decisions."""
    engine.reset()
    decisions = 0
    active = np.flatnonzero(~engine.done)
    while active.size:
        engine.step(act(active), active)
        decisions += active.size
        active = active[~engine.done[active]]
    return decisions
