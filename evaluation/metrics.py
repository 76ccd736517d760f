"""Per-jobset and per-length aggregates of per-job results (design.md §7).

The statistical unit is the **jobset**: every function here reduces the jobs of one
(policy, jobset) to one row, and :mod:`schedlab.evaluation.stats` then summarises those rows
over jobsets. Nothing here pools jobs across jobsets.

Units: results with a trace's real times (:data:`~schedlab.results.SECONDS_RESULT_COLUMNS`)
have their metrics **in seconds**, on the real submit and run times, whatever the time step:
quantizing to steps may change the schedule, never the definition of a metric. Results of
synthetic workloads (defined in steps) have them in **time steps**. :func:`time_unit` says which;
slowdowns and utilisation are dimensionless.
"""

from __future__ import annotations

import polars as pl

from schedlab.evaluation.keys import keys, policy_order, sort_runs
from schedlab.results import SECONDS_RESULT_COLUMNS, Results
from schedlab.simulator.multicluster.score import AJER, TMDL

BSLD_THRESHOLD = 10.0
"""Default threshold τ of the bounded slowdown, in the results' time unit (:func:`time_unit`):
10 s for a trace, 10 steps for a synthetic workload."""

TERCILE_NAMES = ("short", "medium", "long")

METRIC_NAMES = {
    "slowdown": ("average job slowdown", "slowdown"),
    "completion": ("average job turnaround time ({time})", "completion time"),
    "wait": ("average job waiting time ({time})", "waiting time"),
    "bounded_slowdown": ("average bounded job slowdown", "bounded slowdown"),
    "p95_slowdown": ("95th-percentile job slowdown", "p95 slowdown"),
    "max_slowdown": ("largest job slowdown", "max slowdown"),
    "max_wait": ("longest job waiting time ({time})", "max waiting time"),
    "p95_wait": ("95th-percentile job waiting time ({time})", "p95 waiting time"),
    "p99_wait": ("99th-percentile job waiting time ({time})", "p99 waiting time"),
    "utilisation": ("utilisation of the first resource (fraction)", "utilisation"),
    "killed": ("jobs killed at their runtime request (count)", "killed jobs"),
    "jct": ("average DAG job completion time ({time})", "jct"),
    "job_slowdown": ("average DAG job slowdown (completion / critical path)", "job_slowdown"),
    "p95_job_slowdown": ("95th-percentile DAG job slowdown", "p95_job_slowdown"),
    "tmdl": ("total missed deadlines (TMDL, multi-cluster)", "tmdl"),
    "ajer": ("average job execution-time ratio (AJER, %, multi-cluster)", "ajer"),
}
"""Every per-jobset metric of :func:`per_jobset`: its name in reports (:data:`METRICS`) and its
short name for ticks and narrow labels (:data:`SHORT_METRIC`)."""

METRICS = {m: name for m, (name, _) in METRIC_NAMES.items()}
"""Per-jobset metrics of :func:`per_jobset` (all: lower is better but ``utilisation``), named for
reports; ``{time}`` is the results' time unit (:func:`metric_name`).

Turnaround (completion) = wait + run time; slowdown = turnaround / run time (a run time under
1 s counts as 1 s: :data:`~schedlab.results.MIN_RUN_SECONDS`); bounded slowdown =
max(1, turnaround / max(run time, τ)); percentiles are over the jobs of one jobset (linear
interpolation). ``utilisation`` exists where results carry real times, ``killed`` where they
have a ``killed`` column, ``tmdl`` and ``ajer`` for multi-cluster results only
(:mod:`schedlab.evaluation.multicluster`).

Job metrics: a job of a DAG workload is its tasks (results with
:data:`~schedlab.results.DAG_RESULT_COLUMNS`): its completion time (``jct``) is its last task's
finish minus its first task's arrival, its slowdown that over its critical path, on the
schedule's steps (times the time step in seconds for a trace, so that a job with room for every
task has slowdown 1 exactly). Elsewhere every job is its own one-task DAG: ``jct`` is the
turnaround and ``job_slowdown`` the slowdown."""

SHORT_METRIC = {m: short for m, (_, short) in METRIC_NAMES.items()}
"""Short names of the per-jobset metrics, for ticks and narrow axis labels."""

TIME_METRICS = frozenset(m for m, name in METRICS.items() if "{time}" in name)
"""Metrics that are times (seconds or steps, :func:`time_unit`)."""
NOT_RANKED = frozenset({"utilisation"})
"""Metrics reported but never compared: higher is better, and the statistics rank lower first."""
SECONDS = "s"
STEPS = "steps"


