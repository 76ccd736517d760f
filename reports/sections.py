"""Descriptive sections of a report: introduction, the overview of every load, load sweep, job
lengths, run metadata.

The statistical sections are in :mod:`schedlab.reports.comparison`; :func:`write_report
<schedlab.reports.render.write_report>` assembles both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

import schedlab
from schedlab import registry
from schedlab.evaluation.compare import EXACT_MAX, TIE_RTOL, ZERO_METHOD
from schedlab.evaluation.keys import policy_order
from schedlab.evaluation.metrics import SECONDS
from schedlab.evaluation.stats import CI_METHOD
from schedlab.reports import figures
from schedlab.reports.comparison_data import Comparison
from schedlab.reports.content import Block, Table
from schedlab.reports.output import Plot
from schedlab.reports.tables import ci_table, overview_table
from schedlab.reports.views import ScheduleViews
from schedlab.results import Results


def _dump(obj: Mapping[str, Any]) -> str:
    """One ``key: value`` line per top-level key, values as compact JSON."""
    return "\n".join(
        f"{k}: {json.dumps(v, default=str, ensure_ascii=False)}" for k, v in obj.items()
    )


def _load_label(load: float | None) -> str:
    return "load not recorded" if load is None else figures.format_load(load)


@dataclass
class Computed:
    """Everything the report shows, computed once."""

    results: Results
    per_jobset: pl.DataFrame
    per_length: pl.DataFrame
    summary: pl.DataFrame
    length_summary: pl.DataFrame
    buckets: dict[str, tuple[float, float]]
    comp: Comparison
    ratios: pl.DataFrame
    """:func:`~schedlab.evaluation.overview.ratio_overview` of every load."""
    views: ScheduleViews | None
    """The representative jobset's schedules (None: the reference has no jobset)."""
    n_loads: int
    users: pl.DataFrame | None = None
    """:func:`~schedlab.evaluation.users.per_user` of every condition (times in the results'
    unit; None: the jobs have no user ids)."""

    @property
    def seed(self) -> int:
        """Seed of the bootstrap intervals."""
        return self.comp.cfg.seed

    @property
    def confidence(self) -> float:
        """Level of the bootstrap intervals."""
        return self.comp.cfg.confidence

    @property
    def n_resamples(self) -> int:
        """Bootstrap resamples per interval."""
        return self.comp.cfg.n_resamples


def intro(c: Computed, title: str, experiment: Mapping[str, Any]) -> list[Block]:
    provenance = c.results.meta.get("jobset", {}).get("provenance", {})
    conf = f"{100 * c.confidence:g}%"
    n_jobsets = c.per_jobset.select(pl.struct("load", "seed", "jobset").n_unique()).item()
    loads = c.per_jobset.get_column("load").drop_nulls().unique().sort()
    first = cast("float | None", loads.first())  # a float column; None if empty
    last = cast("float | None", loads.last())
    span = (
        (
            f" at {loads.len()} offered loads ({figures.format_load(first)}–"
            f"{figures.format_load(last)})"
        )
        if loads.len() > 1
        else (f" at {figures.format_load(first)}" if loads.len() else "")
    )
    workload = provenance.get("generator", provenance.get("path", "unknown"))
    about = experiment.get("description")
    n_pol = len(policy_order(c.results))
    if c.comp.is_replay() and c.n_loads <= 1:
        n_jobs = int(c.per_jobset.get_column("n_jobs").max() or 0)  # type: ignore[arg-type]
        what = f"{n_pol} policies, each replaying the whole log once ({n_jobs:,} jobs)"
        design = (
            "One jobset per policy: the statistics are over blocks of time, not over "
            f"jobsets (the design is explained below). {_units(c)}"
        )
    else:
        empty = len(c.results.meta.get("jobset", {}).get("empty_jobsets", ()))
        made = (
            f" ({n_jobsets + empty:,} generated; {empty:,} had no job and are in no statistic)"
            if empty
            else ""
        )
        what = f"{n_pol} policies on {n_jobsets:,} jobsets{made}{span}"
        design = (
            f"Statistics are over jobsets: each jobset contributes one value, the average "
            f"over its jobs, and means, medians, tests and confidence intervals are taken "
            f"over those per-jobset values, paired by jobset, never over pooled jobs. "
            f"CI = percentile bootstrap {conf} over jobsets ({c.n_resamples:,} resamples, "
            f"seed {c.seed}). {_units(c)}"
        )
    blocks: list[Block] = [
        ("h1", title),
        (
            "p",
            f"{what}; workload: {workload}{f' ({about})' if about else ''}; reference policy: "
            f"{c.comp.cfg.reference}.",
        ),
        ("note", design),
    ]
    dag_only = dag_orders_without_dags(c.results)
    if dag_only:
        blocks.append(
            (
                "warning",
                f"{', '.join(dag_only)} order the tasks of DAG jobs by their critical paths; this "
                "workload has no DAGs, where srjf is sjf and cpf orders by run time: compare "
                "them on a DAG workload.",
            )
        )
    if not same_jobsets(c.per_jobset):
        blocks.append(
            (
                "warning",
                "Policies were not run on the same jobsets at every load; "
                "paired comparisons use the jobsets common to all.",
            )
        )
    for f in experiment.get("failures", []):
        blocks.append(
            (
                "warning",
                f"run {f['run_id']} failed ({f['error']}: {f['message']}); "
                f"its policy is missing at that load.",
            )
        )
    if experiment.get("missing"):
        ids = experiment["missing"]
        blocks.append(
            (
                "warning",
                f"{len(ids)} runs have not run yet (interrupted?): "
                f"{', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}.",
            )
        )
    return blocks


