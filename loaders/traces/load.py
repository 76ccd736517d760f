"""The entry point of trace loading: :func:`load_trace`, with converted traces cached.

A converted trace is cached as Parquet (with its drop report as JSON), keyed by the loader, the
SHA-256 of the source's content, the load options and the format options: a second load of the
same file with the same content and options reads the cached JobSet instead of parsing the
trace again; other content, even with the same name, size and dates, never hits it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from schedlab import __version__
from schedlab.code_versions import code_version
from schedlab.errors import ParameterError
from schedlab.io import write_text_atomic
from schedlab.jobset import SCHEMA_VERSION, JobSet
from schedlab.loaders.traces.cache import cache_dir, source_sha256, sweep_partial
from schedlab.loaders.traces.drop_report import SAMPLE_SCHEMA, DropReport, LoadResult
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.param_checks import did_you_mean
from schedlab.registry import loaders

CACHE_FORMAT = 5
"""Version of the cached files' layout (part of the key: older entries are never read)."""


def _key(
    loader: str, source: str, digest: str, options: TraceOptions, kwargs: Mapping[str, Any]
) -> str:
    """The cache key: the path as given is part of it so that the cached provenance and
    report name the file the user gave."""
    blob = json.dumps(
        [loader, source, digest, repr(options), kwargs, __version__, SCHEMA_VERSION, CACHE_FORMAT],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def check_options(loader: str, read: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` if ``kwargs`` holds a name that ``read`` does not take."""
    params = inspect.signature(read).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    known = [n for n in known if n != "options"]
    for name in kwargs:
        if name not in known:
            hint = did_you_mean(name, known)
            msg = f"loader {loader!r} has no option {name!r}{hint} (options: {', '.join(known)})"
            raise ValueError(msg)


def load_trace(
    loader: str,
    path: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    use_cache: bool = True,
    **kwargs: Any,
) -> tuple[LoadResult, bool]:
    """Load ``path`` with the registered ``loader``; return the result and whether it was cached.

    Parameters
    ----------
    loader
        A name of :data:`schedlab.registry.loaders` (``"swf"``, ``"alibaba2018"``, ...).
    options
        Shared load options (time step, window, scaling, sampling, split, strict).
    use_cache
        Read (and write) the converted JobSet in the cache; False parses again.
    **kwargs
        The loader's format options (see its docstring).

    Returns
    -------
    (LoadResult, bool)
        The JobSet with its drop report, and whether it came from the cache. Print
        :meth:`LoadResult.summary` to show what the load did.

    Raises
    ------
    UnknownNameError
        An unknown loader name.
    ValueError
        A format option the loader does not take (with the closest known name) or a bad value.
    TraceFormatError
        The file cannot be loaded (see the loader).
    """
    options = options or TraceOptions()
    read = loaders.load(loader)
    check_options(loader, read, kwargs)
    if not use_cache:
        return _read(loader, read, path, options, kwargs), False
    code = code_version(loaders, loader)  # a plug-in's own version and source
    key = _key(
        loader if code is None else f"{loader} {code}",
        str(path),
        source_sha256(path),
        options,
        kwargs,
    )
    jobs_path = cache_dir() / "converted" / f"{key}.parquet"
    report_path = jobs_path.with_suffix(".report.json")
    if jobs_path.is_file() and report_path.is_file():
        return LoadResult(JobSet.read_parquet(jobs_path), _report_from_json(report_path)), True
    result = _read(loader, read, path, options, kwargs)
    sweep_partial(jobs_path.parent)
    result.jobs.write_parquet(jobs_path)
    write_text_atomic(report_path, json.dumps(_report_to_json(result.report)))
    return result, False


def _read(
    loader: str, read: Any, path: Any, options: TraceOptions, kwargs: Mapping[str, Any]
) -> LoadResult:
    """``read(path, options=, **kwargs)``; a plug-in or reference that is not a loader (cannot
    be called so, or returns no LoadResult) is a ParameterError naming it."""
    entry = loaders.entry(loader)
    if entry.origin == "schedlab":
        result: LoadResult = read(path, options=options, **kwargs)
        return result
    what = f"loader {entry.name!r} ({entry.target}, {entry.origin})"
    try:
        made = read(path, options=options, **kwargs)
    except TypeError as exc:
        msg = f"{what} is not a loader read(path, *, options, ...): {exc}"
        raise ParameterError(msg) from exc
    if not isinstance(made, LoadResult):
        msg = f"{what} returned a {type(made).__name__}, not a LoadResult"
        raise ParameterError(msg)
    return made


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
        notes=tuple(d["notes"]),
    )
