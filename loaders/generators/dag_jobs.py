"""The ``dag`` generator: jobs that are DAGs of tasks, arriving as Poisson events.

Workload
--------
* **Jobs** arrive in each of ``window`` steps in ``Poisson(λ)`` numbers; every task of a job
  arrives with it (a DAG job's tasks are released together; precedence decides when each may
  start).
* **Shapes** (``shape``):

  - ``"chain"``: ``size`` tasks, each waiting for the one before (depth ``size``, width 1);
  - ``"fork_join"``: a fork task, ``size`` tasks waiting for it, and a join task waiting for
    all of them (``size + 2`` tasks, depth 3, width ``size``);
  - ``"fitted"``: drawn level by level from a :class:`~schedlab.loaders.workload.dag_shape.
    DagShape` fitted to a trace by ``schedlab fit`` (``shape_model``, its ``dag_shape.json``):
    depth, tasks per level and parents per task from the trace's distributions.

* **Tasks** have DeepRM's durations and demands (the parameters of
  :class:`~schedlab.loaders.generators.deeprm_workload.DeepRMGenerator`, this generator's base).

The JobSet holds one row per task with ``parents`` (job ids of the tasks it waits for, in its
jobset) and ``dag`` (its job's index in the jobset), as the v2018 loader writes them.

Load
----
λ is the mean number of *jobs* per step, so the offered load is
``λ · E[tasks per job] · E[duration] · E[demand] / capacity`` (tasks are independent of the
shape): ``load_per_rate`` is the base's times ``E[tasks per job]`` (``size``, ``size + 2``, or
``E[depth] · E[width]`` of the fitted model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

import numpy as np
import polars as pl

from schedlab.loaders.generators.base import Sample
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.loaders.traces.alibaba_dag import list_column
from schedlab.loaders.workload.dag_shape import DagShape, Levels
from schedlab.params import Interval


@dataclass(frozen=True, kw_only=True, slots=True)
class DagGenerator(DeepRMGenerator):
    """Generate jobsets of DAG jobs (chains, fork-joins or fitted shapes) at a target load."""

    name: ClassVar[str] = "dag"

    shape: Literal["chain", "fork_join", "fitted"] = "fork_join"
    """Shape of every job (module docstring)."""
    size: Annotated[int, Interval(ge=1)] = 4
    """Tasks of a chain, or parallel tasks of a fork-join (ignored by ``"fitted"``)."""
    shape_model: str | None = None
    """For ``shape="fitted"``: the ``dag_shape.json`` written by ``schedlab fit``."""
    arrivals: Literal["poisson"] = field(default="poisson", init=False)
    """Job arrival counts per step are Poisson(λ) (fixed; recorded in the provenance)."""

    def model(self) -> DagShape | None:
        """The fitted shape model (``shape="fitted"``), else None."""
        if self.shape != "fitted":
            return None
        if self.shape_model is None:
            msg = 'shape="fitted" needs shape_model= (a dag_shape.json written by schedlab fit)'
            raise ValueError(msg)
        return DagShape.load(self.shape_model)

    def tasks_per_job(self) -> float:
        """Expected tasks per job."""
        model = self.model()
        if model is not None:
            return model.mean_tasks()
        return float(self.size if self.shape == "chain" else self.size + 2)

    def load_per_rate(self) -> float:
        """Offered load of one job arrival per step on average: the tasks' load per task
        arrival times the expected tasks per job."""
        return DeepRMGenerator.load_per_rate(self) * self.tasks_per_job()

    def jobs_per_jobset(self, load: float) -> float:
        """Expected rows (tasks) in one jobset at offered ``load``."""
        return self.rate_for_load(load) * self.window * self.tasks_per_job()

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        """Draw job arrivals, each job's shape, then every task's duration and demand."""
        counts = rng.poisson(rate, size=(n_jobsets, self.window))
        job_jobset = np.repeat(np.arange(n_jobsets), counts.sum(axis=1))
        job_arrival = np.repeat(np.tile(np.arange(self.window), n_jobsets), counts.ravel())
        levels = self._levels(rng, job_jobset.size)
        job, n_parents, parent = _tasks(rng, levels)
        duration, demand = self.sample_jobs(rng, job.size)
        jobset = job_jobset[job]
        first_task = np.searchsorted(jobset, jobset)  # tasks are grouped by jobset
        first_job = np.searchsorted(job_jobset, job_jobset)
        parents = list_column(n_parents, parent - first_task[parent]).alias("parents")
        columns = {"parents": parents, "dag": pl.Series("dag", job - first_job[job])}
        return Sample(jobset, job_arrival[job], duration, demand, columns)

    def _levels(self, rng: np.random.Generator, n_jobs: int) -> Levels:
        model = self.model()
        if model is not None:
            return model.sample(rng, n_jobs)
        if self.shape == "chain":
            depth, width = self.size, [1] * self.size
        else:
            depth, width = 3, [1, self.size, 1]
        return Levels(  # every task waits for the whole previous level
            np.full(n_jobs, depth, np.int64),
            np.tile(np.asarray(width, np.int64), n_jobs),
            np.full(n_jobs * sum(width), self.size, np.int64),
        )


def _tasks(rng: np.random.Generator, lv: Levels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tasks of the jobs drawn in ``lv``: each task's job (int64, ``(T,)``), its number of
    parents (int64, ``(T,)``) and its parents' task indices flat (int64, in task order)."""
    n_levels = lv.width.size
    level_job = np.repeat(np.arange(lv.depth.size), lv.depth)
    first_level = np.repeat(np.cumsum(lv.depth) - lv.depth, lv.depth)
    previous = np.where(np.arange(n_levels) == first_level, 0, np.roll(lv.width, 1))
    level_start = np.cumsum(lv.width) - lv.width
    level = np.repeat(np.arange(n_levels), lv.width)
    span = previous[level]  # tasks on the previous level of each task's (0: a root)
    k = np.minimum(lv.parents, span)
    offset = np.floor(rng.random(level.size) * span).astype(np.int64)
    task = np.repeat(np.arange(level.size), k)
    j = np.arange(task.size) - np.repeat(np.cumsum(k) - k, k)
    parent = level_start[level[task] - 1] + (offset[task] + j) % span[task]
    return level_job[level], k, parent
