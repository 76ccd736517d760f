"""Liu et al.'s rule-based global schedulers for the multi-cluster: RAN, RR, MAF (ICPP'20, §5).

Every baseline dispatches, at each moment with buffered jobs, the job with the **least worker
request** (the mean over clusters of its most likely request; ties: the earlier arrival) to a
cluster chosen by its rule:

* **RAN** (``liu-ran``): uniformly at random (``default_rng([seed, jobset])`` per episode);
* **RR** (``liu-rr``): round robin, starting from a random cluster per episode (same stream);
* **MAF** (``liu-maf``): most available first, the largest ``(1 − RO_i) · CAP_i / ER_i`` with
  ``RO_i`` the average occupation ratio of cluster ``i`` over the past ``window`` moments,
  ``CAP_i`` its current capacity (elastic expansion included) and ``ER_i`` the job's most likely
  request there (ties: the lower cluster index).

They read :class:`~schedlab.simulator.multicluster.views.ClusterQueueView` and answer with the
model's actions ``1 + i·M + q`` (never void).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from schedlab.policies.base import ParamsMixin
from schedlab.simulator.multicluster.views import ClusterQueueView, QueueObs


def least_request(obs: QueueObs) -> np.ndarray:
    """Buffer position of the job with the least worker request per env, int64 ``(n,)``."""
    position: np.ndarray = np.argmin(obs.worker, axis=1)
    return position


def actions(obs: QueueObs, position: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """The model's actions ``1 + i·M + q``, int64 ``(n,)``."""
    acts: np.ndarray = (1 + cluster * obs.slots + position).astype(np.int64)
    return acts


class _Baseline(ParamsMixin):
    """Shared protocol members; subclasses define :meth:`clusters`."""

    key: ClassVar[str]
    models: ClassVar[frozenset[str]] = frozenset({"multicluster"})
    window: int = 100
    """Moments averaged into the occupation ratio the view shows."""

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed
        self._streams: dict[int, np.random.Generator] = {}
        self._cycle: dict[int, int] = {}

    @property
    def name(self) -> str:
        """``key``, or a label given by assignment."""
        return getattr(self, "_label", None) or self.key

    @name.setter
    def name(self, value: str) -> None:
        self._label = value

    @property
    def view(self) -> ClusterQueueView:
        """The structured state, occupation averaged over ``window`` moments."""
        return ClusterQueueView(window=self.window)

    def reset(self, *, seed: int | None = None) -> None:
        """Forget every episode's state (streams restart from ``[self.seed, jobset]``)."""
        self._streams, self._cycle = {}, {}

    def _stream(self, jobset: int) -> np.random.Generator:
        if jobset not in self._streams:
            self._streams[jobset] = np.random.default_rng([self.seed, jobset])
        return self._streams[jobset]

    def clusters(self, obs: QueueObs, position: np.ndarray) -> np.ndarray:
        """Cluster per env for the job in ``position``, int64 ``(n,)``."""
        raise NotImplementedError

    def act_batch(self, obs: QueueObs, *, mask: np.ndarray | None = None) -> np.ndarray:
        """Dispatch the least-request job of each env to the rule's cluster (never void)."""
        position = least_request(obs)
        return actions(obs, position, self.clusters(obs, position))


class RAN(_Baseline):
    """Random cluster."""

    key = "liu-ran"

    def clusters(self, obs: QueueObs, position: np.ndarray) -> np.ndarray:
        """Uniform over the clusters, one draw per env from its episode's stream."""
        c = obs.capacity.shape[1]
        return np.array([self._stream(int(j)).integers(c) for j in obs.jobset], dtype=np.int64)


class RR(_Baseline):
    """Round robin from a random first cluster."""

    key = "liu-rr"

    def clusters(self, obs: QueueObs, position: np.ndarray) -> np.ndarray:
        """The next cluster of each env's cycle."""
        c = obs.capacity.shape[1]
        out = np.empty(obs.jobset.size, dtype=np.int64)
        for k, j in enumerate(obs.jobset.tolist()):
            if j not in self._cycle:
                self._cycle[j] = int(self._stream(j).integers(c))
            out[k] = self._cycle[j]
            self._cycle[j] = (out[k] + 1) % c
        return out


class MAF(_Baseline):
    """Most available first."""

    key = "liu-maf"

    def __init__(self, *, window: int = 100) -> None:
        super().__init__()
        self.window = window

    def clusters(self, obs: QueueObs, position: np.ndarray) -> np.ndarray:
        """``argmax (1 − RO_i) · CAP_i / ER_i`` (first on ties)."""
        request = obs.usual[np.arange(position.size), position]
        best: np.ndarray = np.argmax((1 - obs.occupation) * obs.capacity / request, axis=1).astype(
            np.int64
        )
        return best


BASELINES = (RAN, RR, MAF)
