"""Agents given as plain functions of a schedlab environment's observation and mask, as a user
would write them for the ``callable`` policy (``callable:tests.policies.example_agent:last_valid``;
see ``tests/test_sb3.py``)."""

from __future__ import annotations

import numpy as np


def last_valid(obs: np.ndarray, mask: np.ndarray) -> int:
    """The last valid action (void when nothing fits), for one observation; checks what it is
    given: the image (float32, ``(T, W)``) and the mask (bool, ``(m·M + 1,)``)."""
    assert obs.dtype == np.float32
    assert obs.ndim == 2
    assert mask.dtype == np.bool_
    assert mask.ndim == 1
    return int(np.flatnonzero(mask)[-1])


def last_valid_batch(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """:func:`last_valid` for a batch: ``(N, T, W)`` and ``(N, m·M + 1)`` -> ``N`` actions."""
    assert obs.shape[0] == mask.shape[0]
    return mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
