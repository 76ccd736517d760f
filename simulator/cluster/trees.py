"""Segment trees over vectors, for the whole-queue replay of :mod:`.greedy`.

A tree over ``n`` leaves is an array of shape ``(2P, d)`` (``P`` a power of two ≥ ``n``; node 1
is the root, node ``i`` has children ``2i`` and ``2i + 1``, leaf ``k`` is node ``P + k``). Each
node holds the component-wise minimum (job trees: the smallest demand below) or maximum (machine
trees: the largest free capacity below) of its children; absent leaves hold ``+inf`` / ``-inf``.
"""

from __future__ import annotations

import numba
import numpy as np

from schedlab.simulator.cluster.placement import EPS


@numba.njit(cache=True)
def pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (at least 1): the leaves of a tree over ``n``."""
    p = 1
    while p < n:
        p *= 2
    return p


@numba.njit(cache=True, inline="always")
def leq(a: np.ndarray, b: np.ndarray) -> bool:
    """``a <= b`` in every component, within ``EPS``."""
    for r in range(a.shape[0]):  # noqa: SIM110 (numba: explicit loop)
        if a[r] > b[r] + EPS:
            return False
    return True


@numba.njit(cache=True)
def tree_set(tree: np.ndarray, leaf: int, value: np.ndarray, take_min: bool) -> None:
    """Set ``leaf`` to ``value`` and update its ancestors (component-wise min or max)."""
    P = tree.shape[0] // 2
    i = P + leaf
    for r in range(tree.shape[1]):  # an explicit loop: a row assignment compiles shape checks
        tree[i, r] = value[r]
    i //= 2
    while i >= 1:
        for r in range(tree.shape[1]):
            a, b = tree[2 * i, r], tree[2 * i + 1, r]
            tree[i, r] = min(a, b) if take_min else max(a, b)
        i //= 2


@numba.njit(cache=True, inline="always")
def next_subtree(i: int) -> int:
    """The node after subtree ``i`` in pre-order (0 when ``i``'s subtree was the last)."""
    while i % 2 == 1:  # a right child: its parent's subtree is done too
        i //= 2
    return i + 1 if i > 0 else 0


@numba.njit(cache=True)
def first_dominating(tree: np.ndarray, vector: np.ndarray) -> int:
    """The lowest leaf of a max-tree whose value is ≥ ``vector`` in every component, or -1
    (first fit of a demand ``vector`` over machines' free capacities)."""
    P = tree.shape[0] // 2
    i = 1
    while i > 0:
        if not leq(vector, tree[i]):
            i = next_subtree(i)
        elif i >= P:
            return int(i - P)
        else:
            i = 2 * i
    return -1
