"""Public conformance checks for workload generators and trace loaders (style.md §9).

Like scikit-learn's ``check_estimator``: the tests run them over every registered generator and
loader, and a new one passes them before it is registered::

    from schedlab.loaders import check_generator, check_loader

    check_generator("deeprm")                         # a registered name, a class or an instance
    check_loader("swf", "small.swf")                  # a registered name or a callable + a file

Each check raises ``AssertionError`` naming what failed, with what was expected and what was
found. They run in seconds on small inputs (a few jobsets; a trace file of a few hundred lines).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import pickle
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.io import sha256
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.traces.archive import text_path
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.registry import generators, loaders


def _fail(what: str, message: str) -> NoReturn:
    raise AssertionError(f"{what}: {message}")


def _same_jobset(a: JobSet, b: JobSet, what: str, why: str) -> None:
    if not a.jobs.equals(b.jobs):
        _fail(what, f"{why}: the jobs differ")
    if a.meta != b.meta:
        _fail(what, f"{why}: the metadata differ ({a.meta} != {b.meta})")


def _roundtrips(js: JobSet, what: str) -> None:
    """Validated, picklable, and the same after a Parquet round trip."""
    _same_jobset(JobSet.create(js.jobs, js.meta), js, what, "validating again changes it")
    _same_jobset(pickle.loads(pickle.dumps(js)), js, what, "a pickle round trip changes it")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.parquet"
        js.write_parquet(path)
        _same_jobset(JobSet.read_parquet(path), js, what, "a Parquet round trip changes it")


# -- generators ----------------------------------------------------------------------------------


def _make_generator(generator: Any, params: Mapping[str, Any]) -> tuple[Any, str]:
    if isinstance(generator, str):
        return generators.make(generator, **params), f"generator {generator!r}"
    if isinstance(generator, type):
        return generator(**params), f"generator {generator.__name__}"
    return generator, f"generator {type(generator).__name__}"


def check_generator(
    generator: str | type | Any,
    *,
    params: Mapping[str, Any] | None = None,
    load: float = 0.7,
    n_jobsets: int = 4,
    seed: int = 0,
    load_jobsets: int = 200,
    load_rtol: float = 0.1,
) -> None:
    """Check that a workload generator behaves as schedlab's generators must.

    Parameters
    ----------
    generator
        A registered name (made with ``params``), a generator class (called with ``params``)
        or an instance.
    params
        Keyword arguments of the generator (e.g. ``{"model": "fit/model.json"}``).
    load, n_jobsets, seed
        The target offered load, jobsets and seed of the small JobSets checked.
    load_jobsets, load_rtol
        The pooled offered load of ``load_jobsets`` jobsets must be within ``load_rtol``
        (relative) of ``load``.

    Checks: the same parameters and seed give the identical JobSet (jobs and metadata), another
    seed another one; the JobSet is valid (validating again, pickling and a Parquet round trip
    change nothing) with jobsets ``0..n-1`` (present or listed as empty); the provenance records
    the generator's name, JSON-able parameters, the loads and the seed; the target load is
    honoured; a sweep numbers load ``i``'s jobsets ``i*n .. i*n+n-1``; the generator pickles;
    a load <= 0 or not finite and ``n_jobsets < 1`` are ``ValueError``, a seed that is not an
    int a ``TypeError``.

    Raises
    ------
    AssertionError
        Naming the generator and the property that failed.
    """
    gen, what = _make_generator(generator, params or {})
    a = gen.generate(load, n_jobsets=n_jobsets, seed=seed)
    _same_jobset(gen.generate(load, n_jobsets=n_jobsets, seed=seed), a, what, "same seed")
    if gen.generate(load, n_jobsets=n_jobsets, seed=seed + 1).jobs.equals(a.jobs):
        _fail(what, f"seeds {seed} and {seed + 1} give the same jobs: the seed is ignored")
    _roundtrips(a, what)
    _check_ids(a, range(n_jobsets), what)
    _check_provenance(gen, a, [load], seed, what)
    if "load" in a.jobs.columns and not (a.jobs.get_column("load") == load).all():
        _fail(what, f"the jobs' `load` column is not the target {load}")
    big = gen.generate(load, n_jobsets=load_jobsets, seed=seed)
    realised = float(offered_load(big)["load"].item()) if len(big) else 0.0
    if abs(realised / load - 1) > load_rtol:
        _fail(
            what,
            f"target load {load} but the pooled offered load of {load_jobsets} jobsets is "
            f"{realised:.4f} (tolerance {load_rtol:.0%})",
        )
    sweep = gen.generate_sweep([load, 2 * load], n_jobsets=n_jobsets, seed=seed)
    _check_ids(sweep, range(2 * n_jobsets), what)
    for i, target in enumerate((load, 2 * load)):
        rows = sweep.jobs.filter(pl.col("jobset") // n_jobsets == i)
        if "load" in rows.columns and not (rows.get_column("load") == target).all():
            _fail(what, f"sweep: jobsets {i * n_jobsets}.. are not those of load {target}")
    again = pickle.loads(pickle.dumps(gen))
    _same_jobset(again.generate(load, n_jobsets=n_jobsets, seed=seed), a, what, "unpickled")
    _check_bad_arguments(gen, n_jobsets, seed, what)


def _check_ids(js: JobSet, expected: range, what: str) -> None:
    present = set(js.jobset_ids)
    empty = set(js.meta.empty_jobsets)
    if present & empty or present | empty != set(expected):
        _fail(
            what,
            f"jobsets {sorted(present)} with empty {sorted(empty)}; expected exactly "
            f"{expected.start}..{expected.stop - 1}, each either present or listed empty",
        )


def _check_provenance(gen: Any, js: JobSet, loads: list[float], seed: int, what: str) -> None:
    prov = js.meta.provenance
    expected = {"generator": gen.name, "loads": loads, "seed": seed}
    for key, value in expected.items():
        if prov.get(key) != value:
            _fail(what, f"provenance[{key!r}] is {prov.get(key)!r}, expected {value!r}")
    try:
        text = json.dumps(js.meta.to_json())
    except TypeError as exc:
        _fail(what, f"the metadata is not JSON-able ({exc})")
    if "params" not in prov or json.loads(text)["provenance"]["params"] != prov["params"]:
        _fail(what, "provenance['params'] is missing or does not survive JSON")


def _check_bad_arguments(gen: Any, n_jobsets: int, seed: int, what: str) -> None:
    calls: list[tuple[str, type[Exception], Callable[[], Any]]] = [
        ("load 0", ValueError, lambda: gen.generate(0.0, n_jobsets=n_jobsets, seed=seed)),
        ("load -1", ValueError, lambda: gen.generate(-1.0, n_jobsets=n_jobsets, seed=seed)),
        ("load nan", ValueError, lambda: gen.generate(math.nan, n_jobsets=n_jobsets, seed=seed)),
        ("n_jobsets 0", ValueError, lambda: gen.generate(0.5, n_jobsets=0, seed=seed)),
        ("seed '1'", TypeError, lambda: gen.generate(0.5, n_jobsets=n_jobsets, seed="1")),
    ]
    for name, error, call in calls:
        try:
            call()
        except error:
            continue
        except Exception as exc:  # any other outcome is the failure
            _fail(what, f"{name} raised {type(exc).__name__} ({exc}), expected {error.__name__}")
        _fail(what, f"{name} was accepted, expected {error.__name__}")


# -- loaders -------------------------------------------------------------------------------------


def check_loader(
    loader: str | Callable[..., LoadResult],
    source: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    **kwargs: Any,
) -> LoadResult:
    """Check that a trace loader behaves as schedlab's loaders must, on a small valid file.

    Parameters
    ----------
    loader
        A registered name or a loader function ``read(source, *, options, **kwargs)``.
    source
        A small valid trace file for it (a few hundred lines: it is loaded about 20 times).
    options, **kwargs
        Load options and format options used throughout.

    Checks: two loads give the identical JobSet and drop report; the JobSet is valid
    (validating again, pickling and a Parquet round trip change nothing) and not empty; the
    report accounts for every row (``rows_read == rows_kept + Σ dropped``); the provenance
    records the loader, the path, the file's SHA-256, the options and the counts; a random
    sample with a seed is reproducible; the result pickles; one malformed line appended is
    dropped and counted (and named by its line number with ``strict=True``); hostile files
    (empty, blank, binary, random bytes, Parquet, truncated gzip, Latin-1, quoted fields, the
    first line alone) raise :class:`~schedlab.errors.TraceFormatError` naming the file, or load
    with every row accounted for, never another exception. For a registered name, a second
    :func:`~schedlab.loaders.traces.load.load_trace` comes from the cache, unchanged.

    Returns
    -------
    LoadResult
        The load of ``source``.

    Raises
    ------
    AssertionError
        Naming the loader and the property that failed.
    """
    read = loaders.load(loader) if isinstance(loader, str) else loader
    what = f"loader {loader!r}" if isinstance(loader, str) else f"loader {loader.__name__}"
    opts = options or TraceOptions()
    result = read(source, options=opts, **kwargs)
    _check_result(result, what, str(source))
    _same_result(read(source, options=opts, **kwargs), result, what, "loaded twice")
    _check_load_provenance(result, source, opts, what)
    if result.report.rows_kept > 1:
        sampled = replace(opts, sample=max(1, result.report.rows_kept // 2), seed=1)
        first = read(source, options=sampled, **kwargs)
        _same_result(read(source, options=sampled, **kwargs), first, what, "same sample seed")
    back = pickle.loads(pickle.dumps(result))
    _same_result(back, result, what, "a pickle round trip")
    with tempfile.TemporaryDirectory() as tmp:
        _check_malformed_line(read, Path(source), Path(tmp), result, opts, kwargs, what)
        for name, path in _hostile_files(Path(source), Path(tmp)).items():
            _check_hostile(read, path, name, opts, kwargs, what)
    if isinstance(loader, str):
        load_trace(loader, source, options=opts, **kwargs)
        cached, hit = load_trace(loader, source, options=opts, **kwargs)
        if not hit:
            _fail(what, "a second load_trace of the same file did not come from the cache")
        _same_result(cached, result, what, "read back from the cache")
    return result


def _check_result(result: Any, what: str, source: str) -> None:
    if not isinstance(result, LoadResult):
        _fail(what, f"returned {type(result).__name__}, expected a LoadResult")
    report = result.report
    dropped = sum(report.dropped.values())
    if report.rows_read != report.rows_kept + dropped:
        _fail(what, f"{source}: read {report.rows_read} != kept {report.rows_kept} + {dropped}")
    if report.rows_kept < 1 or len(result.jobs) < 1:
        _fail(what, f"{source}: a load that keeps no job must raise TraceFormatError")
    _roundtrips(result.jobs, what)


def _same_result(a: LoadResult, b: LoadResult, what: str, why: str) -> None:
    _same_jobset(a.jobs, b.jobs, what, why)
    if a.report.to_json() != b.report.to_json() or not a.report.samples.equals(b.report.samples):
        _fail(what, f"{why}: the drop reports differ")


def _check_load_provenance(
    result: LoadResult, source: str | os.PathLike[str], opts: TraceOptions, what: str
) -> None:
    prov = result.jobs.meta.provenance
    expected = {
        "path": str(source),
        "sha256": sha256(source),
        "options": asdict(opts),
        "rows": result.report.to_json(),
    }
    for key, value in expected.items():
        if prov.get(key) != value:
            _fail(what, f"provenance[{key!r}] is {prov.get(key)!r}, expected {value!r}")
    if not prov.get("loader"):
        _fail(what, "provenance['loader'] (the loader's name) is missing")


def _text(source: Path) -> bytes:
    """The source's text (decompressed if needed), ending with a line end."""
    data = text_path(source).read_bytes()
    return data if data.endswith(b"\n") else data + b"\n"


