"""Settings of Liu et al.'s heterogeneous, elastic multi-cluster (ICPP'20, §4.2, §5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.loaders.generators.liu_multicluster import LIU_CAPACITIES

LIU_HETERO = (70, 60, 100, 80, 90)
"""Heterogeneity factors of Liu's five clusters (§5)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MultiClusterConfig:
    """The clusters, their elasticity controller, and what the global scheduler sees.

    Defaults are Liu's §5 setting; the cluster index is 0-based (Liu's 3rd and 5th clusters,
    the elastic ones, are 2 and 4).
    """

    capacities: tuple[int, ...] = LIU_CAPACITIES
    """Normal executor capacity per cluster."""
    hetero: tuple[int, ...] = LIU_HETERO
    """Heterogeneity factor per cluster (larger = faster executors)."""
    elastic: tuple[int, ...] = (2, 4)
    """Clusters with an elasticity controller (0-based)."""
    elastic_step: int = 100
    """Executors added (or returned) per controller action."""
    elastic_limit: int = 200
    """Most executors an elastic cluster may add in total."""
    elastic_threshold: float = 0.95
    """Occupation ratio (used / current capacity) that counts as high."""
    elastic_window: int = 100
    """Steps looked back by the controller; also its pause after each action (see
    :mod:`schedlab.simulator.multicluster.kernels`)."""
    zeta: int = 10
    """ζ of the heterogeneity range ``[h − sen·ζ, h + sen·ζ]`` (§4.2)."""
    slots: int = 10
    """M: buffered jobs the global scheduler may pick from (in arrival order)."""
    history: int = 105
    """Steps of occupation history a view may show (Liu's 105)."""
    seed: int = 0
    """Seed of the streaming executions' draws from their request distributions
    (``default_rng([seed, jobset])``): every policy sees the same draws."""

    @property
    def n_clusters(self) -> int:
        """C."""
        return len(self.capacities)

    def max_capacities(self) -> np.ndarray:
        """Normal capacity plus the elastic limit where elastic, int64, shape ``(C,)``."""
        caps = np.asarray(self.capacities, dtype=np.int64)
        caps[list(self.elastic)] += self.elastic_limit
        return caps

    def elastic_mask(self) -> np.ndarray:
        """bool, shape ``(C,)``: which clusters are elastic."""
        mask = np.zeros(self.n_clusters, dtype=np.bool_)
        mask[list(self.elastic)] = True
        return mask

    def __post_init__(self) -> None:
        c = self.n_clusters
        problems = []
        if c < 1 or len(self.hetero) != c:
            problems.append(f"one heterogeneity factor per cluster ({c}), got {self.hetero}")
        if any(x < 1 for x in (*self.capacities, *self.hetero)):
            problems.append("capacities and heterogeneity factors must be >= 1")
        if any(not 0 <= i < c for i in self.elastic) or len(set(self.elastic)) != len(self.elastic):
            problems.append(f"elastic clusters must be distinct indices in 0..{c - 1}")
        if self.elastic_step < 1 or self.elastic_limit < 0 or self.elastic_window < 1:
            problems.append("elastic_step and elastic_window must be >= 1, elastic_limit >= 0")
        if not 0 < self.elastic_threshold <= 1:
            problems.append(f"elastic_threshold must be in (0, 1], got {self.elastic_threshold}")
        if self.slots < 1 or self.history < 1 or self.zeta < 0 or self.seed < 0:
            problems.append("slots and history must be >= 1, zeta and seed >= 0")
        if problems:
            msg = "MultiClusterConfig: " + "; ".join(problems)
            raise ValueError(msg)
