"""The tables of the workload-fit report (:mod:`schedlab.reports.fit_report`), as markup tables.

Each takes what :func:`schedlab.evaluation.fitting.workload.fit` or
:func:`schedlab.evaluation.fitting.check.heuristic_check` computed and only formats it: the
duration candidates ranked (distances, quantile ratios, held-out log-likelihood, starts at the
optimum), the arrival models, the overdispersion of counts, the most frequent demand vectors and
the heuristics on trace vs synthetic jobsets.
"""

from __future__ import annotations

import polars as pl

from schedlab.evaluation.fitting.check import CheckResult
from schedlab.evaluation.fitting.workload import FitResult
from schedlab.reports.content import Table
from schedlab.reports.tables import ci, num

DEMAND_ROWS = 8
"""Demand vectors shown per duration class."""


def duration_table(r: FitResult) -> Table:
    """Every duration family ranked: parameters, log-likelihood, AIC/BIC, distances, quantile
    ratios, held-out log-likelihood (best in bold) and starts at the optimum."""
    cols = [
        "family",
        "n_params",
        "loglik",
        "aic",
        "delta",
        "bic",
        "ks",
        "ad",
        "q50_ratio",
        "q90_ratio",
        "q99_ratio",
        "q999_ratio",
        "heldout_ll_per_job",
        "starts",
        "starts_at_optimum",
    ]
    header = [
        "family",
        "k",
        "log L",
        "AIC",
        f"Δ{r.model.diagnostics['selection'].upper()}",
        "BIC",
        "KS D",
        "AD A²",
        "p50 ratio",
        "p90 ratio",
        "p99 ratio",
        "p99.9 ratio",
        "held-out log L / job",
        "starts at optimum",
    ]
    rows = []
    for row in r.durations.select(cols).iter_rows(named=True):
        starts = "–" if row["starts"] is None else f"{row['starts_at_optimum']}/{row['starts']}"
        rows.append(
            [row["family"], str(row["n_params"])] + [num(row[c]) for c in cols[2:-2]] + [starts]
        )
    best_heldout = r.durations["heldout_ll_per_job"].arg_max()
    bold = {(0, j) for j in range(len(header))}
    if best_heldout is not None:
        bold.add((best_heldout, len(header) - 2))
    return Table(header, rows, bold)


def arrival_table(r: FitResult) -> Table:
    """Every arrival model: rate, batches, log-likelihood, AIC, held-out log-likelihood (the
    selected one in bold)."""
    header = [
        "model",
        "k",
        "jobs / step",
        "mean batch",
        "log L",
        "AIC",
        "held-out log L / job",
        "note",
    ]
    rows, bold = [], set()
    for i, row in enumerate(r.arrivals.iter_rows(named=True)):
        k = row.get("n_params")
        rows.append(
            [
                row["model"],
                "–" if k is None else str(k),
                num(row.get("rate_per_step")),
                num(row.get("mean_batch")),
                num(row.get("loglik")),
                num(row.get("aic")),
                num(row.get("heldout_ll_per_job")),
                row.get("note") or "",
            ]
        )
        if row["selected"]:
            bold |= {(i, j) for j in range(len(header) - 1)}
    return Table(header, rows, bold)


def dispersion_table(r: FitResult) -> Table:
    """The index of dispersion of arrival counts by bin width."""
    header = ["bin (steps)", "bin (s)", "bins", "jobs / bin", "variance / mean", "vs fitted rate"]
    rows = [
        [
            str(x["scale_steps"]),
            num(x["scale_seconds"]),
            f"{x['bins']:,}",
            num(x["mean"]),
            num(x["dispersion"]),
            num(x["dispersion_vs_rate"]),
        ]
        for x in r.dispersion.iter_rows(named=True)
    ]
    return Table(header, rows)


def demand_table(r: FitResult) -> Table:
    """The most frequent demand vectors of each duration class (:data:`DEMAND_ROWS` at most)."""
    res = list(r.model.resources)
    top = r.demands.filter(pl.int_range(pl.len()).over("class") < DEMAND_ROWS)
    header = ["duration class (steps)", "jobs", *res, "probability"]
    rows = [
        [f"{x['lo']}–{x['hi']}", f"{x['jobs']:,}", *[num(x[c]) for c in res], f"{x['prob']:.4f}"]
        for x in top.iter_rows(named=True)
    ]
    return Table(header, rows, left=2)


def check_table(c: CheckResult) -> Table:
    """Each heuristic on trace windows and on synthetic jobsets: mean slowdown [CI], average
    rank, and the synthetic / trace ratio."""
    header = [
        "policy",
        "trace: mean slowdown [95% CI]",
        "trace: avg rank",
        "synthetic: mean slowdown [95% CI]",
        "synthetic: avg rank",
        "synthetic / trace",
    ]
    t = c.summary.filter(pl.col("source") == "trace").sort("mean")
    s = c.summary.filter(pl.col("source") == "synthetic")
    rows = []
    for row in t.iter_rows(named=True):
        o = s.filter(pl.col("policy") == row["policy"]).row(0, named=True)
        rows.append(
            [
                row["policy"],
                ci(row["mean"], row["ci_low"], row["ci_high"]),
                num(row["avg_rank"]),
                ci(o["mean"], o["ci_low"], o["ci_high"]),
                num(o["avg_rank"]),
                num(o["mean"] / row["mean"]),
            ]
        )
    return Table(header, rows)