def _check_malformed_line(
    read: Callable[..., LoadResult],
    source: Path,
    tmp: Path,
    base: LoadResult,
    opts: TraceOptions,
    kwargs: Mapping[str, Any],
    what: str,
) -> None:
    text = _text(source)
    line = text.count(b"\n") + 1
    bad = tmp / "malformed.txt"
    bad.write_bytes(text + b"not a row \x01 ,,, -1\n")
    result = read(bad, options=opts, **kwargs)
    report = result.report
    if (report.rows_read, sum(report.dropped.values())) != (
        base.report.rows_read + 1,
        sum(base.report.dropped.values()) + 1,
    ):
        _fail(what, f"a malformed line {line} appended is not read and dropped: {report}")
    if line not in report.samples.get_column("line").to_list():
        _fail(what, f"the malformed line {line} is not among the report's samples")
    try:
        read(bad, options=replace(opts, strict=True), **kwargs)
    except TraceFormatError as exc:
        if f"line {line}" not in str(exc):
            _fail(what, f"strict: the error does not name line {line}: {exc}")
    else:
        _fail(what, f"strict=True accepted the malformed line {line}")


def _hostile_files(source: Path, tmp: Path) -> dict[str, Path]:
    """Files no loader may crash on (built from the valid ``source``)."""
    text = _text(source)
    first = text.split(b"\n", 1)[0] + b"\n"
    random = np.random.default_rng(0).integers(1, 256, 4096, dtype=np.uint8).tobytes()
    files = {
        "empty": b"",
        "blank": b"\n \n\t\n",
        "binary": b"\x00\x01\x02\x03binary\x00" * 64,
        "random bytes": random,
        "truncated gzip": gzip.compress(text)[: max(20, len(gzip.compress(text)) // 2)],
        "latin-1": text.replace(b"\n", b"\xe9\n", 1),
        "quoted": b"\n".join(b'"' + ln + b'"' for ln in text.splitlines()) + b"\n",
        "first line only": first,
        "cr only": text.replace(b"\n", b"\r"),
    }
    paths = {}
    for name, data in files.items():
        path = tmp / f"hostile-{name.replace(' ', '-')}.txt"
        path.write_bytes(data)
        paths[name] = path
    parquet = tmp / "hostile-parquet.txt"
    pl.DataFrame({"a": [1, 2]}).write_parquet(parquet)
    paths["parquet"] = parquet
    return paths


def _check_hostile(
    read: Callable[..., LoadResult],
    path: Path,
    name: str,
    opts: TraceOptions,
    kwargs: Mapping[str, Any],
    what: str,
) -> None:
    try:
        result = read(path, options=opts, **kwargs)
    except TraceFormatError as exc:
        if path.name not in str(exc):
            _fail(what, f"{name} file: the error does not name the file: {exc}")
        return
    except Exception as exc:  # any other exception is the failure
        _fail(what, f"{name} file: {type(exc).__name__} ({exc}), expected TraceFormatError")
    _check_result(result, what, f"{name} file")