def time_unit(table: pl.DataFrame) -> str:
    """``"s"`` when per-job results carry real times (:data:`SECONDS_RESULT_COLUMNS`), else
    ``"steps"``: the unit of :func:`per_jobset`'s times and of the bounded slowdown's τ."""
    return SECONDS if set(SECONDS_RESULT_COLUMNS) <= set(table.columns) else STEPS


def metric_name(metric: str, unit: str = STEPS) -> str:
    """The display name of ``metric`` (:data:`METRICS`; else the name itself) with its time
    ``unit``, e.g. ``"average job waiting time (s)"``."""
    return METRICS.get(metric, metric).format(time=unit)


def _times(table: pl.DataFrame) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Per-job (wait, turnaround, run time) as float64 in :func:`time_unit`."""
    if time_unit(table) == SECONDS:
        return pl.col("wait_s"), pl.col("completion_s"), pl.col("run_s")
    wait, completion, run = (pl.col(c).cast(pl.Float64) for c in ("wait", "completion", "duration"))
    return wait, completion, run


def job_values(table: pl.DataFrame, *, bsld_threshold: float = BSLD_THRESHOLD) -> list[pl.Expr]:
    """Per-job ``wait``, ``completion`` (turnaround), ``slowdown`` and ``bounded_slowdown``
    (float64, times in :func:`time_unit`) of a results table, as expressions: the job-level
    values the per-jobset means of :func:`per_jobset` average."""
    wait, completion, run = _times(table)
    bsld = pl.max_horizontal(
        pl.lit(1.0), completion / pl.max_horizontal(run, pl.lit(float(bsld_threshold)))
    )
    return [
        wait.alias("wait"),
        completion.alias("completion"),
        pl.col("slowdown").cast(pl.Float64),
        bsld.alias("bounded_slowdown"),
    ]


def length_buckets(results: Results) -> dict[str, tuple[float, float]]:
    """Named inclusive run-time ranges, in :func:`time_unit`, for the per-length breakdown.

    Taken from ``results.meta["length_buckets"]`` (steps, e.g. DeepRM's ``short = (1, 3)`` and
    ``long = (10, 15)``), ordered by their lower bound (JSON metadata may not keep the order).
    When the metadata has none (traces), the buckets are the **run-time terciles** of the jobs
    in the results (``run_s`` with real times, else ``duration``), named ``short``, ``medium``
    and ``long``: ``short = [min, q1]``, ``medium = (q1, q2]``, ``long = (q2, max]`` with ``q1``,
    ``q2`` the lower 1/3 and 2/3 quantiles (in steps, ``(q1, q2]`` is ``[q1 + 1, q2]``). A
    bucket left empty by ties is omitted.

    Parameters
    ----------
    results
        Per-job results; ``meta["length_buckets"]`` is read when present.

    Returns
    -------
    dict
        Bucket name -> ``(lowest, highest)`` run time, inclusive (a job on a bound belongs to
        the first bucket holding it), in display order.
    """
    meta = results.meta.get("length_buckets") or {}
    if meta:
        ranges = sorted((int(v[0]), int(v[1]), str(k)) for k, v in meta.items())
        return {k: (lo, hi) for lo, hi, k in ranges}
    column = length_column(results.table)
    if results.table.height == 0:
        return {}
    run = pl.col(column)
    q = [run.quantile(p, interpolation="lower").alias(f"q{p:.3f}") for p in (1 / 3, 2 / 3)]
    lo, q1, q2, hi = results.table.select(run.min().alias("lo"), *q, run.max().alias("hi")).row(0)
    if column == "duration":
        q1, q2 = int(q1), int(q2)
        terciles = ((lo, q1), (q1 + 1, q2), (q2 + 1, hi))
        return {n: r for n, r in zip(TERCILE_NAMES, terciles, strict=True) if r[0] <= r[1]}
    out = {"short": (lo, q1), "medium": (q1, q2), "long": (q2, hi)}
    keep = ["short", *(["medium"] if q1 < q2 else []), *(["long"] if q2 < hi else [])]
    return {k: out[k] for k in keep}


def length_column(table: pl.DataFrame) -> str:
    """The run-time column the length buckets split: ``run_s`` (seconds) with real times, else
    ``duration`` (steps)."""
    return "run_s" if time_unit(table) == SECONDS else "duration"


def per_jobset(results: Results, *, bsld_threshold: float = BSLD_THRESHOLD) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset): aggregates over the jobs of that jobset.

    Times are in :func:`time_unit` (seconds on a trace's real times, else steps). The
    **bounded slowdown** of a job is ``max(1, C / max(T, τ))`` (Feitelson et al. 1997) with
    ``C`` its turnaround (wait + run time), ``T`` its run time and ``τ = bsld_threshold`` in that
    unit: jobs shorter than τ (zero-length ones included) are judged as if they lasted τ, so a
    1 s job waiting 2 s does not dominate. The **utilisation** is the first resource's busy
    time, ``Σ share · T``, over the span from the jobset's first arrival to its last finish.

    Parameters
    ----------
    results
        Per-job results (with a ``workload`` column, that is a key too).
    bsld_threshold
        τ of the bounded slowdown, in the results' time unit (> 0).

    Returns
    -------
    polars.DataFrame
        Columns ``policy`` (str), ``load`` (float64 offered load as a fraction, or null),
        ``seed`` (int64 or null), ``jobset`` (int32), ``n_jobs`` (uint32), then float64:
        ``slowdown`` (mean per-job slowdown), ``completion`` and ``wait`` (mean per-job
        turnaround and waiting time), ``max_slowdown``, ``bounded_slowdown`` (mean),
        ``p95_slowdown``, ``max_wait``, ``p95_wait`` and ``p99_wait`` (over the jobset's jobs,
        linear interpolation); with real times also ``utilisation`` (fraction); with a
        ``killed`` column ``killed`` (count); for multi-cluster results ``tmdl`` and ``ajer``
        (:mod:`schedlab.evaluation.multicluster`). Sorted by policy (in simulation order),
        load, seed and jobset. Jobsets without jobs have no row.
    """
    if not bsld_threshold > 0:
        msg = f"bsld_threshold must be > 0, got {bsld_threshold}"
        raise ValueError(msg)
    table = results.table
    wait, completion, run = _times(table)
    bsld = pl.max_horizontal(
        pl.lit(1.0), completion / pl.max_horizontal(run, pl.lit(float(bsld_threshold)))
    )
    out = table.group_by(keys(table)).agg(
        pl.len().alias("n_jobs"),
        pl.col("slowdown").mean(),
        completion.mean().alias("completion"),
        wait.mean().alias("wait"),
        pl.col("slowdown").max().alias("max_slowdown"),
        bsld.mean().alias("bounded_slowdown"),
        pl.col("slowdown").quantile(0.95, interpolation="linear").alias("p95_slowdown"),
        wait.max().alias("max_wait"),
        wait.quantile(0.95, interpolation="linear").alias("p95_wait"),
        wait.quantile(0.99, interpolation="linear").alias("p99_wait"),
        *_utilisation(table),
        *_killed(table),
        *_liu_metrics(table),
        completion.mean().alias("jct"),
        pl.col("slowdown").mean().alias("job_slowdown"),
        pl.col("slowdown").quantile(0.95, interpolation="linear").alias("p95_job_slowdown"),
    )  # one-task jobs; a DAG workload's jobs replace them
    if "dag" in table.columns and table.get_column("dag").null_count() < table.height:
        dags = Results(table.filter(pl.col("dag").is_not_null()), results.meta)
        jobs = _dag_jobs(dags).rename(lambda c: c if c in keys(table) else f"_{c}")
        out = (
            out.join(jobs, on=keys(table), how="left", nulls_equal=True)
            .with_columns(
                pl.coalesce(f"_{c}", c).alias(c)
                for c in ("jct", "job_slowdown", "p95_job_slowdown")
            )
            .drop("_jct", "_job_slowdown", "_p95_job_slowdown")
        )
    return sort_runs(out, policy_order(results))


