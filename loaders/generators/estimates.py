"""User runtime estimates of synthetic jobs: what a job requests, beside what it runs.

Every generator takes one estimate model (:class:`~.base.SyntheticGenerator` fields
``estimate``, ``estimate_factor`` and ``step_seconds``), so "how much do bad estimates cost" is a
question of one parameter:

``exact``   (default) the estimate is the duration: no ``estimate`` column is written, and every
            engine then sees the true duration (nothing changes for DeepRM's workloads).
``factor``  ``estimate = ceil(duration · f)``, ``f ~ Uniform(1, estimate_factor)`` per job: the
            "f-model" of Mu'alem and Feitelson (2001, "Utilization, predictability, workloads,
            and user runtime estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS),
            an over-estimate by at most the factor.
``modal``   the round values users actually pick (Tsafrir, Etsion and Feitelson 2005, "Modeling
            user runtime estimates", JSSPP: a few modal requests such as 5, 15 minutes and 1, 4,
            18 hours cover most jobs): each job requests the smallest of :data:`MODAL_SECONDS`
            (converted to steps of ``step_seconds`` seconds, rounded up) that is >= its
            duration; a job longer than the largest requests its duration rounded up to a
            multiple of the largest. A simplification of their model: the job gets the tightest
            modal value, not one drawn from the values' popularity.

Only ``factor`` draws randomness, from the generator's own ``numpy.random.Generator`` after the
jobs are sampled (the jobs themselves do not change with the model).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from schedlab.errors import ParameterError
from schedlab.timebounds import MAX_TIME, MAX_TIME_TEXT

EstimateModel = Literal["exact", "factor", "modal"]
"""Estimate models (module docstring)."""

MODAL_SECONDS = np.array(
    [300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200, 64800, 86400, 172800], dtype=np.float64
)
"""Modal request values, in seconds: 5, 10, 15, 30 minutes; 1, 2, 4, 8, 12, 18, 24, 48 hours
(Tsafrir, Etsion and Feitelson 2005)."""


def modal_steps(step_seconds: float) -> np.ndarray:
    """The modal values (:data:`MODAL_SECONDS`) in steps of ``step_seconds`` seconds, rounded up,
    at least 1, distinct and increasing (int64, shape ``(k,)``)."""
    steps = np.maximum(np.ceil(MODAL_SECONDS / step_seconds), 1).astype(np.int64)
    result: np.ndarray = np.unique(steps)
    return result


def draw_estimates(
    model: EstimateModel,
    duration: np.ndarray,
    rng: np.random.Generator,
    *,
    factor: float = 5.0,
    step_seconds: float = 60.0,
) -> np.ndarray:
    """The estimate of every job, int64 steps, shape ``(n,)``, >= ``duration`` (int, ``(n,)``,
    steps >= 1); ``factor`` and ``step_seconds`` parameterise ``factor`` and ``modal``."""
    duration = np.asarray(duration, dtype=np.int64)
    if model == "exact":
        return duration
    if model == "factor":
        if not factor >= 1:
            msg = f"estimate_factor must be >= 1 (estimates never under-estimate), got {factor}"
            raise ValueError(msg)
        longest = int(duration.max()) if duration.size else 1
        if longest * factor > MAX_TIME:
            msg = (
                f"estimate_factor={factor:g}: estimates up to {longest:,} steps x {factor:g} "
                f"would exceed {MAX_TIME_TEXT} steps, the most the simulators can count without "
                f"overflow; lower estimate_factor below {MAX_TIME / longest:.3g}"
            )
            raise ParameterError(msg)
        f = rng.uniform(1.0, factor, duration.shape[0])
        return np.maximum(np.ceil(duration * f), duration).astype(np.int64)
    if model == "modal":
        if not step_seconds > 0:
            msg = f"step_seconds must be > 0, got {step_seconds}"
            raise ValueError(msg)
        values = modal_steps(step_seconds)
        k = np.searchsorted(values, duration, side="left")
        largest = values[-1]
        beyond = -(-duration // largest) * largest  # rounded up to a multiple of the largest
        return np.where(k < values.size, values[np.minimum(k, values.size - 1)], beyond)
    msg = f"unknown estimate model {model!r}; known: exact, factor, modal"
    raise ValueError(msg)
