"""The shape model of DAG jobs: how many levels, tasks per level, parents per task.

``schedlab fit`` writes it as ``dag_shape.json`` when the trace has DAGs
(:func:`schedlab.evaluation.fitting.dags.fit_dag_shape`); the ``dag`` generator draws jobs from
it (``shape="fitted"``). A job is drawn level by level:

* its **depth** (levels) from the ``depth`` distribution;
* the **width** of each level (its tasks), independently, from the ``width`` distribution;
* for each task below the first level, its **parents** count from the ``parents`` distribution,
  at most the previous level's width; its parents are a run of that many consecutive tasks of
  the previous level, cyclically from a uniformly random one (so every task of level ``l`` has
  a parent on level ``l − 1``: its level is exactly ``l``, and the job's depth is as drawn).

Each distribution is a probability mass function over 1, 2, ...: ``pmf[i]`` is the probability
of the value ``i + 1``. Document::

    {"kind": "schedlab-dag-shape", "schema_version": 1, "depth": [...], "width": [...],
     "parents": [...], "source": {...}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import WorkloadModelError
from schedlab.loaders.workload.document import JsonDocument
from schedlab.validate import Table

KIND = "schedlab-dag-shape"
SCHEMA_VERSION = 1
PMFS = ("depth", "width", "parents")


@dataclass(frozen=True, slots=True)
class Levels:
    """DAG jobs drawn level by level (:meth:`DagShape.sample`)."""

    depth: np.ndarray
    """int64, shape ``(n_jobs,)``: levels of each job."""
    width: np.ndarray
    """int64, shape ``(Σ depth,)``: tasks of each level, jobs one after the other."""
    parents: np.ndarray
    """int64, shape ``(Σ width,)``: parents of each task, before the cap at the previous
    level's width (roots' draws are ignored)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DagShape(JsonDocument):
    """Distributions of a DAG job's depth, level widths and parents per task (module doc)."""

    what: ClassVar[str] = "DAG shape model"

    depth: tuple[float, ...]
    """P(depth = i + 1) (levels per job)."""
    width: tuple[float, ...]
    """P(width = i + 1) (tasks on one level)."""
    parents: tuple[float, ...]
    """P(parents = i + 1) (parents of a task below the first level)."""
    source: Mapping[str, Any] = field(default_factory=dict)
    """Where it was fitted (the JobSet's provenance)."""

    def mean(self, name: str) -> float:
        """Mean of the distribution ``name`` (one of :data:`PMFS`)."""
        pmf = np.asarray(getattr(self, name))
        return float(pmf @ np.arange(1, pmf.size + 1))

    def mean_tasks(self) -> float:
        """Expected tasks per job: E[depth] · E[width] (levels are independent)."""
        return self.mean("depth") * self.mean("width")

    def sample(self, rng: np.random.Generator, n_jobs: int) -> Levels:
        """Draw ``n_jobs`` jobs' depths, level widths and parents counts."""
        depth = _draw(rng, self.depth, n_jobs)
        width = _draw(rng, self.width, int(depth.sum()))
        return Levels(depth, width, _draw(rng, self.parents, int(width.sum())))

    def to_json(self) -> dict[str, Any]:
        """The JSON document (module doc)."""
        pmfs = {k: list(getattr(self, k)) for k in PMFS}
        return {"kind": KIND, "schema_version": SCHEMA_VERSION, **pmfs, "source": dict(self.source)}

    @classmethod
    def from_json(cls, data: Any, *, source: str = "DAG shape") -> DagShape:
        """Validate a document; errors (:class:`WorkloadModelError`) name ``source`` and the key."""
        doc = Table(
            data,
            "",
            source,
            error=WorkloadModelError,
            allowed=("kind", "schema_version", *PMFS, "source"),
        )
        if doc.get("kind", str, None) != KIND:
            doc.fail("kind", f"expected {KIND!r}: is this a schedlab DAG shape model?")
        if (version := doc.get("schema_version", int)) != SCHEMA_VERSION:
            doc.fail("schema_version", f"{version} is not supported (expected {SCHEMA_VERSION})")
        pmfs = {k: tuple(doc.numbers(k)) for k in PMFS}
        for k, pmf in pmfs.items():
            if not pmf or min(pmf) < 0 or abs(sum(pmf) - 1) > 1e-9:
                doc.fail(k, "expected probabilities of 1, 2, ... (>= 0, summing to 1)")
        return cls(**pmfs, source=doc.get("source", dict, {}))


def pmf(values: np.ndarray | Sequence[int]) -> tuple[float, ...]:
    """The empirical distribution of positive integers: ``pmf[i]`` = share of ``i + 1``."""
    counts = np.bincount(np.asarray(values, np.int64) - 1)
    return tuple((counts / counts.sum()).tolist())


def _draw(rng: np.random.Generator, pmf: Sequence[float], n: int) -> np.ndarray:
    return rng.choice(len(pmf), size=n, p=np.asarray(pmf) / np.sum(pmf)).astype(np.int64) + 1
