"""The decisive check of a fitted workload: do schedulers behave the same on it as on the trace?

The same heuristics run on (a) jobsets cut from the trace — time windows of the model's window,
drawn at random — and (b) jobsets generated from the fitted model at the same offered load, with
the same window and the same number of jobsets. If the model captured what matters, the policies'
ranking and their slowdown distributions agree.

Matching the load: the trace windows' pooled offered load ``ρ`` is used as is when it is between
:data:`LOAD_RANGE` (a regime where schedulers differ); otherwise (a tiny sample on a big cluster,
or an overloaded one) the trace windows are rescaled in time to the target load (0.9 by default):
arrivals become ``floor(a · f)`` and the window ``round(W · f)`` with ``f = ρ / target``
(durations and demands untouched), and the synthetic jobsets are generated at the rescaled
windows' realised load.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats as sps

from schedlab.evaluation.fitting.timeline import timeline
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.settings import StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.jobset import SECONDS_COLUMNS, JobSet, JobSetMeta, offered_load
from schedlab.loaders.generators.fitted import FittedGenerator, read_model
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate

POLICIES = ("sjf", "packer", "tetris", "fcfs", "random")
LOAD_RANGE = (0.3, 1.5)
DEFAULT_LOAD = 0.9
MAX_ECDF_JOBS = 100_000
"""Per-job slowdowns kept per source for the distribution figure (a random subsample)."""


@dataclass(frozen=True, slots=True, eq=False)
class CheckResult:
    """Heuristics on trace windows and on fitted synthetic jobsets, side by side."""

    load: float
    """Offered load of both sides (the trace windows' realised load after rescaling)."""
    trace_load: float
    """Offered load of the trace windows before rescaling."""
    time_scale: float
    """Factor applied to the trace windows' arrival times (1: none)."""
    window: int
    """Arrival window of every jobset on both sides, in steps."""
    summary: pl.DataFrame
    """``source`` (trace / synthetic), ``policy``, ``mean``, ``ci_low``, ``ci_high`` (mean
    per-jobset slowdown and its 95% bootstrap CI), ``median``, ``avg_rank``, ``position``
    (1 = lowest mean slowdown), ``n_jobsets``, ``jobs_per_jobset``, ``realised_load``."""
    slowdowns: pl.DataFrame
    """``source``, ``policy``, ``slowdown``: per-job slowdowns (subsampled) for the ECDF."""
    kendall_tau: float
    """Kendall's τ between the two orders of the policies by mean slowdown."""
    kendall_tau_ranks: float = float("nan")
    """Kendall's τ between the two orders by average rank over jobsets (robust to the few
    jobsets that dominate heavy-tailed means)."""
    notes: tuple[str, ...] = field(default=())


def trace_windows(jobset: JobSet, window: int, n_jobsets: int, rng: np.random.Generator) -> JobSet:
    """``n_jobsets`` random non-empty windows of ``window`` steps of ``jobset``'s time axis."""
    _, times = timeline(jobset)
    key = times // window
    present = np.unique(key)
    chosen = np.sort(rng.choice(present, size=min(n_jobsets, present.size), replace=False))
    pick = np.isin(key, chosen)
    jobs = jobset.jobs.filter(pl.Series(pick))
    k = key[pick]
    frame = jobs.select(
        pl.Series("jobset", np.searchsorted(chosen, k), dtype=pl.Int32),
        pl.Series("arrival", times[pick] - k * window, dtype=pl.Int64),
        "duration",
        *jobset.resources,
    ).with_columns(pl.int_range(pl.len()).over("jobset").cast(pl.Int64).alias("job_id"))
    meta = JobSetMeta(
        resources=jobset.resources,
        capacity=jobset.meta.capacity,
        units=jobset.meta.units,
        time_step_seconds=jobset.meta.time_step_seconds,
        arrival_window=window,
        provenance={"check": "trace windows", "windows": chosen.tolist()},
    )
    return JobSet.create(frame, meta)


def rescale(js: JobSet, factor: float) -> JobSet:
    """Arrival times (and the window) multiplied by ``factor`` (floor), demands untouched."""
    window = max(1, round((js.meta.arrival_window or 1) * factor))
    jobs = js.jobs.drop(SECONDS_COLUMNS, strict=False).with_columns(
        (pl.col("arrival") * factor).floor().cast(pl.Int64).clip(upper_bound=window - 1)
    )
    prov = {**js.meta.provenance, "time_scale": factor}
    meta = JobSetMeta(**{**_fields(js.meta), "arrival_window": window, "provenance": prov})
    return JobSet.create(jobs, meta)


def _fields(meta: JobSetMeta) -> dict[str, Any]:
    return {k: getattr(meta, k) for k in JobSetMeta.__dataclass_fields__}


def heuristic_check(
    jobset: JobSet,
    model_path: str | os.PathLike[str],
    *,
    policies: Sequence[str] = POLICIES,
    n_jobsets: int = 30,
    load: float | None = None,
    seed: int = 0,
    config: ClusterConfig | None = None,
) -> CheckResult:
    """Run ``policies`` on trace windows and on synthetic jobsets at the matched load.

    Parameters
    ----------
    jobset
        The workload the model was fitted to.
    model_path
        Its ``model.json``.
    n_jobsets
        Jobsets on each side (fewer if the trace has fewer non-empty windows).
    load
        Target offered load; default: the trace windows' own load when within
        :data:`LOAD_RANGE`, else :data:`DEFAULT_LOAD` (see the module docstring).
    seed
        Seed of the window draw, of the synthetic jobsets and of the bootstrap.
    """
    model, _ = read_model(model_path)
    rng = np.random.default_rng(seed)
    trace = trace_windows(jobset, model.window, n_jobsets, rng)
    rho = float(offered_load(trace)["load"].item())
    target = (
        load
        if load is not None
        else (rho if LOAD_RANGE[0] <= rho <= LOAD_RANGE[1] else DEFAULT_LOAD)
    )
    factor = rho / target
    notes = []
    if abs(factor - 1) > 1e-9:
        trace = rescale(trace, factor)
        notes.append(
            f"The trace windows' offered load {rho:.3g} was brought to {target:.3g} "
            f"by scaling their arrival times by {factor:.4g} (window "
            f"{model.window} -> {trace.meta.arrival_window} steps)."
        )
    matched = float(offered_load(trace)["load"].item())
    window = int(trace.meta.arrival_window or model.window)
    gen = FittedGenerator(model=str(model_path), window=window)
    synthetic = gen.generate(matched, n_jobsets=len(trace.jobset_ids), seed=seed)
    config = config or ClusterConfig()
    made = [make_policy(p) for p in policies]
    sides = {"trace": trace, "synthetic": synthetic}
    summaries, slowdowns = [], []
    for source, js in sides.items():
        res = simulate(js, made, config)
        pj = per_jobset(res)
        settings = StatsSettings(seed=seed)
        summary = summarize(pj, metrics=("slowdown",), by=("policy",), settings=settings)
        ranks = pj.with_columns(pl.col("slowdown").rank("average").over("jobset").alias("r"))
        avg_rank = ranks.group_by("policy").agg(pl.col("r").mean().alias("avg_rank"))
        summaries.append(
            summary.join(avg_rank, on="policy").with_columns(
                pl.lit(source).alias("source"),
                pl.col("mean").rank("ordinal").cast(pl.Int64).alias("position"),
                pl.lit(len(js) / max(len(js.jobset_ids), 1)).alias("jobs_per_jobset"),
                pl.lit(float(offered_load(js)["load"].item())).alias("realised_load"),
            )
        )
        table = res.table.select(pl.lit(source).alias("source"), "policy", "slowdown")
        if table.height > MAX_ECDF_JOBS * len(made):
            table = table.sample(MAX_ECDF_JOBS * len(made), seed=seed)
        slowdowns.append(table)
    summary = pl.concat(summaries).select(
        "source",
        "policy",
        "mean",
        "ci_low",
        "ci_high",
        "median",
        "avg_rank",
        "position",
        "n_jobsets",
        "jobs_per_jobset",
        "realised_load",
    )
    order = {s: summary.filter(pl.col("source") == s).sort("policy") for s in sides}
    tau = float(sps.kendalltau(order["trace"]["mean"], order["synthetic"]["mean"]).statistic)
    tau_ranks = sps.kendalltau(order["trace"]["avg_rank"], order["synthetic"]["avg_rank"])
    return CheckResult(
        load=matched,
        trace_load=rho,
        time_scale=factor,
        window=window,
        summary=summary,
        slowdowns=pl.concat(slowdowns),
        kendall_tau=tau,
        kendall_tau_ranks=float(tau_ranks.statistic),
        notes=tuple(notes),
    )
