"""Liu et al.'s metrics of the multi-cluster, per episode, and their comparison (ICPP'20, §5).

An **episode** is one jobset run by one policy (the unit of replication, as every statistic
here). From the per-job results of :func:`schedlab.simulator.multicluster.run.simulate`:

* **TMDL**: total missed deadlines of all executions of all jobs (lower is better);
* **AJER**: ``100 · mean_j (mean_k AR_jk / SR_j)``, the average job execution-time ratio, a job's
  executions' time on its cluster over its standard time (lower is better);
* **S_log** ``= sign(S) · log10(max(|S|, 1))`` with ``S = −TMDL + 50 · (100 − AJER)`` (higher
  is better);
* **F/S/N** of a policy against a reference over paired episodes: better on both TMDL and AJER
  (fully dominant), on exactly one (semi), on neither (non-dominant); "better" is strictly lower,
  so a tie is not better.

:func:`summary` gives per condition (workload × load) and policy the mean of each metric with a
percentile-bootstrap CI over episodes (:func:`schedlab.evaluation.stats.summarize`), the F/S/N
counts against the reference, and the paper's numbers where a table of the paper has them
(:func:`paper_table`). TMDL and AJER are also per-jobset metrics of
:func:`schedlab.evaluation.metrics.per_jobset` (``tmdl``, ``ajer``), so every paired test of the
general report applies to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources

import polars as pl

from schedlab.evaluation.keys import keys
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.settings import DEFAULT_STATS, StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.results import Results
from schedlab.simulator.multicluster.score import WEIGHT, s_log

__all__ = [  # WEIGHT and s_log are defined with the model (shared with training)
    "LIU_METRICS",
    "PAPER_BY_WORKLOAD",
    "PAPER_CSV",
    "WEIGHT",
    "dominance",
    "paper_rows",
    "paper_table",
    "per_episode",
    "s_log",
    "summary",
]

LIU_METRICS = ("tmdl", "ajer", "s_log")
"""Per-episode metrics of :func:`per_episode`, in the paper's column order."""

PAPER_CSV = "liu_tables.csv"
"""Liu et al.'s Tables 3–6 (ICPP'20), a data file of this package: one row per (``table``,
``policy``) with TMDL, AJER, S_log and F/S/N against MAF, means over 50 episodes."""
PAPER_BY_WORKLOAD = {
    "uniform-b33": ("table3 (uniform b=33)", "table6 (uniform b=33)"),
    "uniform-b36": ("table4 (uniform b=36)",),
    "uniform-b40": ("table4 (uniform b=40)",),
    "bernoulli": ("table5 (bernoulli)",),
    "beta": ("table5 (beta)",),
}
"""The paper's tables for the workloads of ``experiments/liu_*.toml``."""


def per_episode(results: Results) -> pl.DataFrame:
    """One row per (policy, [workload], load, seed, jobset): ``n_jobs``, ``tmdl`` (float64),
    ``ajer`` (float64, percent), ``s_log`` (float64); rows as
    :func:`~schedlab.evaluation.metrics.per_jobset` orders them.

    Raises
    ------
    ValueError
        If the results are not from the multi-cluster model (no ``missed``/``exec_ratio``).
    """
    pj = per_jobset(results)
    if "tmdl" not in pj.columns:
        msg = "Liu's metrics need multi-cluster results (columns 'missed' and 'exec_ratio')"
        raise ValueError(msg)
    out = pj.select(*keys(pj), "n_jobs", "tmdl", "ajer")
    tmdl, ajer = out.get_column("tmdl").to_numpy(), out.get_column("ajer").to_numpy()
    return out.with_columns(pl.Series("s_log", s_log(tmdl, ajer)))