def dag_orders_without_dags(results: Results) -> list[str]:
    """The policies of ``results`` whose job order is DAG-only (registry tag ``dag``) when the
    workload has no DAG jobs."""
    table = results.table
    if "dag" in table.columns and table.get_column("dag").null_count() < table.height:
        return []
    dag = set(registry.policies.names(tag="dag"))
    return [p for p in policy_order(results) if registry.policy_name(p) in dag]


def skipped_blocks(experiment: Mapping[str, Any]) -> list[Block]:
    """One line, for the report's end, naming the optional policies the spec could not run,
    grouped by reason (a missing checkpoint's path is in ``report.json``)."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in experiment.get("skipped", []):
        short = "checkpoint not found" if reason.startswith("checkpoint ") else reason
        by_reason.setdefault(short, []).append(name)
    if not by_reason:
        return []
    groups = "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items())
    return [("note", f"Optional policies not run: {groups}.")]


def _units(c: Computed) -> str:
    """How slowdown is defined and in which unit times are, for the statistics note."""
    if c.comp.base_unit == SECONDS:
        shown = "" if c.comp.time_unit == SECONDS else f", shown in {c.comp.time_unit}"
        return (
            f"Times are in seconds{shown}, on the trace's real submit and run times (a job "
            "killed at its request ran until it); slowdown = turnaround / run time, >= 1."
        )
    return "Slowdown = (finish − arrival) / duration, >= 1; times are in simulation steps."


def same_jobsets(pj: pl.DataFrame) -> bool:
    per = pj.group_by("policy", "load").agg(pl.struct("seed", "jobset").n_unique().alias("n"))
    return per.select("load", "n").unique().height == per["load"].n_unique()


def overview_blocks(c: Computed, images: dict[str, tuple[Plot, str]]) -> list[Block]:
    """The first screen: at every load, the best policy and each ratio to the reference."""
    if c.ratios.get_column("ratio").drop_nulls().len() == 0:  # e.g. one jobset: no ratio
        return []
    cfg = c.comp.cfg
    what = "every offered load" if c.n_loads > 1 else "a glance"
    blocks: list[Block] = [
        ("h2", f"At {what}: ratio to {cfg.reference}"),
        (
            "p",
            f"Where each policy wins, by how much, and where the difference from "
            f"{cfg.reference} is not significant ({c.comp.name(cfg.primary)}; best = lowest mean "
            f"rank over the jobsets of that load).",
        ),
        ("table", overview_table(c.comp, c.ratios)),
    ]
    if "ratio_grid.png" in images:
        blocks.append(("figure", ("ratio_grid.png", images["ratio_grid.png"][1])))
    return blocks


def sweep_blocks(c: Computed, images: dict[str, tuple[Plot, str]]) -> list[Block]:
    if c.n_loads < 2:
        return []
    conf = f"{100 * c.confidence:g}%"
    blocks: list[Block] = [("h2", "Across offered loads")]
    if "load_sweep.png" in images:
        blocks.append(("figure", ("load_sweep.png", images["load_sweep.png"][1])))
    cfg = c.comp.cfg
    shown = [cfg.primary] + [m for m in ("completion",) if m in cfg.metrics and m != cfg.primary]
    for metric in shown:
        rows = c.summary.filter(pl.col("metric") == metric)
        blocks += [
            ("h3", c.comp.name(metric).capitalize()),
            ("table", ci_table(rows, "load", _load_label)),
            (
                "p",
                f"Rows: policy; columns: offered load. Cell: mean over jobsets of the "
                f"per-jobset average [{conf} CI]; bold: lowest mean in the column.",
            ),
        ]
    return blocks


def length_blocks(c: Computed, images: dict[str, tuple[Plot, str]]) -> list[Block]:
    table = c.results.table
    if "dag" in table.columns and table.get_column("dag").null_count() < table.height:
        source = "terciles of the DAG jobs' critical paths: the breakdown counts jobs, not tasks"
    elif c.results.meta.get("length_buckets"):
        source = "from the workload metadata"
    else:
        source = "duration terciles, as the workload defines no length buckets"
    label = {b: figures.bucket_label(b, r) for b, r in c.buckets.items()}
    blocks: list[Block] = [
        ("h2", f"Slowdown by job length {c.comp.where()}"),
        (
            "p",
            f"Length buckets ({source}): {', '.join(label.values()) or 'none'}. Jobs in no "
            "bucket are left out of this breakdown only; a jobset counts in a bucket if it "
            "has a job there.",
        ),
    ]
    if c.length_summary.height:
        blocks.append(("table", ci_table(c.length_summary, "bucket", label.__getitem__)))
    if "length_boxplot.png" in images:
        blocks.append(("figure", ("length_boxplot.png", images["length_boxplot.png"][1])))
    learning = [("figure", (n, cap)) for n, (_, cap) in images.items() if n.startswith("learning_")]
    if learning:
        blocks += [("h2", "Learning curves"), *learning]
    if "slowdown_cdf.png" not in images:  # a whole replay shows its per-job distributions
        return blocks
    return [
        *blocks,
        ("h2", "Distribution of per-job slowdown"),
        ("figure", ("slowdown_cdf.png", images["slowdown_cdf.png"][1])),
        ("p", "Descriptive only: this curve pools the jobs of every jobset at that load."),
    ]


def _config_words(config: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster config of a run as the command line says it: ``slots`` None is ``all``."""
    if "slots" in config and config["slots"] is None:
        return {**config, "slots": "all (the whole queue is visible)"}
    return dict(config)


