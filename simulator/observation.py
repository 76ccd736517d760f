"""The DeepRM image view (seed 000 §3.2, Figure 2; design.md §8), dense and as sparse terms.

Layout of one observation: an image of ``T`` rows (time offsets ``0 .. T-1`` from now) and
``W`` columns, for the reference geometry ``20 × 224`` (M = 10, two resources of 10 units):

======================  ==========================================================================
columns                 content (cells are 0 or 1 unless stated)
======================  ==========================================================================
per resource ``r``:     ``cap_r`` columns of cluster occupancy: row ``k`` has ones in the first
                        ``used_r(now + k)`` columns (units, rounded up), then ``M`` job-slot blocks
                        of ``cap_r`` columns each: ones in rows ``< min(duration, T)`` and columns
                        ``< demand_r`` of the job in that slot (all zero for an empty slot)
backlog                 ``ceil(backlog_view / T)`` columns; the first ``min(backlog, view)`` cells
                        in row-major order are ones
extra                   one column, every row ``min(steps since the last arrival, 10) / 10``
======================  ==========================================================================

The whole image is a sum of "prefix rectangles": each occupancy row, each (slot, resource) block,
the backlog and the extra column is one rectangle chosen from a fixed **dictionary** (the sparse
binary matrix ``A`` of shape ``(n_entries, T·W)``). An observation is therefore stored as
``K = d·T + d·M + 2`` entry indices (:class:`SparseObs`), ~60 integers instead of 4480 cells:
``image = Σ_k weight_k · A[term_k]``. A network whose first layer is linear in the image (the
MLP) evaluates it as ``Σ_k weight_k · (A Wᵀ)[term_k]``, exactly the same function at a fraction
of the cost; any other network renders the dense image (:meth:`SparseObs.dense`).

Where we differ from the reference code: occupancy is drawn as ones in the first ``used``
columns, not in per-job random colours (colours identify jobs, not state), and demands and
occupancy are in whole units of ``capacity / cap_units`` (exact for DeepRM's integer slots).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numba
import numpy as np

from schedlab.simulator.config import ClusterConfig

MAX_SINCE = 10
"""Steps since the last arrival are clipped here and scaled to ``[0, 1]`` (reference: 10)."""
_TOL = 1e-6


@dataclass(frozen=True, kw_only=True, slots=True)
class ObsGeometry:
    """Shape of the DeepRM image for one cluster geometry."""

    cap_units: tuple[int, ...]
    """Image columns per resource (its capacity in units), e.g. ``(10, 10)``."""
    slots: int = 10
    """M: visible job slots."""
    horizon: int = 20
    """T: image rows (time offsets)."""
    backlog_view: int = 60
    """Backlog jobs shown (more are counted by the engine, not drawn)."""

    @classmethod
    def for_cluster(cls, capacity: np.ndarray, config: ClusterConfig) -> ObsGeometry:
        """Geometry for ``capacity`` (shape ``(d,)``): integral capacities give one column per
        unit (DeepRM: 10); others are drawn in 10 columns each."""
        cap = np.asarray(capacity, dtype=np.float64)
        units = tuple(round(c) if abs(c - round(c)) < _TOL and 1 <= c <= 100 else 10 for c in cap)
        return cls(
            cap_units=units,
            slots=config.slots,
            horizon=config.horizon,
            backlog_view=config.backlog_view,
        )

    @property
    def n_resources(self) -> int:
        """d."""
        return len(self.cap_units)

    @property
    def backlog_width(self) -> int:
        """Backlog columns: ``ceil(backlog_view / T)``."""
        return math.ceil(self.backlog_view / self.horizon)

    @property
    def width(self) -> int:
        """W: image columns."""
        return sum(c * (1 + self.slots) for c in self.cap_units) + self.backlog_width + 1

    @property
    def shape(self) -> tuple[int, int]:
        """``(T, W)``."""
        return (self.horizon, self.width)

    @property
    def n_cells(self) -> int:
        """``T · W``: inputs of a flattening network."""
        return self.horizon * self.width

    @property
    def n_terms(self) -> int:
        """K: terms of a sparse observation, ``d·T + d·M + 2``."""
        d = self.n_resources
        return d * self.horizon + d * self.slots + 2

    @property
    def n_actions(self) -> int:
        """``M + 1``: the void action 0, then slot ``i`` as action ``i + 1``."""
        return self.slots + 1

    def to_json(self) -> dict[str, object]:
        """JSON-native fields (checkpoints record the geometry they were trained on)."""
        return {
            "cap_units": list(self.cap_units),
            "slots": self.slots,
            "horizon": self.horizon,
            "backlog_view": self.backlog_view,
        }

    @property
    def bases(self) -> np.ndarray:
        """int64, shape ``(2·d + 2,)``: first entry of each block of the dictionary
        (occupancy per resource, slots per resource, backlog, extra)."""
        return _build_dictionary(self)[0]

    def dictionary(self) -> tuple[np.ndarray, np.ndarray]:
        """The dictionary ``A`` in CSR form: ``(indptr (n_entries + 1,), cells (nnz,))``, int64;
        entry ``e`` covers the flat cells ``cells[indptr[e]:indptr[e + 1]]`` (row-major)."""
        return _build_dictionary(self)[1], _build_dictionary(self)[2]

    @property
    def n_entries(self) -> int:
        """Rows of the dictionary (entry 0 is empty)."""
        return int(_build_dictionary(self)[1].shape[0] - 1)


@lru_cache(maxsize=8)
def _build_dictionary(g: ObsGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries in order: empty; occupancy (r, row k, units u ≥ 1); slot blocks (r, slot s,
    rows h ≥ 1, columns c ≥ 1); backlog (n ≥ 1 cells); extra column."""
    T, W, M = g.horizon, g.width, g.slots
    entries: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    bases = []
    col = 0
    slot_cols = []
    for cap in g.cap_units:
        bases.append(len(entries))
        for k in range(T):
            entries += [k * W + col + np.arange(u) for u in range(1, cap + 1)]
        slot_cols.append(col + cap)
        col += cap * (1 + M)
    for r, cap in enumerate(g.cap_units):
        bases.append(len(entries))
        for s in range(M):
            c0 = slot_cols[r] + s * cap
            for h in range(1, T + 1):
                rows = np.arange(h)[:, None] * W
                entries += [(rows + c0 + np.arange(c)[None, :]).ravel() for c in range(1, cap + 1)]
    bases.append(len(entries))
    bw = g.backlog_width
    flat = np.array([(i // bw) * W + col + i % bw for i in range(T * bw)], dtype=np.int64)
    entries += [flat[:n] for n in range(1, min(g.backlog_view, T * bw) + 1)]
    bases.append(len(entries))
    entries.append(np.arange(T) * W + col + bw)
    indptr = np.zeros(len(entries) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([e.size for e in entries])
    cells = np.concatenate(entries).astype(np.int64)
    return np.array(bases, dtype=np.int64), indptr, cells


@dataclass(frozen=True, slots=True)
class SparseObs:
    """A batch of observations as dictionary terms: ``image = Σ_k weights[:, k] · A[terms[:, k]]``.

    ``mask`` is the action mask of the same states (bool, shape ``(N, M + 1)``; the void action 0
    is always valid; slot ``i`` is valid when it holds a job that fits within the horizon).
    """

    terms: np.ndarray
    """int32, shape ``(N, K)``: dictionary entries (0 = nothing)."""
    weights: np.ndarray
    """float32, shape ``(N, K)``: 1 except the extra column's value."""
    mask: np.ndarray
    """bool, shape ``(N, M + 1)``."""
    geometry: ObsGeometry

    def __len__(self) -> int:
        return int(self.terms.shape[0])

    def take(self, rows: np.ndarray | slice) -> SparseObs:
        """The observations ``rows``."""
        return SparseObs(self.terms[rows], self.weights[rows], self.mask[rows], self.geometry)

    def dense(self) -> np.ndarray:
        """The images, float32, shape ``(N, T, W)``."""
        out = np.zeros((len(self), self.geometry.n_cells), dtype=np.float32)
        indptr, cells = self.geometry.dictionary()
        _render(self.terms, self.weights, indptr, cells, out)
        return out.reshape(len(self), *self.geometry.shape)


@numba.njit(cache=True)
def _render(
    terms: np.ndarray, weights: np.ndarray, indptr: np.ndarray, cells: np.ndarray, out: np.ndarray
) -> None:
    for i in range(terms.shape[0]):
        for k in range(terms.shape[1]):
            e = terms[i, k]
            for p in range(indptr[e], indptr[e + 1]):
                out[i, cells[p]] += weights[i, k]


@numba.njit(cache=True, inline="always")
def units(x: float, unit: float, cap: int) -> int:
    """``x`` in whole units of ``unit``, rounded up, clipped to ``[0, cap]``."""
    u = math.ceil(x / unit - _TOL)
    return min(max(u, 0), cap)


@numba.njit(cache=True)
def encode(
    envs: np.ndarray,
    free: np.ndarray,
    capacity: np.ndarray,
    cap_units: np.ndarray,
    slot: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    backlog: np.ndarray,
    since: np.ndarray,
    bases: np.ndarray,
    backlog_cells: int,
    terms: np.ndarray,
    weights: np.ndarray,
) -> None:
    """Write the sparse observation of each env in ``envs`` (rows of ``terms``/``weights``).

    Parameters
    ----------
    envs : int64, shape ``(n,)``
        Engine rows to observe.
    free : float64, shape ``(B, H, d)``
        Free capacity per env and future step (``H >= T``).
    capacity : float64, shape ``(d,)``; cap_units : int64, shape ``(d,)``
    slot : int64, shape ``(B, M)``
        Job index in each slot, -1 if empty.
    duration : int64, shape ``(n_jobs,)``; demand : float64, shape ``(n_jobs, d)``
    backlog, since : int64, shape ``(B,)``
        Backlog length and steps since the last arrival.
    bases : int64, shape ``(2·d + 2,)``
        :attr:`ObsGeometry.bases`.
    backlog_cells : int
        Backlog cells drawn at most.
    terms : int32, shape ``(n, K)``; weights : float32, shape ``(n, K)``
        Outputs.
    """
    d = capacity.shape[0]
    M = slot.shape[1]
    T = (terms.shape[1] - 2 - d * M) // d
    for i in range(envs.shape[0]):
        b = envs[i]
        p = 0
        for r in range(d):
            cap = cap_units[r]
            unit = capacity[r] / cap
            for k in range(T):
                u = units(capacity[r] - free[b, k, r], unit, cap)
                terms[i, p] = 0 if u == 0 else bases[r] + k * cap + u - 1
                weights[i, p] = 1.0
                p += 1
        for r in range(d):
            cap = cap_units[r]
            unit = capacity[r] / cap
            for s in range(M):
                j = slot[b, s]
                e = 0
                c = 0 if j < 0 else units(demand[j, r], unit, cap)
                if c > 0:
                    h = min(duration[j], T)
                    e = bases[d + r] + (s * T + h - 1) * cap + c - 1
                terms[i, p] = e
                weights[i, p] = 1.0
                p += 1
        n = min(backlog[b], backlog_cells)
        terms[i, p] = 0 if n == 0 else bases[2 * d] + n - 1
        weights[i, p] = 1.0
        terms[i, p + 1] = bases[2 * d + 1]
        weights[i, p + 1] = min(since[b], MAX_SINCE) / MAX_SINCE
