"""Timing helpers shared by the benchmarks (a module, not a benchmark: ``make bench`` runs only
``bench_*.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """Smallest wall time of ``repeats`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def reinforce_iteration(
    engine: Any,
    logits_fn: Any,
    optimizer: torch.optim.Optimizer,
    config: Any,
    rng: np.random.Generator,
) -> tuple[float, float, Any]:
    """One REINFORCE iteration as :func:`schedlab.policies.reinforce.train` runs it (rollout of
    every env, returns and per-step baseline, one update), without validation: ``(rollout s,
    update s, the recorded batch)``."""
    from schedlab.policies.policy_gradient import advantages, collect, policy_gradient_step

    t0 = time.perf_counter()
    batch = collect(engine, logits_fn, rng, mask_invalid=True, record=True)
    t1 = time.perf_counter()
    adv = advantages(batch, config.gamma, config.rollouts)
    policy_gradient_step(logits_fn, optimizer, batch, adv, mask_invalid=True)
    return t1 - t0, time.perf_counter() - t1, batch