def _dag_jobs(results: Results) -> pl.DataFrame:
    """Per jobset, mean DAG job completion time (the results' time unit), mean and 95th
    percentile job slowdown (float64): :func:`~schedlab.evaluation.jobs.per_jobset_jobs`."""
    from schedlab.evaluation.jobs import per_jobset_jobs  # imports schedlab.dag: numba

    scale = 1.0
    if time_unit(results.table) == SECONDS:
        scale = float(results.meta.get("jobset", {}).get("time_step_seconds") or 1.0)
    out = per_jobset_jobs(results)
    return out.select(*keys(out), pl.col("jct") * scale, "job_slowdown", "p95_job_slowdown")


def _utilisation(table: pl.DataFrame) -> list[pl.Expr]:
    """Busy fraction of the first resource (float64) where results carry real times: Σ share ·
    run_s over (last finish − first arrival), in seconds; NaN for a span of 0 s."""
    if time_unit(table) != SECONDS:
        return []
    span = (pl.col("arrival_s") + pl.col("completion_s")).max() - pl.col("arrival_s").min()
    busy = (pl.col("share") * pl.col("run_s")).sum()
    return [(busy / span).alias("utilisation")]


def _killed(table: pl.DataFrame) -> list[pl.Expr]:
    """Jobs killed at their runtime request (float64 count) where results have ``killed``."""
    if "killed" not in table.columns:
        return []
    return [pl.col("killed").sum().cast(pl.Float64).alias("killed")]


