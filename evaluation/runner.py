"""Run an experiment spec: every policy on exactly the same jobsets, resumably, in parallel.

Layout of an experiment directory ``out/``::

    spec.toml            the spec as written (copy)
    spec.json            the resolved spec (seeds, absolute paths, skipped optional policies)
    environment.json     versions of Python, schedlab, its dependencies and plug-ins; CPU count
    jobsets/<w>.parquet  the jobsets of workload w (all loads), generated or loaded once
    runs/<id>.parquet    per-job results of one run, metadata ``run`` (written atomically)
    errors/<id>.json     a failed run: error and traceback (removed when the run succeeds)
    results.parquet      per-job results of every completed run, with a ``workload`` column
    runs.csv             per-run summary: status, jobsets, jobs, mean metrics, wall time
    replaced/<time>/     what ``force`` moved aside: the runs of a previous, different spec

**One run** is (workload, load, policy) and writes one Parquet file atomically (temporary file
and rename), so a run is either complete or absent. A run is *done* when its file exists and
its metadata carries the run's fingerprint (a hash of the workload, load, policy spec and
cluster geometry); re-running the same spec skips done runs, so an interrupted experiment
resumes. A directory holding the runs of a *different* spec is refused (old and new runs are
never mixed silently) unless ``force``: then every file of the old spec that the new one would
not reproduce identically is moved to ``replaced/<time>/`` and the rest is kept.

Jobsets are generated (or loaded) once per workload, before any run, into ``jobsets/``; every
run of the workload reads that file and selects its load, so every policy sees exactly the same
jobsets. Runs execute on a :class:`~schedlab.evaluation.backends.Backend`
(:func:`~schedlab.evaluation.backends.run_batch`): by default this process plus up to
``workers − 1`` spawned worker processes, started only when the work left is long enough to
pay for them (:class:`~schedlab.evaluation.backends.LocalBackend` with ``here``), serially for
one worker; or Ray, where each (workload, load)'s jobsets go into the object store once and the
runs' files are written here. SIGINT or SIGTERM stops the workers within about a second, keeps
the completed runs and raises :class:`~schedlab.errors.Interrupted`; a failing run is recorded
in ``errors/`` and the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab import __version__, io
from schedlab.errors import Interrupted, OutputError
from schedlab.evaluation.backends import Backend, BatchOutcome, make_backend, one_line, run_batch
from schedlab.evaluation.collect import collect_runs, run_summaries
from schedlab.evaluation.runs import (
    RunOutput,
    RunResult,
    RunTask,
    announce_long,
    compute,
    execute,
    is_done,
    jobsets_path,
    plan,
    record_failure,
    select_load,
    workload_fingerprint,
)
from schedlab.evaluation.spec import ExperimentSpec, WorkloadSpec
from schedlab.jobset import JobSet
from schedlab.registry import GROUPS


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome(BatchOutcome):
    """What :func:`run_experiment` did (the runs of its spec, in its experiment directory)."""

    warnings: tuple[str, ...] = ()
    """``"<run id>: <warning>"`` for every warning a run gave in this call, one line each."""
    replaced: Path | None = None
    """Where ``force`` moved the files of a previous, different spec (None: nothing moved)."""


def make_jobsets(w: WorkloadSpec, path: Path) -> JobSet:
    """Generate or load the jobsets of ``w`` and write them to ``path`` (reused if current)."""
    fp = workload_fingerprint(w)
    if path.is_file():
        js = JobSet.read_parquet(path)
        if js.meta.provenance.get("workload_fingerprint") == fp:
            return js
    if w.generator is not None:
        from schedlab.registry import generators

        js = generators.create(w.generator, w.params).generate_sweep(
            list(w.loads), n_jobsets=w.jobsets, seed=w.seed
        )
    elif w.loader == "jobset":
        js = JobSet.read_parquet(w.path)  # type: ignore[arg-type]
    else:
        from schedlab.loaders.traces.load import load_trace
        from schedlab.loaders.traces.transform import TraceOptions

        options = TraceOptions(**{"seed": w.seed, **w.options})
        js = load_trace(w.loader, w.path, options=options, **w.params)[0].jobs  # type: ignore[arg-type]
    provenance = {**js.meta.provenance, "workload": w.name, "workload_fingerprint": fp}
    js = JobSet(js.jobs, dataclasses.replace(js.meta, provenance=provenance))
    js.write_parquet(path)
    return js


def environment() -> dict[str, Any]:
    """Versions of Python, schedlab and its declared dependencies, platform and CPU count, and
    the installed plug-in distributions (entry points of :data:`schedlab.registry.GROUPS`)."""
    import platform
    import sys
    from importlib import metadata

    try:
        reqs = metadata.requires("schedlab") or []
    except metadata.PackageNotFoundError:
        reqs = []
    names = [re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0] for r in reqs if "extra ==" not in r]
    packages: dict[str, str | None] = {}
    for name in names:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    plugins = {
        ep.dist.name: ep.dist.version
        for group in GROUPS.values()
        for ep in metadata.entry_points(group=group)
        if ep.dist is not None
    }
    return {
        "schedlab": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "packages": packages,
        "plugins": dict(sorted(plugins.items())),
    }


def _write_header(spec: ExperimentSpec, out: Path) -> None:
    src = Path(spec.source) if spec.source else None
    if src is not None and src.is_file() and src.resolve() != (out / "spec.toml").resolve():
        with io.atomic_path(out / "spec.toml") as tmp:
            shutil.copyfile(src, tmp)
    io.write_text_atomic(out / "spec.json", json.dumps(spec.to_json(), indent=2, default=str))
    io.write_text_atomic(out / "environment.json", json.dumps(environment(), indent=2))


def check_size(spec: ExperimentSpec) -> None:
    """Refuse (:class:`~schedlab.errors.SizeError`) a spec whose generated workloads, with the
    results of every policy on them, cannot fit in memory, before any work."""
    from schedlab.registry import generators

    for w in spec.workloads:
        if w.generator is not None:
            gen = generators.create(w.generator, w.params)
            gen.check_size(list(w.loads), w.jobsets, results=len(spec.policies))


def run_experiment(
    spec: ExperimentSpec,
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    progress: bool = True,
    force: bool = False,
    backend: str | Backend = "local",
    address: str | None = None,
) -> Outcome:
    """Run every run of ``spec`` not yet done into ``out_dir``; see the module docstring.

    Parameters
    ----------
    spec
        A resolved spec (:func:`~schedlab.evaluation.spec.load_spec`).
    out_dir
        The experiment directory (created if missing).
    workers
        Local: processes running runs, this one included; default: the CPUs this process may
        use. With 1, or few short runs, runs execute here only. Ray: the CPUs of a local
        instance.
    progress
        Show a progress bar over completed runs, and each run's warnings as one line.
    force
        Replace an experiment of a different spec in ``out_dir`` (see :func:`check_directory`).
    backend, address
        Where runs execute (:func:`~schedlab.evaluation.backends.make_backend`), or a backend
        itself; it is closed here.

    Raises
    ------
    OutputError
        ``out_dir`` holds the runs of a different spec and ``force`` is not set.
    Interrupted
        SIGINT or SIGTERM arrived: completed runs are kept; run again to resume.
    """
    from tqdm import tqdm

    t0 = time.perf_counter()
    out = Path(out_dir)
    check_size(spec)
    replaced = check_directory(spec, out, force=force)
    tasks = plan(spec, out)
    pending = {t.run_id: t for t in tasks if not is_done(t)}
    runs_on = (
        backend
        if not isinstance(backend, str)
        else make_backend(
            backend, workers=workers, address=address, n_tasks=len(pending), here=True
        )
    )
    said: list[str] = []

    def start() -> None:
        out.mkdir(parents=True, exist_ok=True)
        _remove_partial_files(out)
        _write_header(spec, out)
        for w in spec.workloads:
            make_jobsets(w, jobsets_path(out, w))
        if progress:
            announce_long(pending.values(), tqdm.write)
        _submit(runs_on, pending.values())

    def take(run_id: str, value: Any, error: BaseException | None) -> str | None:
        result = _result(pending[run_id], value, error)
        for w in result.warnings:
            said.append(f"{run_id}: {w}")
            if progress:
                tqdm.write(f"warning: {said[-1]}")
        return result.error

    try:
        failures = run_batch(
            runs_on,
            start,
            take,
            total=len(tasks),
            pending=len(pending),
            noun="runs",
            again="again to resume",
            desc=spec.name,
            progress=progress,
        )
    except Interrupted:
        _remove_partial_files(out)
        raise
    write_combined(spec, out)
    tally = Outcome.tally(out, len(tasks), len(pending), failures, t0)
    return Outcome(**tally, warnings=tuple(said), replaced=replaced)


def _submit(backend: Backend, pending: Iterable[RunTask]) -> None:
    """Submit the runs ``pending`` (grouped by policy spec), their errors removed: each
    executed where its files are, or, on a remote backend, computed with its load's jobsets
    from the object store (put once per (workload, load), read from its file once)."""
    workloads: dict[str, JobSet] = {}
    jobsets: dict[tuple[str, float | None], Any] = {}
    for t in pending:
        Path(t.error_path).unlink(missing_ok=True)
        if not backend.remote:
            backend.submit(t.run_id, execute, t, group=t.spec)
            continue
        key = (t.jobsets_path, t.load)
        if key not in jobsets:
            if t.jobsets_path not in workloads:
                workloads[t.jobsets_path] = JobSet.read_parquet(t.jobsets_path)
            jobsets[key] = backend.put(select_load(workloads[t.jobsets_path], t.load))
        backend.submit(t.run_id, compute, t, jobsets[key], group=t.spec)


def _result(task: RunTask, value: Any, error: BaseException | None) -> RunResult:
    """The result of ``task``: written here if it was computed elsewhere; an error of the
    backend (a worker that died) recorded as the run's failure."""
    if error is not None:
        record_failure(task, error, "".join(traceback.format_exception(error)), 0.0)
        return RunResult(run_id=task.run_id, error=one_line(f"{type(error).__name__}: {error}"))
    return value.write() if isinstance(value, RunOutput) else value


