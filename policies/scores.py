"""The heuristics' job orders as compiled scores: each a ``numba.cfunc`` of
:data:`~schedlab.simulator.cluster.dispatch.SCORE_SIGNATURE` (which declares the features and
their types once: the functions below are not annotated again, see pyproject's mypy section).
A higher score starts first."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedlab.simulator.cluster.dispatch import SCORE_SIGNATURE


def score_function(fn: Any) -> Any:
    """Compile ``fn(duration, arrival, index, now, knob, alignment, capacity2, size) -> float``
    as a job-order score (a cached ``numba.cfunc`` of :data:`SCORE_SIGNATURE`, which documents
    the features)."""
    return numba.cfunc(SCORE_SIGNATURE, cache=True)(fn)


@score_function
def shortest(duration, arrival, index, now, knob, alignment, capacity2, size):
    return 1.0 / duration


@score_function
def longest(duration, arrival, index, now, knob, alignment, capacity2, size):
    return float(duration)


@score_function
def alignment(duration, arrival, index, now, knob, alignment, capacity2, size):
    return alignment


@score_function
def tetris(duration, arrival, index, now, knob, alignment, capacity2, size):
    return knob * alignment / capacity2 + (1.0 - knob) / duration


@score_function
def response_ratio(duration, arrival, index, now, knob, alignment, capacity2, size):
    return 1.0 + (now - arrival) / duration


@score_function
def wfp3(duration, arrival, index, now, knob, alignment, capacity2, size):
    return (float(now - arrival) / duration) ** 3 * size


@score_function
def unicep(duration, arrival, index, now, knob, alignment, capacity2, size):
    return float(now - arrival) / (np.log2(max(size, 2.0)) * duration)


@score_function
def f1(duration, arrival, index, now, knob, alignment, capacity2, size):
    return -(np.log10(duration) * size + 870.0 * np.log10(max(arrival, 1)))
