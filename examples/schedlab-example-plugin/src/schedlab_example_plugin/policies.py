"""Least work first: a job order, written as schedlab's built-in heuristics are."""

from __future__ import annotations

from schedlab.policies.heuristics import Heuristic, score_function


@score_function
def _least_work(duration, arrival, index, now, knob, alignment, capacity2, size):
    # ``duration`` is the estimate the scheduler sees, ``size`` the first resource's demand.
    return 1.0 / (duration * max(size, 1e-9))


class LeastWorkFirst(Heuristic):
    """Least work first: the job of smallest estimate × processors starts first."""

    key, score, static = "lwf", _least_work, True
