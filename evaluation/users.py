"""How each user fares: per-user waits and bounded slowdowns, the worst-served users, fairness.

A site asks first how a new policy treats its users. The jobs of a trace carry their user id
(SWF field 12, the JobSet's ``user`` column, which results keep); per condition (workload ×
offered load) and policy, :func:`per_user` averages each user's jobs over every jobset of the
condition, and :func:`fairness` summarises the users:

**Jain's fairness index** over the users' mean bounded slowdowns ``x_u`` (Jain, Chiu and Hawe
1984): ``J = (Σ x_u)² / (n Σ x_u²)``, in ``[1/n, 1]``; 1 when every user's jobs are slowed
alike, ``1/n`` when one user bears all the slowdown. It measures how evenly the slowdown is
shared, not how large it is (read it beside the mean). Jobs without a user id belong to no
user and are left out of both. Users with fewer than
:data:`MIN_JOBS` jobs in the condition are left out of the worst-served ranking only (a user's
single unlucky job is not a pattern).
"""

from __future__ import annotations

import polars as pl

from schedlab.evaluation.metrics import BSLD_THRESHOLD, job_values
from schedlab.jobset import JobSet
from schedlab.results import Results

MIN_JOBS = 5
"""Fewest jobs of a user in a condition for the worst-served ranking."""
CONDITION = ("workload", "load")


def users_of(results: Results, jobs: JobSet | None = None) -> pl.DataFrame | None:
    """The results table with each job's ``user`` (from the results, or joined from ``jobs`` on
    ``(jobset, job_id)``); None when neither has user ids (or every id is unknown)."""
    table = results.table
    if "user" not in table.columns:
        if jobs is None or "user" not in jobs.jobs.columns:
            return None
        users = jobs.jobs.select("jobset", "job_id", "user")
        table = table.join(users, on=["jobset", "job_id"], how="left")
    if table.get_column("user").null_count() == table.height:
        return None
    return table


def per_user(
    results: Results, jobs: JobSet | None = None, *, bsld_threshold: float = BSLD_THRESHOLD
) -> pl.DataFrame | None:
    """Per condition, policy and user: jobs, mean wait and mean bounded slowdown.

    Parameters
    ----------
    results
        Per-job results.
    jobs
        Their JobSet, for the user ids when the results lack them (results written before
        they kept them).
    bsld_threshold
        τ of the bounded slowdown, in the results' time unit.

    Returns
    -------
    polars.DataFrame or None
        The condition columns present (``workload``, ``load``), ``policy``, ``user`` (str; null
        for the jobs without a user id, one row), ``n_jobs`` (uint32), ``wait`` and
        ``bounded_slowdown`` (float64 means over the user's jobs, times in the results' unit),
        sorted by condition, policy and user; None when the jobs have no user ids.
    """
    table = users_of(results, jobs)
    if table is None:
        return None
    cond = [c for c in CONDITION if c in table.columns]
    values = table.select(
        *cond,
        "policy",
        pl.col("user").cast(pl.String),
        *job_values(table, bsld_threshold=bsld_threshold),
    )
    out = values.group_by(*cond, "policy", "user").agg(
        pl.len().alias("n_jobs"), pl.col("wait").mean(), pl.col("bounded_slowdown").mean()
    )
    return out.sort(*cond, "policy", "user", nulls_last=True)


def fairness(users: pl.DataFrame) -> pl.DataFrame:
    """Per condition and policy: users, Jain's index over their mean bounded slowdowns, the mean
    and the worst of those means, and the worst-served user.

    Parameters
    ----------
    users
        :func:`per_user`.

    Returns
    -------
    polars.DataFrame
        The condition columns, ``policy``, ``n_users``, ``jain`` (float64 in ``[1/n, 1]``),
        ``mean_user_bsld`` (mean over users of their mean bounded slowdown), ``worst_user`` and
        ``worst_bsld`` (the user with the highest mean among those with :data:`MIN_JOBS` jobs or
        more, and that mean; null when no user has as many), ``mean_user_wait``.
    """
    cond = [c for c in CONDITION if c in users.columns]
    users = users.drop_nulls("user")  # jobs without a user id are no user
    x = pl.col("bounded_slowdown")
    ranked = users.filter(pl.col("n_jobs") >= MIN_JOBS).sort(
        "bounded_slowdown", "user", descending=[True, False]
    )
    worst = ranked.group_by(*cond, "policy", maintain_order=True).agg(
        pl.col("user").first().alias("worst_user"), x.first().alias("worst_bsld")
    )
    summary = users.group_by(*cond, "policy", maintain_order=True).agg(
        pl.len().alias("n_users"),
        (x.sum() ** 2 / (pl.len() * (x**2).sum())).alias("jain"),
        x.mean().alias("mean_user_bsld"),
        pl.col("wait").mean().alias("mean_user_wait"),
    )
    out = summary.join(worst, on=[*cond, "policy"], how="left", nulls_equal=True)
    return out.select(
        *cond,
        "policy",
        "n_users",
        "jain",
        "mean_user_bsld",
        "worst_user",
        "worst_bsld",
        "mean_user_wait",
    )


def worst_served(
    users: pl.DataFrame, reference: str, others: list[str], *, n: int = 10
) -> pl.DataFrame:
    """The ``n`` users with the highest mean bounded slowdown under ``reference`` (among those
    with :data:`MIN_JOBS` jobs or more), with their means under ``others`` too.

    Returns
    -------
    polars.DataFrame
        The condition columns, ``user``, ``n_jobs``, then per policy (``reference`` first)
        ``bsld <policy>`` and ``wait <policy>``; worst first.
    """
    cond = [c for c in CONDITION if c in users.columns]
    users = users.drop_nulls("user")
    ref = users.filter((pl.col("policy") == reference) & (pl.col("n_jobs") >= MIN_JOBS))
    top = ref.sort("bounded_slowdown", "user", descending=[True, False]).head(n)
    out = top.select(*cond, "user", "n_jobs")
    for p in [reference, *others]:
        part = users.filter(pl.col("policy") == p).select(
            *cond,
            "user",
            pl.col("bounded_slowdown").alias(f"bsld {p}"),
            pl.col("wait").alias(f"wait {p}"),
        )
        out = out.join(part, on=[*cond, "user"], how="left", nulls_equal=True)
    return out
