"""When two per-jobset values tie: within :data:`TIE_RTOL` of the largest value compared.

Identical schedules give exactly equal averages, but float summation order could otherwise split
them; every comparison and rank of :mod:`schedlab.evaluation.compare` and
:mod:`schedlab.evaluation.friedman` goes through :func:`snap` (or its rounding).
"""

from __future__ import annotations

import numpy as np

DECIMALS = 9
TIE_RTOL = 10.0**-DECIMALS
"""Relative tolerance (of the largest value compared) under which two values count as tied."""


def snap(values: np.ndarray) -> np.ndarray:
    """``values`` divided by their largest magnitude and rounded to ``TIE_RTOL`` steps.

    For comparisons and ranks only (the result is dimensionless): values within ``TIE_RTOL`` of
    the largest magnitude of each other become equal, and equal inputs stay equal.

    Parameters
    ----------
    values
        Any finite array.

    Returns
    -------
    numpy.ndarray
        float64 array of the same shape, in [−1, 1].
    """
    x = np.asarray(values, dtype=np.float64)
    scale = float(np.max(np.abs(x))) if x.size else 0.0
    if scale == 0.0:
        return x.copy()
    return np.round(x / scale, DECIMALS)