def _remove_partial_files(out: Path) -> None:
    """Temporary files of atomic writes cut short (a killed worker); one runner per directory."""
    for folder in ("runs", "errors", "jobsets"):
        for tmp in (out / folder).glob(".*.tmp"):
            tmp.unlink(missing_ok=True)


def check_directory(spec: ExperimentSpec, out: Path, *, force: bool = False) -> Path | None:
    """Make sure running ``spec`` into ``out`` mixes no runs of another spec.

    ``out`` may be new, or hold the same spec's runs (resume: the run set and every run's
    fingerprint are unchanged; presentation settings such as ``[report]`` may change). Any other
    experiment there is refused, naming what differs, unless ``force``: then the files of the
    old spec that the new one would not reproduce identically (runs, errors, jobsets, the old
    spec and combined results) are moved to ``out/replaced/<time>/``, which is returned.
    """
    old_path = out / "spec.json"
    if not old_path.is_file():
        return None
    try:
        old = ExperimentSpec.from_json(json.loads(old_path.read_text()))
        before = {t.run_id: t.fingerprint for t in plan(old, out)}
        changes = _differences(old.to_json(), spec.to_json())
    except (OSError, ValueError, KeyError, TypeError):
        old, before, changes = None, {}, ["spec.json is unreadable"]
    after = {t.run_id: t.fingerprint for t in plan(spec, out)}
    if before == after:
        return None
    if not force:
        what = "another experiment" if old is None else f"experiment {old.name!r}"
        msg = (
            f"{out} holds {what} of a different spec ({'; '.join(changes[:3])}); "
            "run its own spec to resume it, choose another -o, or pass --force to replace it "
            f"(its runs the new spec does not reproduce are moved to {out / 'replaced'}/)"
        )
        raise OutputError(msg)
    keep = {rid for rid, fp in after.items() if before.get(rid) == fp}
    fingerprints = {jobsets_path(out, w).name: workload_fingerprint(w) for w in spec.workloads}
    return _move_aside(out, keep, fingerprints)