JOBSET_TESTS = {
    "omnibus": "Friedman (tie-corrected) with Iman–Davenport F; Kendall's W; Nemenyi CD",
    "pairwise": f"Wilcoxon signed-rank, zero_method={ZERO_METHOD}, two-sided, exact up to "
    f"{EXACT_MAX} non-zero differences (else normal approximation); "
    "Holm over all pairs within each load; rank-biserial r",
    "exploratory": "Wilcoxon vs reference; Benjamini–Hochberg within each load",
}
"""The tests of a comparison over jobsets, as the Statistics metadata names them."""
REPLAY_INTERVAL = (
    "block bootstrap over time (Carlstein's non-overlapping blocks, resampled with "
    "replacement; each mean recomputed over the resampled blocks' jobs; ratios to the "
    "reference resample both policies' blocks together); tail metrics have no interval"
)
"""The intervals of a workload replayed once (:mod:`schedlab.evaluation.replay`)."""
REPLAY_TESTS = {
    "omnibus": "none (one jobset per policy)",
    "pairwise": f"each policy vs the reference, paired by block: wins/ties/losses and Wilcoxon "
    f"signed-rank on the blocks' means (zero_method={ZERO_METHOD}, two-sided), Holm over the "
    "policies; only with enough blocks for Holm to reach alpha",
    "exploratory": "none",
}
"""The tests of a workload replayed once."""