def dominance(per_ep: pl.DataFrame, policy: str, reference: str) -> tuple[int, int, int]:
    """F/S/N of ``policy`` against ``reference`` over the episodes (jobsets) both ran, within
    one condition of ``per_ep`` (filter it first).

    Raises
    ------
    ValueError
        If ``per_ep`` holds several conditions (workloads or loads).
    """
    cond = [c for c in ("workload", "load") if c in per_ep.columns]
    if cond and per_ep.select(cond).unique().height > 1:
        msg = f"dominance is per condition; filter {cond} to one value first"
        raise ValueError(msg)
    a = per_ep.filter(pl.col("policy") == policy).select("jobset", "tmdl", "ajer")
    b = per_ep.filter(pl.col("policy") == reference).select("jobset", "tmdl", "ajer")
    both = a.join(b, on="jobset", suffix="_ref")
    better = (both["tmdl"] < both["tmdl_ref"]).cast(pl.Int64) + (
        both["ajer"] < both["ajer_ref"]
    ).cast(pl.Int64)
    return int((better == 2).sum()), int((better == 1).sum()), int((better == 0).sum())


def summary(
    per_ep: pl.DataFrame,
    reference: str,
    *,
    settings: StatsSettings = DEFAULT_STATS,
) -> pl.DataFrame:
    """Per condition and policy: each metric's mean and CI over episodes, and F/S/N.

    The CIs use ``settings``' seed, confidence and resamples (its metrics are not used).

    Returns
    -------
    polars.DataFrame
        The condition columns (``workload``, ``load`` where present), ``policy``,
        ``n_episodes``, then for each of TMDL, AJER, S_log ``<metric>``, ``<metric>_low``,
        ``<metric>_high``, then ``F``, ``S``, ``N`` (null for the reference and where it did not
        run). Policies in the order of ``per_ep``.
    """
    cond = [c for c in ("workload", "load") if c in per_ep.columns]
    summ = summarize(per_ep, metrics=LIU_METRICS, by=("policy", *cond), settings=settings)
    wide = summ.pivot(
        on="metric", index=["policy", *cond], values=["mean", "ci_low", "ci_high", "n_jobsets"]
    )
    cols = []
    for m in LIU_METRICS:
        cols += [
            pl.col(f"mean_{m}").alias(m),
            pl.col(f"ci_low_{m}").alias(f"{m}_low"),
            pl.col(f"ci_high_{m}").alias(f"{m}_high"),
        ]
    wide = wide.select(
        *cond, "policy", pl.col("n_jobsets_tmdl").cast(pl.Int64).alias("n_episodes"), *cols
    )
    fsn = []
    for row in wide.select(*cond, "policy").iter_rows(named=True):
        part = per_ep.filter(*(pl.col(c) == row[c] for c in cond)) if cond else per_ep
        ran = reference in part.get_column("policy").to_list()
        value = dominance(part, row["policy"], reference) if ran else None
        if row["policy"] == reference:
            value = None
        fsn.append(
            dict(zip("FSN", value, strict=True)) if value else {"F": None, "S": None, "N": None}
        )
    return pl.concat(
        [wide, pl.DataFrame(fsn, schema=dict.fromkeys("FSN", pl.Int64))], how="horizontal"
    )


@cache
def paper_table() -> pl.DataFrame:
    """:data:`PAPER_CSV` as columns ``table``, ``policy``, ``tmdl``, ``ajer``, ``s_log`` (float64)
    and ``fsn`` (String, null for MAF, the reference)."""
    data = resources.files("schedlab.evaluation").joinpath(PAPER_CSV).read_bytes()
    numbers = dict.fromkeys(LIU_METRICS, pl.Float64)
    return pl.read_csv(
        data, schema={"table": pl.String, "policy": pl.String, **numbers, "fsn": pl.String}
    )


def paper_rows(table: str, names: Sequence[str] | None = None) -> pl.DataFrame:
    """The paper's numbers of ``table`` (a ``table`` of :func:`paper_table`) as rows ``policy``,
    ``tmdl``, ``ajer``, ``s_log``, ``fsn`` (optionally only ``names``).

    Raises
    ------
    KeyError
        ``table`` is none of the paper's.
    """
    tables = paper_table().get_column("table")
    if table not in tables:
        known = ", ".join(tables.unique(maintain_order=True))
        msg = f"no table {table!r} of Liu et al. (known: {known})"
        raise KeyError(msg)
    rows = paper_table().filter(pl.col("table") == table).drop("table")
    return rows if names is None else rows.filter(pl.col("policy").is_in(list(names)))