def _move_aside(out: Path, keep: set[str], fingerprints: dict[str, str]) -> Path:
    """Move everything but the runs in ``keep`` and current jobsets to ``out/replaced/<time>``."""
    dest = out / "replaced" / time.strftime("%Y%m%d-%H%M%S")
    moves = [out / n for n in ("spec.toml", "spec.json", "results.parquet", "runs.csv")]
    for folder in ("runs", "errors"):
        moves += [p for p in (out / folder).glob("*") if p.stem not in keep]
    for p in (out / "jobsets").glob("*.parquet"):
        current = fingerprints.get(p.name)
        if current is None or _jobsets_fingerprint(p) != current:
            moves.append(p)
    for p in moves:
        if p.exists():
            target = dest / p.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            p.replace(target)
    return dest


def _jobsets_fingerprint(path: Path) -> str | None:
    try:
        return JobSet.read_parquet(path).meta.provenance.get("workload_fingerprint")
    except (OSError, ValueError):
        return None


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    """``"key.path: old -> new"`` for every leaf that differs between two JSON-like values."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in dict.fromkeys([*old, *new]) if k != "source"]
        return [d for k in keys for d in _differences(old.get(k), new.get(k), f"{where}.{k}")]
    if _named(old) and _named(new):  # policies, workloads: compare by name
        a, b = ({d["name"]: d for d in x} for x in (old, new))
        gone = [f"{where.lstrip('.')}: {n!r} removed" for n in a if n not in b]
        added = [f"{where.lstrip('.')}: {n!r} added" for n in b if n not in a]
        same = [d for n in a if n in b for d in _differences(a[n], b[n], f"{where}[{n!r}]")]
        return gone + added + same
    if isinstance(old, list | tuple) and isinstance(new, list | tuple) and len(old) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in _differences(a, b, f"{where}[{i}]")
        ]
    return [] if old == new else [f"{where.lstrip('.')}: {_short(old)} -> {_short(new)}"]


def _named(value: Any) -> bool:
    items = value if isinstance(value, list | tuple) else [None]
    return all(isinstance(d, dict) and "name" in d for d in items)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def write_combined(spec: ExperimentSpec, out: Path) -> None:
    """Write ``results.parquet`` (every done run) and ``runs.csv`` (one row per run)."""
    results = collect_runs(spec, out)
    if results is not None:
        results.write_parquet(out / "results.parquet")
    with io.atomic_path(out / "runs.csv") as tmp:
        run_summaries(spec, out, results).write_csv(tmp)