def meta_blocks(c: Computed, experiment: Mapping[str, Any], csvs: Sequence[str]) -> list[Block]:
    meta = c.results.meta
    jobset_meta = dict(meta.get("jobset", {}))
    provenance = jobset_meta.pop("provenance", {})
    counts = (
        c.per_jobset.group_by("load")
        .agg(pl.struct("seed", "jobset").n_unique().alias("n"), pl.len().alias("rows"))
        .sort("load", nulls_last=True)
    )
    per_policy = max(len(policy_order(c.results)), 1)
    jobs = c.per_jobset.group_by("load").agg(pl.col("n_jobs").sum())
    n_jobs = dict(jobs.rows())
    body = [
        [_load_label(ld), str(n), str(int(n_jobs.get(ld, 0)) // per_policy)]
        for ld, n, _ in counts.iter_rows()
    ]
    params = [
        [p, json.dumps(meta.get("policies", {}).get(p, {}), default=str, ensure_ascii=False)]
        for p in policy_order(c.results)
    ]
    blocks: list[Block] = [
        ("h2", "Run metadata"),
        ("table", Table(["policy", "parameters"], params, left=2)),
        ("table", Table(["offered load", "jobsets", "jobs per policy"], body)),
    ]
    empty = len(jobset_meta.get("empty_jobsets", ()))
    if empty:
        blocks.append(("p", f"{empty:,} generated jobsets had no job and are in no statistic."))
    workload = {
        k: jobset_meta.get(k)
        for k in ("resources", "capacity", "units", "time_step_seconds", "arrival_window")
    }
    cfg = c.comp.cfg
    replay = c.comp.is_replay()
    stats = {
        "unit of analysis": "blocks of time of the one jobset (block bootstrap, tests paired "
        "by block)"
        if replay
        else "jobset (per-jobset average of per-job values), paired by jobset",
        "interval": REPLAY_INTERVAL if replay else CI_METHOD,
        "confidence": c.confidence,
        "n_resamples": c.n_resamples,
        "seed": c.seed,
        "reference": cfg.reference,
        "primary metric": cfg.primary,
        "secondary metrics (exploratory)": list(cfg.secondary),
        "bounded slowdown": f"max(1, C / max(T, τ)), {c.comp.tau}",
        "time unit": "s (a trace's real submit and run times, whatever the time step)"
        if c.comp.base_unit == SECONDS
        else "steps (a workload defined in steps)",
        **(REPLAY_TESTS if replay else JOBSET_TESTS),
        "ties": f"values within a relative {TIE_RTOL:g} count as equal",
        "alpha": cfg.alpha,
        "schedlab": schedlab.__version__,
    }
    blocks += [
        ("p", "Workload provenance:"),
        ("pre", _dump(provenance)),
        ("p", "Workload and cluster:"),
        ("pre", _dump({**workload, **_config_words(meta.get("config", {}))})),
        ("p", "Statistics:"),
        ("pre", _dump(stats)),
    ]
    spec = experiment.get("spec")
    if spec:
        keep = ("name", "description", "source", "seed", "reference", "workloads", "policies")
        blocks += [
            ("p", "Experiment spec (resolved):"),
            ("pre", _dump({k: spec.get(k) for k in keep})),
        ]
    env = experiment.get("environment")
    if env:
        blocks += [("p", "Environment:"), ("pre", _dump(env))]
    unit = c.comp.time_unit
    shown = (
        f" Times: in {unit} in the statistics' tables (summary, per_jobset, comparison, "
        f"replay_*), in {c.comp.base_unit} in per_user and per_length, in steps in the "
        "timeline tables."
        if unit != c.comp.base_unit
        else ""
    )
    return [*blocks, ("p", f"Tables beside this report: {', '.join(csvs)}.{shown}")]
