"""Read an experiment directory back: its spec, the results of done runs, and its failures.

The layout is described in :mod:`schedlab.evaluation.runner`. Only runs of the current
``spec.json`` that are done (fingerprint matches) are read; files of runs no longer in the spec
are ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import SpecError
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.runs import is_done, plan, run_meta
from schedlab.evaluation.spec import ExperimentSpec
from schedlab.results import Results
from schedlab.validate import read_document


@dataclass(frozen=True, kw_only=True, slots=True)
class Experiment:
    """An experiment directory, read back."""

    path: Path
    """The directory."""
    spec: ExperimentSpec
    """The resolved spec it was run with."""
    results: dict[str, Results]
    """Workload name -> per-job results of its done runs (workloads without any are absent)."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Contents of ``errors/*.json`` of runs in the spec (run id, error, message, traceback)."""
    missing: list[str] = field(default_factory=list)
    """Run ids neither done nor failed (never run, or interrupted)."""
    environment: dict[str, Any] = field(default_factory=dict)
    """``environment.json``: versions and platform."""


def is_experiment_dir(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a directory holding a resolved ``spec.json``."""
    return (Path(path) / "spec.json").is_file()


def collect_runs(spec: ExperimentSpec, out: Path) -> Results | None:
    """Per-job results of every done run of ``spec`` in ``out``, stacked; None if none is done.

    The table has a ``workload`` column; ``meta["workloads"]`` maps each workload to its JobSet
    metadata, ``meta["experiment"]`` holds the resolved spec.
    """
    parts = [Results.read_parquet(t.out_path) for t in plan(spec, out) if is_done(t)]
    if not parts:
        return None
    meta: dict[str, Any] = {k: v for k, v in parts[0].meta.items() if k != "run"}
    meta["policies"] = {k: v for p in parts for k, v in p.meta["policies"].items()}
    meta["workloads"] = {p.meta["run"]["workload"]: p.meta["jobset"] for p in parts}
    meta["experiment"] = spec.to_json()
    stats = merge_agent_stats(parts)
    meta.pop("agent_stats", None)
    if stats:
        meta["agent_stats"] = stats
    table = pl.concat([p.table for p in parts], how="diagonal_relaxed")  # DAG columns: some
    return Results(table, meta)


def _add(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Add the counts of ``part`` into ``total`` (numbers summed, dicts of counts merged)."""
    for key, value in part.items():
        if key == "by_load":
            continue
        if isinstance(value, dict):
            into = total.setdefault(key, {})
            for k, v in value.items():
                into[str(k)] = into.get(str(k), 0) + v
        elif isinstance(value, int | float) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def merge_agent_stats(parts: list[Results]) -> dict[str, dict[str, Any]]:
    """Learned policies' run statistics (``meta["agent_stats"]``) of one-load runs, merged.

    Per policy: counts summed over runs, and ``by_load`` mapping each run's load to its own
    counts, as :func:`~schedlab.simulator.run.simulate` gives for a multi-load JobSet.
    """
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        load = part.meta["run"].get("load")
        for policy, stats in part.meta.get("agent_stats", {}).items():
            merged = out.setdefault(policy, {})
            _add(merged, stats)
            if load is not None:
                _add(merged.setdefault("by_load", {}).setdefault(str(load), {}), stats)
    return out


def run_summaries(spec: ExperimentSpec, out: Path, results: Results | None) -> pl.DataFrame:
    """One row per run: id, workload, load, policy, status, jobsets, jobs, mean metrics, time."""
    means = {}
    if results is not None:
        pj = per_jobset(results, bsld_threshold=spec.metrics.bounded_slowdown_threshold)
        agg = pj.group_by("workload", "load", "policy").agg(
            pl.len().alias("n_jobsets"),
            pl.col("n_jobs").sum(),
            *(pl.col(m).mean() for m in ("slowdown", "completion", "bounded_slowdown")),
        )
        means = {(r["workload"], r["load"], r["policy"]): r for r in agg.iter_rows(named=True)}
    rows = []
    for t in plan(spec, out):
        done = is_done(t)
        err_path = Path(t.error_path)
        status = "done" if done else "failed" if err_path.is_file() else "missing"
        m = means.get((t.workload, t.load, t.policy), {}) if done else {}
        wall = run_meta(t.out_path).get("wall_s") if done else None
        error = json.loads(err_path.read_text())["message"] if status == "failed" else None
        rows.append(
            {
                "run_id": t.run_id,
                "workload": t.workload,
                "load": t.load,
                "policy": t.policy,
                "status": status,
                "n_jobsets": m.get("n_jobsets"),
                "n_jobs": m.get("n_jobs"),
                "mean_slowdown": m.get("slowdown"),
                "mean_completion": m.get("completion"),
                "mean_bounded_slowdown": m.get("bounded_slowdown"),
                "wall_s": wall,
                "error": error,
            }
        )
    schema = {
        "load": pl.Float64,
        "n_jobsets": pl.Int64,
        "n_jobs": pl.Int64,
        "mean_slowdown": pl.Float64,
        "mean_completion": pl.Float64,
        "mean_bounded_slowdown": pl.Float64,
        "wall_s": pl.Float64,
        "error": pl.String,
    }
    return pl.DataFrame(rows, schema_overrides=schema)


def read_resolved_spec(path: Path) -> ExperimentSpec:
    """The resolved spec an experiment directory holds (``spec.json``); an unreadable one is a
    :class:`~schedlab.errors.SpecError` naming the file."""
    doc = read_document(path, error=SpecError, fmt="json", what="resolved experiment spec")
    try:
        return ExperimentSpec.from_json(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        msg = (
            f"{path}: not a resolved spec written by `schedlab experiment run` ("
            f"{type(exc).__name__}: {exc}); run the experiment's spec.toml again to rewrite it"
        )
        raise SpecError(msg) from exc


def read_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read the experiment directory ``path`` (written by ``schedlab experiment run``)."""
    out = Path(path)
    if not is_experiment_dir(out):
        msg = f"{out}: not an experiment directory (no spec.json); run `schedlab experiment run`"
        raise SpecError(msg)
    spec = read_resolved_spec(out / "spec.json")
    combined = collect_runs(spec, out)
    results: dict[str, Results] = {}
    if combined is not None:
        for w in spec.workloads:
            table = combined.table.filter(pl.col("workload") == w.name)
            if table.height == 0 or w.name not in combined.meta["workloads"]:
                continue
            jobset_meta = combined.meta["workloads"][w.name]
            meta = {
                **combined.meta,
                "jobset": jobset_meta,
                "length_buckets": jobset_meta.get("length_buckets", {}),
                "policies": {
                    p.name: combined.meta["policies"].get(p.name, {})
                    for p in spec.policies
                    if p.name in set(table.get_column("policy").unique())
                },
            }
            results[w.name] = Results(table, meta)
    failures, missing = [], []
    for t in plan(spec, out):
        if is_done(t):
            continue
        if Path(t.error_path).is_file():
            failures.append(json.loads(Path(t.error_path).read_text()))
        else:
            missing.append(t.run_id)
    env_path = out / "environment.json"
    env = json.loads(env_path.read_text()) if env_path.is_file() else {}
    return Experiment(
        path=out, spec=spec, results=results, failures=failures, missing=missing, environment=env
    )
