"""The entry point of trace loading: :func:`load_trace`, with converted traces cached.

A converted trace is cached as Parquet (with its drop report as JSON), keyed by the loader, the
source's SHA-256 and the load options: a second load of the same file with the same options
reads the cached JobSet instead of parsing the trace again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from schedlab import __version__
from schedlab.io import write_text_atomic
from schedlab.jobset import SCHEMA_VERSION, JobSet
from schedlab.loaders.traces.cache import cache_dir, source_sha256
from schedlab.loaders.traces.drop_report import SAMPLE_SCHEMA, DropReport, LoadResult
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.registry import loaders


def _key(loader: str, digest: str, options: TraceOptions, kwargs: dict[str, Any]) -> str:
    blob = json.dumps(
        [loader, digest, repr(options), kwargs, __version__, SCHEMA_VERSION],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def load_trace(
    loader: str,
    path: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    use_cache: bool = True,
    **kwargs: Any,
) -> tuple[LoadResult, bool]:
    """Load ``path`` with the registered ``loader``; return the result and whether it was cached."""
    options = options or TraceOptions()
    read = loaders.load(loader)
    if not use_cache:
        return read(path, options=options, **kwargs), False
    key = _key(loader, source_sha256(path), options, kwargs)
    jobs_path = cache_dir() / "converted" / f"{key}.parquet"
    report_path = jobs_path.with_suffix(".report.json")
    if jobs_path.is_file() and report_path.is_file():
        return LoadResult(JobSet.read_parquet(jobs_path), _report_from_json(report_path)), True
    result = read(path, options=options, **kwargs)
    result.jobs.write_parquet(jobs_path)
    write_text_atomic(report_path, json.dumps(_report_to_json(result.report)))
    return result, False


def _report_to_json(report: DropReport) -> dict[str, Any]:
    return {"source": report.source, **report.to_json(), "samples": report.samples.to_dicts()}


def _report_from_json(path: Path) -> DropReport:
    d = json.loads(path.read_text())
    return DropReport(
        source=d["source"],
        rows_read=d["rows_read"],
        rows_kept=d["rows_kept"],
        dropped=d["dropped"],
        fixed=d["fixed"],
        samples=pl.DataFrame(d["samples"], schema=SAMPLE_SCHEMA),
    )
