"""``schedlab export``: per-job results as CSV (or newline-delimited JSON) for other tools.

One row per policy × job with the results columns (:data:`~schedlab.results.RESULT_COLUMNS`,
``workload`` for experiments), the jobs' demands when known (from the JobSet, or an
experiment's ``jobsets/``) and the times in seconds when the workload defines the length of a
step. The metadata (policies and their parameters, workload, cluster) goes to a JSON file
beside it (``<name>.meta.json``), since CSV has no place for it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl

from schedlab.errors import ResultsError
from schedlab.evaluation.schedules import schedules
from schedlab.io import atomic_path, write_text_atomic
from schedlab.jobset import JobSet
from schedlab.reports.export_formats import SCHEDULE_FORMATS, write_schedule
from schedlab.results import Results

EXPORT_FORMATS = ("csv", "ndjson", *SCHEDULE_FORMATS)
"""Formats of :func:`export_results`: per-job tables (``csv``, ``ndjson``) and one schedule
(``swf``, ``batsim``: :mod:`schedlab.reports.export_formats`)."""

TIME_COLUMNS = ("arrival", "start", "finish", "duration", "completion", "wait")
"""Columns in steps that get a ``<name>_s`` copy in seconds."""


def export_table(results: Results, jobs: JobSet | None = None) -> pl.DataFrame:
    """The per-job table of ``results`` with demands (when known) and times in seconds.

    Demand columns come from ``jobs`` or from the table itself; without either, the results
    columns alone. ``<time>_s`` columns (float64, seconds) are added when the workload's
    metadata gives ``time_step_seconds``.
    """
    try:
        table = schedules(results, jobs).jobs
    except ResultsError:
        if jobs is not None:
            raise
        table = results.table
    step = (jobs.meta.to_json() if jobs is not None else results.meta.get("jobset", {})).get(
        "time_step_seconds"
    )
    if step:
        table = table.with_columns(
            (pl.col(c).cast(pl.Float64) * float(step)).alias(f"{c}_s") for c in TIME_COLUMNS
        )
    return table


def export_results(
    source: Results | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    format: str = "csv",
    jobs: JobSet | str | os.PathLike[str] | None = None,
    policy: str | None = None,
    jobset: int | None = None,
    workload: str | None = None,
) -> dict[str, Path]:
    """Write the per-job results of ``source`` to ``out`` and their metadata beside it, or one
    schedule of them as an SWF log or a Batsim ``_jobs.csv``.

    Parameters
    ----------
    source
        Results, a results Parquet file, or an experiment directory (every workload, with its
        jobsets' demands).
    out
        File to write.
    format
        ``"csv"`` or ``"ndjson"`` (one JSON object per line); ``"swf"`` or ``"batsim"``: the
        schedule of one policy on one jobset (:mod:`schedlab.reports.export_formats`).
    jobs
        The JobSet (or its file) the results were simulated on, for the demand columns.
    policy, jobset, workload
        Which schedule to write as ``swf``/``batsim`` (each needed only when the results hold
        several); the other formats write every row.

    Returns
    -------
    dict
        ``"data"`` and ``"meta"`` -> the paths written (``"data"`` only for ``swf`` and
        ``batsim``: their headers carry the metadata).

    Raises
    ------
    ValueError
        If ``format`` is unknown.
    ResultsError
        If ``jobs`` does not match the results.
    """
    if format not in EXPORT_FORMATS:
        msg = f"format must be one of {EXPORT_FORMATS}, got {format!r}"
        raise ValueError(msg)
    js = JobSet.read_parquet(jobs) if isinstance(jobs, str | os.PathLike) else jobs
    parts = _sources(source, js)
    if format in SCHEDULE_FORMATS:
        path = write_schedule(
            parts, out, format=format, policy=policy, jobset=jobset, workload=workload
        )
        return {"data": path}
    table = pl.concat([export_table(r, j) for r, j in parts], how="diagonal_relaxed")
    target = Path(out)
    with atomic_path(target) as tmp:
        if format == "csv":
            table.write_csv(tmp)
        else:
            table.write_ndjson(tmp)
    meta_path = target.with_name(f"{target.stem}.meta.json")
    meta = {"columns": table.columns, **{k: v for k, v in parts[0][0].meta.items() if k != "run"}}
    write_text_atomic(meta_path, json.dumps(meta, indent=1, default=str) + "\n")
    return {"data": target, "meta": meta_path}


def _sources(
    source: Results | str | os.PathLike[str], jobs: JobSet | None
) -> list[tuple[Results, JobSet | None]]:
    """(results, jobs) per workload of ``source``."""
    if isinstance(source, Results):
        return [(source, jobs)]
    path = Path(source)
    if not path.is_dir():
        return [(Results.read_parquet(path), jobs)]
    from schedlab.evaluation.collect import read_experiment
    from schedlab.reports.experiment import experiment_jobs

    exp = read_experiment(path)
    found = experiment_jobs(exp)
    if not exp.results:
        msg = f"{path}: no run of the experiment has completed; nothing to export"
        raise ResultsError(msg)
    return [(r, found.get(w)) for w, r in exp.results.items()]
