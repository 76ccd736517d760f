"""Run an experiment spec: every policy on exactly the same jobsets, resumably, in parallel.

Layout of an experiment directory ``out/``::

    spec.toml            the spec as written (copy)
    spec.json            the resolved spec (seeds, absolute paths, skipped optional policies)
    environment.json     versions of Python, schedlab and its dependencies; CPU count
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
jobsets. Runs execute through an :class:`~schedlab.evaluation.executors.Executor`: by default
this process plus up to ``workers − 1`` spawned worker processes, started only when the work
left is long enough to pay for them (:class:`~schedlab.evaluation.executors.LocalExecutor`),
serially for one worker or a couple of runs. SIGINT or SIGTERM stops the workers within about
a second, keeps the completed runs and raises :class:`~schedlab.errors.Interrupted`; a failing
run is recorded in ``errors/`` and the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab import __version__, interrupts, io
from schedlab.errors import Interrupted, OutputError
from schedlab.evaluation.collect import collect_runs, run_summaries
from schedlab.evaluation.executors import BatchOutcome, Executor, LocalExecutor, SerialExecutor
from schedlab.evaluation.runs import RunTask, is_done, jobsets_path, plan, workload_fingerprint
from schedlab.evaluation.spec import ExperimentSpec, WorkloadSpec
from schedlab.jobset import JobSet

MIN_PARALLEL_RUNS = 3
"""Fewer pending runs than this run serially (worker start-up would not pay off)."""


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
    """Versions of Python, schedlab and its declared dependencies, platform and CPU count."""
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
    return {
        "schedlab": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "packages": packages,
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
    executor: Executor | None = None,
) -> Outcome:
    """Run every run of ``spec`` not yet done into ``out_dir``; see the module docstring.

    Parameters
    ----------
    spec
        A resolved spec (:func:`~schedlab.evaluation.spec.load_spec`).
    out_dir
        The experiment directory (created if missing).
    workers
        Processes running runs, this one included; default: the CPUs this process may use.
        With 1, or fewer than :data:`MIN_PARALLEL_RUNS` pending runs, runs execute here only.
    progress
        Show a progress bar over completed runs, and each run's warnings as one line.
    force
        Replace an experiment of a different spec in ``out_dir`` (see :func:`check_directory`).
    executor
        Where runs execute (default: chosen from ``workers``, see above); it is closed here.

    Raises
    ------
    OutputError
        ``out_dir`` holds the runs of a different spec and ``force`` is not set.
    Interrupted
        SIGINT or SIGTERM arrived: completed runs are kept; run again to resume.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    check_size(spec)
    replaced = check_directory(spec, out, force=force)
    tasks = plan(spec, out)
    pending = [t for t in tasks if not is_done(t)]
    executor = executor or default_executor(workers, len(pending))
    done: list[str] = []
    try:
        with interrupts.guard():
            out.mkdir(parents=True, exist_ok=True)
            _remove_partial_files(out)
            _write_header(spec, out)
            for w in spec.workloads:
                make_jobsets(w, jobsets_path(out, w))
            failures, said = _run(executor, tasks, pending, spec.name, progress, done)
    except KeyboardInterrupt as exc:
        executor.cancel()
        _remove_partial_files(out)
        name = getattr(exc, "signal", "SIGINT")
        msg = (
            f"interrupted by {name} after {len(tasks) - len(pending) + len(done)} of {len(tasks)} "
            f"runs ({len(done)} now); run the same command again to resume"
        )
        raise Interrupted(msg, name) from exc
    finally:
        executor.close()
    write_combined(spec, out)
    tally = Outcome.tally(out, len(tasks), len(pending), failures, t0)
    return Outcome(**tally, warnings=said, replaced=replaced)


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_executor(workers: int | None, n_pending: int) -> Executor:
    """Serial for one worker or fewer than :data:`MIN_PARALLEL_RUNS` runs, else this process
    plus ``workers − 1`` helpers (never more processes than runs)."""
    n = min(workers or available_cpus(), n_pending)
    if n <= 1 or n_pending < MIN_PARALLEL_RUNS:
        return SerialExecutor()
    return LocalExecutor(helpers=n - 1)


def _run(
    executor: Executor,
    tasks: list[RunTask],
    pending: list[RunTask],
    name: str,
    progress: bool,
    done: list[str],
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Execute ``pending``; returns failures (run id -> error) and warnings (one line each)."""
    from tqdm import tqdm

    for t in pending:
        Path(t.error_path).unlink(missing_ok=True)
    failures: dict[str, str] = {}
    said: list[str] = []
    bar = tqdm(total=len(tasks), initial=len(tasks) - len(pending), desc=name, unit="run",
               disable=not progress or None)  # fmt: skip
    with bar:
        executor.submit(pending)
        for result in executor.as_completed():
            done.append(result.run_id)
            if result.error:
                failures[result.run_id] = result.error
            for w in result.warnings:
                said.append(f"{result.run_id}: {w}")
                if progress:
                    bar.write(f"warning: {said[-1]}")
            bar.update()
            interrupts.check()  # an interrupt whose exception was discarded during that run
    return failures, tuple(said)


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
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True))
                for d in _differences(a, b, f"{where}[{i}]")]  # fmt: skip
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
