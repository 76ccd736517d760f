"""A fitted workload model and its versioned ``model.json`` document.

The model is fitted by :func:`schedlab.evaluation.fitting.workload.fit` and sampled by the
``fitted`` generator (:mod:`schedlab.loaders.generators.fitted`). It lives in ``loaders/`` so that
the generator can use it (data flows ``loaders -> evaluation``, never back). Units: every time is
in **time steps** of the fitted JobSet (``time_step_seconds`` says how long a step is, None for a
synthetic workload defined in steps); demands are in the units of ``resources``/``capacity``.
Its components (durations, arrivals, demands) and their sampling are
:mod:`schedlab.loaders.workload.components`'s.

The document (``schema_version`` 1)::

    {"kind": "workload_model", "schema_version": 1,
     "resources": ["cpu", "mem"], "capacity": [96, 100], "units": [...],
     "time_step_seconds": 1.0, "window": 3600,
     "durations": {"family": "lognormal", "params": {"mu": 3.1, "sigma": 2.0}, "max_steps": 6338},
     "arrivals": {"kind": "nhpp", "rate_per_step": 0.09, "period_steps": 86400,
                  "profile": [24 multipliers, mean 1], "batch_sizes": [...], "batch_probs": [...]},
     "demands": {"class_edges": [3, 40, 300], "classes": [{"values": [[0.5, 0.2], ...],
                 "probs": [...], "coverage": 1.0}, ...]},
     "source": {...}, "diagnostics": {...}}

:meth:`WorkloadModel.load` validates every key and raises
:class:`~schedlab.errors.WorkloadModelError` naming the file and the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import WorkloadModelError
from schedlab.loaders.workload import families
from schedlab.loaders.workload.components import ArrivalModel, DemandModel, DurationModel
from schedlab.loaders.workload.document import JsonDocument, plain
from schedlab.validate import Table

SCHEMA_VERSION = 1
KIND = "workload_model"


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class WorkloadModel(JsonDocument):
    """Durations, arrivals and demands of a workload, with its cluster and provenance
    (``model.json``)."""

    what: ClassVar[str] = "workload model"

    resources: tuple[str, ...]
    capacity: tuple[float, ...]
    units: tuple[str, ...]
    time_step_seconds: float | None
    """Seconds per step of every time in the model (None: synthetic steps)."""
    window: int
    """Default arrival window of a generated jobset, in steps."""
    durations: DurationModel
    arrivals: ArrivalModel
    demands: DemandModel
    source: Mapping[str, Any] = field(default_factory=dict)
    """Provenance of the fitted JobSet (loader, path, sha256, options, jobs)."""
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    """Fit summaries (candidate ranking, arrival models, held-out log-likelihoods)."""

    def load_per_rate(self) -> float:
        """Offered load of one job per step on average: ``max_r E[duration · demand_r] / cap_r``.

        ``E[duration · demand_r] = Σ_c E[duration; class c] · mean demand_r of class c`` over the
        generated (quantised, truncated) durations.
        """
        values, probs = self.durations.pmf()
        cls = self.demands.classes(values)
        n_cls = len(self.demands.values)
        work_by_class = np.bincount(cls, weights=values * probs, minlength=n_cls)
        work = work_by_class @ self.demands.class_means()
        return float(np.max(work / np.asarray(self.capacity)))

    def to_json(self) -> dict[str, Any]:
        """The ``model.json`` document."""
        a, dm = self.arrivals, self.demands
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "resources": list(self.resources),
            "capacity": list(self.capacity),
            "units": list(self.units),
            "time_step_seconds": self.time_step_seconds,
            "window": self.window,
            "durations": {
                "family": self.durations.family,
                "params": {k: plain(v) for k, v in self.durations.params.items()},
                "max_steps": self.durations.max_steps,
            },
            "arrivals": {
                "kind": a.kind,
                "rate_per_step": a.rate_per_step,
                "period_steps": a.period_steps,
                "profile": list(a.profile),
                "batch_sizes": list(a.batch_sizes),
                "batch_probs": list(a.batch_probs),
                "modulation": list(a.modulation),
                "modulation_window": a.modulation_window,
            },
            "demands": {
                "class_edges": list(dm.class_edges),
                "classes": [
                    {"values": v.tolist(), "probs": p.tolist(), "coverage": c}
                    for v, p, c in zip(dm.values, dm.probs, _coverage(dm), strict=True)
                ],
            },
            "source": dict(self.source),
            "diagnostics": dict(self.diagnostics),
        }

    @classmethod
    def from_json(cls, data: Any, *, source: str = "model") -> WorkloadModel:
        """Validate a ``model.json`` document; errors name ``source`` and the key."""
        doc = Table(data, "", source, error=WorkloadModelError)
        if doc.get("kind", str, None) != KIND:
            doc.fail("kind", f"expected {KIND!r}: is this a schedlab workload model?")
        version = doc.get("schema_version", int)
        if version != SCHEMA_VERSION:
            doc.fail("schema_version", f"{version} is not supported (expected {SCHEMA_VERSION})")
        resources = tuple(doc.strings("resources"))
        capacity = tuple(doc.numbers("capacity"))
        if len(capacity) != len(resources) or not resources:
            doc.fail("capacity", f"one capacity per resource {list(resources)}, got {capacity}")
        if any(c <= 0 for c in capacity):
            doc.fail("capacity", f"every capacity must be > 0, got {capacity}")
        units = tuple(doc.strings("units", default=[]))
        if units and len(units) != len(resources):
            doc.fail("units", f"one unit per resource {list(resources)}, got {list(units)}")
        step = doc.get("time_step_seconds", float, None)
        if step is not None and not step > 0:
            doc.fail("time_step_seconds", f"must be > 0 seconds, got {step}")
        window = doc.get("window", int)
        if window < 1:
            doc.fail("window", f"must be >= 1 step, got {window}")
        model = cls(
            resources=resources,
            capacity=capacity,
            units=units,
            time_step_seconds=step,
            window=window,
            durations=_durations(doc.sub("durations")),
            arrivals=_arrivals(doc.sub("arrivals")),
            demands=_demands(doc.sub("demands"), len(resources), capacity),
            source=doc.get("source", dict, {}),
            diagnostics=doc.get("diagnostics", dict, {}),
        )
        try:  # extreme but finite parameters: an error here names the fields, not numpy's words
            work = model.load_per_rate()
        except (ArithmeticError, ValueError, MemoryError) as exc:
            work, problem = math.nan, f"{type(exc).__name__}: {exc}"[:200]
        else:
            problem = f"load per job per step {work!r}"
        if not (math.isfinite(work) and work > 0):
            msg = f"with these demands and capacity give no usable load ({problem})"
            doc.fail("durations", msg)
        return model


def _coverage(dm: DemandModel) -> tuple[float, ...]:
    return dm.coverage if len(dm.coverage) == len(dm.values) else (1.0,) * len(dm.values)


def _durations(doc: Table) -> DurationModel:
    family = doc.get("family", str)
    if family not in families.FAMILIES:
        doc.fail("family", f"unknown family {family!r}; known: {', '.join(families.FAMILIES)}")
    params = doc.get("params", dict)
    problem = families.check_params(family, params)
    if problem is not None:
        doc.fail("params", problem)
    max_steps = doc.get("max_steps", int)
    if max_steps < 1:
        doc.fail("max_steps", f"must be >= 1 step, got {max_steps}")
    return DurationModel(family=family, params=params, max_steps=max_steps)


def _arrivals(doc: Table) -> ArrivalModel:
    kind = doc.get("kind", str)
    if kind not in ("poisson", "nhpp"):
        doc.fail("kind", f"expected 'poisson' or 'nhpp', got {kind!r}")
    rate = doc.get("rate_per_step", float)
    if not rate > 0:
        doc.fail("rate_per_step", f"must be > 0 jobs per step, got {rate}")
    period = doc.get("period_steps", float, None)
    profile = tuple(doc.numbers("profile", default=[]))
    if kind == "nhpp":
        if period is None or not period > 0:
            doc.fail("period_steps", f"an nhpp needs a period > 0 steps, got {period}")
        if not profile or min(profile) < 0 or abs(np.mean(profile) - 1) > 1e-6:
            doc.fail("profile", "an nhpp needs rate multipliers >= 0 with mean 1")
    sizes = tuple(int(s) for s in doc.numbers("batch_sizes", default=[]))
    probs = tuple(doc.numbers("batch_probs", default=[]))
    if len(sizes) != len(probs) or any(s < 1 for s in sizes):
        doc.fail("batch_sizes", "batch_sizes (>= 1) and batch_probs must have the same length")
    if probs and (min(probs) < 0 or abs(sum(probs) - 1) > 1e-6):
        doc.fail("batch_probs", "must be >= 0 and sum to 1")
    modulation = tuple(doc.numbers("modulation", default=[]))
    if modulation and (min(modulation) < 0 or abs(np.mean(modulation) - 1) > 1e-6):
        doc.fail("modulation", "rate multipliers must be >= 0 with mean 1")
    mod_window = doc.get("modulation_window", int, None)
    return ArrivalModel(
        kind=kind,
        rate_per_step=rate,
        period_steps=period,
        profile=profile,
        batch_sizes=sizes,
        batch_probs=probs,
        modulation=modulation,
        modulation_window=mod_window,
    )


def _demands(doc: Table, d: int, capacity: tuple[float, ...]) -> DemandModel:
    edges = tuple(int(e) for e in doc.numbers("class_edges", default=[]))
    if list(edges) != sorted(set(edges)):
        doc.fail("class_edges", f"must be increasing, got {list(edges)}")
    classes = doc.get("classes", list)
    if len(classes) != len(edges) + 1:
        doc.fail("classes", f"expected {len(edges) + 1} classes (one more than class_edges)")
    values, probs, coverage = [], [], []
    for i, raw in enumerate(classes):
        sub = Table(raw, f"{doc.where}.classes[{i}]", doc.source, error=WorkloadModelError)
        try:
            v = np.asarray(sub.get("values", list), dtype=np.float64)
        except ValueError:
            sub.fail("values", "must be a list of demand vectors (numbers)")
        p = np.asarray(sub.numbers("probs"), dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != d or v.shape[0] != p.size or p.size == 0:
            sub.fail("values", f"must be {p.size} demand vectors of {d} numbers")
        if not np.all(np.isfinite(v)) or np.any(v < 0) or np.any(v > np.asarray(capacity)):
            sub.fail("values", f"demands must be finite, >= 0 and <= capacity {list(capacity)}")
        if np.any(p < 0) or abs(p.sum() - 1) > 1e-6:
            sub.fail("probs", "must be >= 0 and sum to 1")
        values.append(v)
        probs.append(p / p.sum())
        coverage.append(sub.get("coverage", float, 1.0))
    return DemandModel(
        class_edges=edges, values=tuple(values), probs=tuple(probs), coverage=tuple(coverage)
    )
