"""The DeepRM image view (Mao et al. 2016, §3.2, Figure 2; Chen et al. 2017, Fig. 1; design.md §8),
dense and as sparse terms.

One observation is an image of ``T`` rows (time offsets ``0 .. T-1`` from now) and ``W`` columns,
for the reference geometry ``20 × 224`` (one machine, M = 10, two resources of 10 units). Its
blocks (cells are 0 or 1 unless stated):

* **occupancy** of machine ``i`` and resource ``r``: ``cap_r`` columns; row ``k`` has ones in the
  first ``used_{i,r}(now + k)`` columns (units, rounded up);
* **job slot** ``s``, resource ``r``: ``cap_r`` columns; ones in rows ``< min(length, T)`` and
  columns ``< demand_r`` of the job in that slot (all zero for an empty slot), where ``length``
  is what a scheduler sees: the job's estimate where the JobSet has one (its ``duration`` when
  the run is clairvoyant or the JobSet has none, DeepRM's setting). The occupancy rows follow
  the running jobs' true ends (the engine's profile);
* **backlog**: ``ceil(backlog_view / T)`` columns; the first ``min(backlog, view)`` cells in
  row-major order are ones;
* **extra**: one column, every row ``min(steps since the last arrival, 10) / 10``.

Two layouts order the blocks: ``"deeprm"`` (Mao et al. 2016) groups by resource — for each resource
the occupancy of every machine, then the ``M`` slot blocks; ``"reshaped"`` (Chen et al. 2017,
Fig. 1) puts the machines first, each with its resources side by side, then the slots, each with
its resources side by side. Both end with the backlog and the extra column; with one machine they
hold the same cells in a different column order (width ``Σ_r cap_r · (m + M) + b + 1``, ``b``
the backlog columns).

The whole image is a sum of "prefix rectangles": each occupancy row, each (slot, resource) block,
the backlog and the extra column is one rectangle chosen from a fixed **dictionary** (the sparse
binary matrix ``A`` of shape ``(n_entries, T·W)``; the layout only moves its cells). An
observation is therefore stored as ``K = m·d·T + d·M + 2`` entry indices (:class:`SparseObs`),
~60 integers instead of 4480 cells: ``image = Σ_k weight_k · A[term_k]``. A network whose first
layer is linear in the image (the MLP) evaluates it as ``Σ_k weight_k · (A Wᵀ)[term_k]``,
exactly the same function at a fraction of the cost; any other network renders the dense image
(:meth:`SparseObs.dense`).

Where we differ from the reference code: occupancy is drawn as ones in the first ``used``
columns, not in per-job random colours (colours identify jobs, not state), and demands and
occupancy are in whole units of ``capacity / cap_units`` (exact for DeepRM's integer slots).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numba
import numpy as np

from schedlab.simulator.model import Snapshot

MAX_SINCE = 10
"""Steps since the last arrival are clipped here and scaled to ``[0, 1]`` (reference: 10)."""
_TOL = 1e-6
Layout = Literal["deeprm", "reshaped"]
LAYOUTS: tuple[Layout, ...] = ("deeprm", "reshaped")


@dataclass(frozen=True, kw_only=True, slots=True)
class ObsGeometry:
    """Shape of the image for one cluster geometry."""

    cap_units: tuple[int, ...]
    """Image columns per resource (one machine's capacity in units), e.g. ``(10, 10)``."""
    slots: int = 10
    """M: visible job slots."""
    horizon: int = 20
    """T: image rows (time offsets)."""
    backlog_view: int = 60
    """Backlog jobs shown (more are counted by the engine, not drawn)."""
    machines: int = 1
    """m: machines (one occupancy block per machine and resource)."""
    layout: Layout = "deeprm"
    """Column order of the blocks (module docstring)."""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            msg = f"layout must be one of {LAYOUTS}, got {self.layout!r}"
            raise ValueError(msg)

    @staticmethod
    def units_for(capacity: np.ndarray) -> tuple[int, ...]:
        """Columns per resource for one machine's ``capacity`` (shape ``(d,)``): integral
        capacities give one column per unit (DeepRM: 10); others are drawn in 10 columns each."""
        cap = np.asarray(capacity, dtype=np.float64)
        return tuple(round(c) if abs(c - round(c)) < _TOL and 1 <= c <= 100 else 10 for c in cap)

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
        blocks = self.machines + self.slots
        return sum(c * blocks for c in self.cap_units) + self.backlog_width + 1

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
        """K: terms of a sparse observation, ``m·d·T + d·M + 2``."""
        d = self.n_resources
        return self.machines * d * self.horizon + d * self.slots + 2

    @property
    def n_actions(self) -> int:
        """``m·M + 1``: the void action 0, then slot ``q`` on machine ``i`` as ``1 + i·M + q``."""
        return self.machines * self.slots + 1

    def to_json(self) -> dict[str, object]:
        """JSON-native fields (checkpoints record the geometry they were trained on)."""
        return {
            "cap_units": list(self.cap_units),
            "slots": self.slots,
            "horizon": self.horizon,
            "backlog_view": self.backlog_view,
            "machines": self.machines,
            "layout": self.layout,
        }

    @classmethod
    def from_json(cls, g: Mapping[str, Any]) -> ObsGeometry:
        """Inverse of :meth:`to_json` (older checkpoints: one machine, DeepRM layout)."""
        return cls(
            cap_units=tuple(int(c) for c in g["cap_units"]),
            slots=int(g["slots"]),
            horizon=int(g["horizon"]),
            backlog_view=int(g["backlog_view"]),
            machines=int(g.get("machines", 1)),
            layout=g.get("layout", "deeprm"),
        )

    @property
    def bases(self) -> np.ndarray:
        """int64, shape ``(m·d + d + 2,)``: first entry of each block of the dictionary
        (occupancy per machine and resource, slots per resource, backlog, extra)."""
        return _build_dictionary(self)[0]

    def dictionary(self) -> tuple[np.ndarray, np.ndarray]:
        """The dictionary ``A`` in CSR form: ``(indptr (n_entries + 1,), cells (nnz,))``, int64;
        entry ``e`` covers the flat cells ``cells[indptr[e]:indptr[e + 1]]`` (row-major)."""
        return _build_dictionary(self)[1], _build_dictionary(self)[2]

    @property
    def n_entries(self) -> int:
        """Rows of the dictionary (entry 0 is empty)."""
        return int(_build_dictionary(self)[1].shape[0] - 1)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """First column of each occupancy block ``(m, d)`` and each slot block ``(M, d)``."""
        m, M, caps = self.machines, self.slots, self.cap_units
        occ = np.zeros((m, len(caps)), dtype=np.int64)
        slot = np.zeros((M, len(caps)), dtype=np.int64)
        col = 0
        if self.layout == "deeprm":
            for r, cap in enumerate(caps):
                occ[:, r] = col + cap * np.arange(m)
                slot[:, r] = col + cap * (m + np.arange(M))
                col += cap * (m + M)
        else:
            for i in range(m):
                for r, cap in enumerate(caps):
                    occ[i, r], col = col, col + cap
            for q in range(M):
                for r, cap in enumerate(caps):
                    slot[q, r], col = col, col + cap
        return occ, slot


@lru_cache(maxsize=16)
def _build_dictionary(g: ObsGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries in order: empty; occupancy (machine i, resource r, row k, units u ≥ 1); slot blocks
    (r, slot s, rows h ≥ 1, columns c ≥ 1); backlog (n ≥ 1 cells); extra column."""
    T, W, M = g.horizon, g.width, g.slots
    occ_col, slot_col = g.columns()
    entries: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    bases = []
    for i in range(g.machines):
        for r, cap in enumerate(g.cap_units):
            bases.append(len(entries))
            for k in range(T):
                entries += [k * W + occ_col[i, r] + np.arange(u) for u in range(1, cap + 1)]
    for r, cap in enumerate(g.cap_units):
        bases.append(len(entries))
        for s in range(M):
            for h in range(1, T + 1):
                rows = np.arange(h)[:, None] * W + slot_col[s, r]
                entries += [(rows + np.arange(c)[None, :]).ravel() for c in range(1, cap + 1)]
    col = g.width - g.backlog_width - 1
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
    """Observations as dictionary terms: ``image = Σ_k weights[:, k] · A[terms[:, k]]``."""

    terms: np.ndarray
    """int32, shape ``(N, K)``: dictionary entries (0 = nothing)."""
    weights: np.ndarray
    """float32, shape ``(N, K)``: 1 except the extra column's value."""
    geometry: ObsGeometry

    def __len__(self) -> int:
        return int(self.terms.shape[0])

    def take(self, rows: np.ndarray | slice) -> SparseObs:
        """The observations ``rows``."""
        return SparseObs(self.terms[rows], self.weights[rows], self.geometry)

    @staticmethod
    def concat(parts: list[SparseObs], geometry: ObsGeometry) -> SparseObs:
        """Observations of ``parts`` stacked (all of ``geometry``)."""
        if not parts:
            empty = np.zeros((0, geometry.n_terms))
            return SparseObs(empty.astype(np.int32), empty.astype(np.float32), geometry)
        terms = np.concatenate([p.terms for p in parts])
        return SparseObs(terms, np.concatenate([p.weights for p in parts]), geometry)

    def dense(self) -> np.ndarray:
        """The images, float32, shape ``(N, T, W)``."""
        out = np.zeros((len(self), self.geometry.n_cells), dtype=np.float32)
        indptr, cells = self.geometry.dictionary()
        _render(self.terms, self.weights, indptr, cells, out)
        return out.reshape(len(self), *self.geometry.shape)


@dataclass(frozen=True, kw_only=True, slots=True)
class DeepRMImage:
    """The image view: what DeepRM's (and Chen et al.'s) networks observe.

    Parameters
    ----------
    layout : ``"deeprm"`` or ``"reshaped"``
        Block order (module docstring).
    backlog_view : int, optional
        Backlog jobs drawn (default: the cluster configuration's).
    """

    name: ClassVar[str] = "deeprm-image"
    layout: Layout = "deeprm"
    backlog_view: int | None = None

    def geometry(self, snapshot: Snapshot) -> ObsGeometry:
        """The image geometry of ``snapshot``'s cluster."""
        return ObsGeometry(
            cap_units=ObsGeometry.units_for(snapshot.capacity),
            slots=int(snapshot.view.shape[1]),
            horizon=snapshot.horizon,
            backlog_view=snapshot.backlog_view if self.backlog_view is None else self.backlog_view,
            machines=snapshot.machines,
            layout=self.layout,
        )

    def observe(self, snapshot: Snapshot) -> SparseObs:
        """The sparse images of ``snapshot.envs``."""
        g = self.geometry(snapshot)
        n = snapshot.envs.size
        terms = np.empty((n, g.n_terms), dtype=np.int32)
        weights = np.empty((n, g.n_terms), dtype=np.float32)
        encode(
            snapshot.envs,
            snapshot.free,
            snapshot.capacity,
            np.array(g.cap_units, np.int64),
            snapshot.view,
            snapshot.seen,
            snapshot.demand,
            snapshot.backlog,
            snapshot.since,
            g.bases,
            min(g.backlog_view, g.horizon * g.backlog_width),
            g.horizon,
            terms,
            weights,
        )
        return SparseObs(terms, weights, g)


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
    T: int,
    terms: np.ndarray,
    weights: np.ndarray,
) -> None:
    """Write the sparse observation of each env in ``envs`` (rows of ``terms``/``weights``).

    Parameters
    ----------
    envs : int64, shape ``(n,)``
        Engine rows to observe.
    free : float64, shape ``(B, H, m, d)``
        Free capacity per env, future step and machine (``H >= T``).
    capacity : float64, shape ``(d,)``; cap_units : int64, shape ``(d,)``
        One machine's capacity and its image columns.
    slot : int64, shape ``(B, M)``
        Job index in each slot, -1 if empty.
    duration : int64, shape ``(n_jobs,)``; demand : float64, shape ``(n_jobs, d)``
        The lengths the scheduler sees (estimates, :attr:`Snapshot.seen`) and the demands.
    backlog, since : int64, shape ``(B,)``
        Backlog length and steps since the last arrival.
    bases : int64, shape ``(m·d + d + 2,)``
        :attr:`ObsGeometry.bases`.
    backlog_cells : int
        Backlog cells drawn at most.
    T : int
        Image rows.
    terms : int32, shape ``(n, K)``; weights : float32, shape ``(n, K)``
        Outputs.
    """
    m, d = free.shape[2], free.shape[3]
    M = slot.shape[1]
    for x in range(envs.shape[0]):
        b = envs[x]
        p = 0
        for i in range(m):
            for r in range(d):
                cap = cap_units[r]
                unit = capacity[r] / cap
                base = bases[i * d + r]
                for k in range(T):
                    u = units(capacity[r] - free[b, k, i, r], unit, cap)
                    terms[x, p] = 0 if u == 0 else base + k * cap + u - 1
                    weights[x, p] = 1.0
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
                    e = bases[m * d + r] + (s * T + h - 1) * cap + c - 1
                terms[x, p] = e
                weights[x, p] = 1.0
                p += 1
        n = min(backlog[b], backlog_cells)
        terms[x, p] = 0 if n == 0 else bases[m * d + d] + n - 1
        weights[x, p] = 1.0
        terms[x, p + 1] = bases[m * d + d + 1]
        weights[x, p + 1] = min(since[b], MAX_SINCE) / MAX_SINCE