def _liu_metrics(table: pl.DataFrame) -> list[pl.Expr]:
    """TMDL and AJER (float64) of multi-cluster results (columns ``missed``, ``exec_ratio``)."""
    if "missed" not in table.columns or "exec_ratio" not in table.columns:
        return []
    return [TMDL, AJER]


def bucket_expr(buckets: dict[str, tuple[float, float]], column: str = "duration") -> pl.Expr:
    """Expression mapping ``column`` (a run time) to its bucket name (an Enum in bucket order),
    or null.

    Buckets are checked in order (a value on a shared bound goes to the first); a run time in
    no bucket maps to null.
    """
    dtype = pl.Enum(list(buckets))
    expr: pl.Expr = pl.lit(None, dtype=dtype)
    for name, (lo, hi) in reversed(buckets.items()):
        expr = pl.when(pl.col(column).is_between(lo, hi)).then(pl.lit(name, dtype)).otherwise(expr)
    return expr.alias("bucket")


def length_units(results: Results) -> Results:
    """What the per-length breakdown counts: for a DAG workload its jobs, each as one row with
    ``duration`` its critical path (steps), ``completion`` its JCT (steps) and ``slowdown`` its
    job slowdown (:func:`~schedlab.evaluation.jobs.per_job`); else the results' own jobs."""
    table = results.table
    if "dag" not in table.columns or table.get_column("dag").null_count() == table.height:
        return results
    from schedlab.evaluation.jobs import per_job

    jobs = per_job(Results(table.filter(pl.col("dag").is_not_null()), results.meta))
    units = jobs.select(
        *keys(jobs),
        pl.col("critical_path").alias("duration"),
        pl.col("jct").alias("completion"),
        pl.col("job_slowdown").alias("slowdown"),
    )
    return Results(units, {**results.meta, "length_buckets": {}})


def per_length(results: Results) -> pl.DataFrame:
    """One row per (policy, load, seed, jobset, length bucket): averages over those jobs (a
    DAG workload's jobs, by critical-path length: :func:`length_units`).

    Buckets come from :func:`length_buckets`. Jobs whose run time lies in no bucket (e.g. a
    duration of 5 steps with DeepRM's buckets 1–3 and 10–15) are **dropped from this breakdown
    only**; they still count in :func:`per_jobset`. A jobset with no job in a bucket has no row
    for that bucket, so per-bucket statistics are over the jobsets that have such jobs.

    Parameters
    ----------
    results
        Per-job results of any number of policies, loads, seeds and jobsets.

    Returns
    -------
    polars.DataFrame
        Columns ``policy``, ``load``, ``seed``, ``jobset``, ``bucket`` (Enum, in bucket order),
        ``n_jobs`` (uint32), ``slowdown`` (float64, mean) and ``completion`` (float64, mean
        turnaround, in :func:`time_unit`). Sorted by policy (simulation order), load, seed,
        jobset and bucket.
    """
    results = length_units(results)
    buckets = length_buckets(results)
    table = results.table
    if not buckets:
        cols = {**table.select(keys(table)).schema, "bucket": pl.Enum([])}
        extra = {"n_jobs": pl.UInt32, "slowdown": pl.Float64, "completion": pl.Float64}
        return pl.DataFrame(schema={**cols, **extra})
    out = (
        table.with_columns(bucket_expr(buckets, length_column(table)))
        .drop_nulls("bucket")
        .group_by(*keys(table), "bucket")
        .agg(
            pl.len().alias("n_jobs"),
            pl.col("slowdown").mean(),
            _times(table)[1].mean().alias("completion"),
        )
    )
    return sort_runs(out, policy_order(results), ("bucket",))
