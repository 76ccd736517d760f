"""Run policies on the multi-cluster model and collect per-job results (design.md §7).

:func:`simulate` gives the standard per-job results table (one row per policy and job, the
cluster in ``machine``), so the paired statistics of :mod:`schedlab.evaluation` apply as for any
model, plus Liu's columns: ``category``, ``deadline`` (the job's per-execution deadline on its
cluster; null for general jobs), ``executions``, ``missed`` (its missed deadlines), ``exec_ratio``
(execution time over standard time, the same for each of its executions) and ``dispatch`` (the
moment it left the global buffer). A job's ``start`` is its first execution's start, ``finish``
its last execution's finish and ``duration`` its total standard run time (executions · SR), so
``slowdown`` is its turnaround over that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import polars as pl

from schedlab.jobset import JobSet
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.model import ModelKind, Policy, rollout
from schedlab.simulator.multicluster.check import check_finished
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.model import MultiClusterModel

LIU_COLUMNS = ("category", "deadline", "executions", "missed", "exec_ratio", "dispatch")
"""Columns the multi-cluster adds to :data:`~schedlab.results.RESULT_COLUMNS`."""


def run_policy(model: MultiClusterModel, policy: Policy) -> MultiClusterModel:
    """Reset ``model`` and drive every env to its end with ``policy`` (``act_batch`` on its
    view, one call per moment with a decision for all envs at such a moment)."""
    if MultiClusterModel.kind not in getattr(policy, "models", ()):
        msg = f"policy {policy.name!r} acts on {sorted(policy.models)} models, not a multicluster"
        raise ValueError(msg)
    model.reset()
    policy.reset(seed=None)
    return rollout(model, policy)


def job_table(jobset: JobSet, model: MultiClusterModel, policy: str) -> pl.DataFrame:
    """The per-job results of a finished ``model`` of ``jobset`` (module docstring)."""
    jobs, log, p = model.jobs, model.executions(), model.placements()
    rows = np.arange(jobs.arrival.size)
    deadline = jobs.deadline[rows, p.target]
    seed = jobset.meta.provenance.get("seed")
    js = jobset.jobs
    return (
        js.select(
            pl.lit(policy).alias("policy"),
            "jobset",
            (pl.col("load") if "load" in js.columns else pl.lit(None, pl.Float64)).alias("load"),
            pl.lit(seed if isinstance(seed, int) else None, pl.Int64).alias("seed"),
            "job_id",
            "arrival",
            "duration",
            "category",
            "executions",
        )
        .with_columns(
            pl.Series("start", p.start, dtype=pl.Int64),
            pl.Series("finish", p.finish, dtype=pl.Int64),
            pl.Series("machine", p.target, dtype=pl.Int64),
            pl.Series("deadline", deadline).set(pl.Series(deadline < 0), None),
            pl.Series("missed", np.bincount(log.job[log.missed], minlength=rows.size)),
            pl.Series("exec_ratio", jobs.exec_time[rows, p.target] / jobs.standard_time),
            pl.Series("dispatch", model.dispatch_times(), dtype=pl.Int64),
        )
        .with_columns(
            completion=pl.col("finish") - pl.col("arrival"),
            wait=pl.col("start") - pl.col("arrival"),
        )
        .with_columns(slowdown=pl.col("completion") / pl.col("duration"))
        .select(*RESULT_COLUMNS, *LIU_COLUMNS)
    )


def simulate(
    jobset: JobSet, policies: Sequence[Any], config: MultiClusterConfig | None = None
) -> Results:
    """The multi-cluster kind's results builder (call :func:`schedlab.simulator.run.simulate`):
    every policy on every jobset (all jobsets as one batch of environments).

    ``meta`` has the usual keys (``jobset``, ``policies``, ``config``: the clusters,
    ``length_buckets``) and ``multicluster``: per policy the utilisation of each cluster
    (executor-steps used over capacity-steps, mean over jobsets) and the elastic clusters'
    changes per jobset.
    """
    config = config or MultiClusterConfig()
    model = MultiClusterModel.from_jobset(jobset, config)
    tables, stats = [], {}
    for policy in policies:
        run_policy(model, policy)
        tables.append(job_table(jobset, model, policy.name))
        changes = [
            len(model.elastic_log(b, c)) for b in range(model.n_envs) for c in config.elastic
        ]
        stats[policy.name] = {
            "utilisation": model.utilisation().mean(axis=0).round(6).tolist(),
            "elastic_changes_per_jobset": sum(changes) / model.n_envs,
        }
    meta = {
        "jobset": jobset.meta.to_json(),
        "policies": {p.name: p.get_params() for p in policies},
        "config": asdict(config),
        "model": MultiClusterModel.kind,
        "length_buckets": {},
        "multicluster": stats,
    }
    return Results(pl.concat(tables), meta)


MULTICLUSTER = ModelKind(
    name=MultiClusterModel.kind,
    config=MultiClusterConfig,
    from_jobset=MultiClusterModel.from_jobset,
    simulate=simulate,
    check_schedule=check_finished,
    check_policy="schedlab.policies.check_multicluster:check_multicluster_policy",
)
"""The multi-cluster model kind (registered as ``multicluster`` in
:data:`schedlab.registry.models`)."""
