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

**One run** is (workload, load, policy) and writes one Parquet file atomically (temporary file
and rename), so a run is either complete or absent. A run is *done* when its file exists and
its metadata carries the run's fingerprint (a hash of the workload, load, policy spec and
cluster geometry); re-running an experiment skips done runs, so an interrupted experiment
resumes and a changed spec re-runs only what changed.

Jobsets are generated (or loaded) once per workload, before any run, into ``jobsets/``; every
run of the workload reads that file and selects its load, so every policy sees exactly the same
jobsets. Runs execute in a :class:`~concurrent.futures.ProcessPoolExecutor` (``spawn`` start
method: polars is not fork-safe) with ``max_workers = os.cpu_count()`` by default, and a tqdm
bar over completed runs. A failing run is recorded in ``errors/`` and the others go on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import time
import traceback
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from schedlab import __version__, io
from schedlab.evaluation.spec import ExperimentSpec, WorkloadSpec
from schedlab.jobset import JobSet
from schedlab.results import Results

RUN_SCHEMA = 1
"""Version of the run-file metadata; part of every fingerprint."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunTask:
    """One (workload, load, policy) run; picklable, executed by :func:`execute`."""

    run_id: str
    """File stem of the run's results and error files."""
    workload: str
    """Workload name."""
    load: float | None
    """Offered load selected from the workload's jobsets (None: every jobset of a trace)."""
    policy: str
    """Policy name in the results."""
    spec: str
    """Policy spec string."""
    jobsets_path: str
    """The workload's JobSet file."""
    out_path: str
    """Where the results go."""
    error_path: str
    """Where a failure is recorded."""
    cluster: dict[str, int]
    """:class:`~schedlab.simulator.config.ClusterConfig` fields."""
    fingerprint: str
    """Hash of everything the run's output depends on."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What :func:`run_experiment` did."""

    out_dir: Path
    """The experiment directory."""
    n_runs: int
    """Runs in the spec."""
    skipped: int
    """Runs already done before this call."""
    ran: int
    """Runs executed successfully by this call."""
    failures: dict[str, str]
    """Run id -> one-line error of every run that failed in this call."""
    wall_s: float
    """Seconds spent, including jobset generation and the combined results."""


def _slug(text: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40]
    if clean == text:
        return clean
    return f"{clean}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def load_tag(load: float | None) -> str:
    """``1.3 -> "load130"``, ``0.0923 -> "load9.23"``; None -> ``"all"``."""
    return "all" if load is None else f"load{round(100 * load, 4):g}"


def run_id(workload: str, load: float | None, policy: str) -> str:
    """File-name-safe id of a run, e.g. ``deeprm__load130__tetris``."""
    return f"{_slug(workload)}__{load_tag(load)}__{_slug(policy)}"


def _hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def workload_fingerprint(w: WorkloadSpec) -> str:
    """Hash of what a workload's jobsets depend on (not its name)."""
    d = {k: v for k, v in dataclasses.asdict(w).items() if k != "name"}
    return _hash([d, RUN_SCHEMA])


def plan(spec: ExperimentSpec, out_dir: str | os.PathLike[str]) -> list[RunTask]:
    """Every run of ``spec``: workloads × loads × policies, in spec order."""
    out = Path(out_dir)
    cluster = dataclasses.asdict(spec.cluster)
    tasks = []
    for w in spec.workloads:
        jobsets = out / "jobsets" / f"{_slug(w.name)}.parquet"
        for load in w.loads or (None,):
            for p in spec.policies:
                rid = run_id(w.name, load, p.name)
                fp = _hash([workload_fingerprint(w), load, p.spec, p.name, cluster, RUN_SCHEMA])
                tasks.append(
                    RunTask(
                        run_id=rid,
                        workload=w.name,
                        load=load,
                        policy=p.name,
                        spec=p.spec,
                        jobsets_path=str(jobsets),
                        out_path=str(out / "runs" / f"{rid}.parquet"),
                        error_path=str(out / "errors" / f"{rid}.json"),
                        cluster=cluster,
                        fingerprint=fp,
                    )
                )
    ids = [t.run_id for t in tasks]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        msg = f"run ids collide: {dup[:5]}; give workloads and policies distinct names"
        raise ValueError(msg)
    return tasks


def run_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``run`` metadata of a run file (without reading its table); {} if unreadable."""
    if not Path(path).is_file():
        return {}
    try:
        meta = json.loads(pl.read_parquet_metadata(path).get(io.METADATA_KEY, "{}"))
    except Exception:  # an unreadable file is not done; it is overwritten
        return {}
    return meta.get("run", {}) if isinstance(meta, dict) else {}


def is_done(task: RunTask) -> bool:
    """True if the run's file exists and its metadata carries the task's fingerprint."""
    run = run_meta(task.out_path)
    return run.get("fingerprint") == task.fingerprint and run.get("complete") is True


def make_jobsets(w: WorkloadSpec, path: Path) -> JobSet:
    """Generate or load the jobsets of ``w`` and write them to ``path`` (reused if current)."""
    fp = workload_fingerprint(w)
    if path.is_file():
        js = JobSet.read_parquet(path)
        if js.meta.provenance.get("workload_fingerprint") == fp:
            return js
    if w.generator is not None:
        from schedlab.registry import generators

        js = generators.make(w.generator, **w.params).generate_sweep(
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


def execute(task: RunTask) -> tuple[str, str | None]:
    """Run one task; on failure write ``errors/<id>.json``. Returns ``(run_id, error or None)``."""
    t0 = time.perf_counter()
    try:
        from schedlab.registry import make_policy
        from schedlab.simulator.config import ClusterConfig
        from schedlab.simulator.run import simulate

        js = JobSet.read_parquet(task.jobsets_path)
        if task.load is not None:
            jobs = js.jobs.filter(pl.col("load").is_close(task.load))  # type: ignore[attr-defined]
            js = JobSet(jobs, js.meta)
        policy = make_policy(task.spec)
        policy.name = task.policy
        res = simulate(js, [policy], ClusterConfig(**task.cluster))
        table = res.table.with_columns(pl.lit(task.workload).alias("workload"))
        run = {
            **dataclasses.asdict(task),
            "wall_s": time.perf_counter() - t0,
            "n_jobs": table.height,
            "n_jobsets": len(js.jobset_ids),
            "complete": True,
        }
        Results(table, {**res.meta, "run": run}).write_parquet(task.out_path)
        return task.run_id, None
    except Exception as exc:
        record_failure(task, exc, traceback.format_exc(), time.perf_counter() - t0)
        return task.run_id, f"{type(exc).__name__}: {exc}"


def record_failure(task: RunTask, exc: BaseException, tb: str, wall_s: float) -> None:
    """Write ``errors/<id>.json`` for ``task`` (atomically)."""
    info = {
        **dataclasses.asdict(task),
        "error": type(exc).__name__,
        "message": str(exc),
        "traceback": tb,
        "wall_s": wall_s,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    io.write_text_atomic(task.error_path, json.dumps(info, indent=2, default=str))


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


def run_experiment(
    spec: ExperimentSpec,
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    progress: bool = True,
) -> Outcome:
    """Run every run of ``spec`` not yet done into ``out_dir``; see the module docstring.

    Parameters
    ----------
    spec
        A resolved spec (:func:`~schedlab.evaluation.spec.load_spec`).
    out_dir
        The experiment directory (created if missing).
    workers
        Worker processes; default ``os.cpu_count()``. With 1, or a single pending run, runs
        execute in this process.
    progress
        Show a tqdm progress bar over completed runs.
    """
    from tqdm import tqdm

    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_header(spec, out)
    tasks = plan(spec, out)
    for w in spec.workloads:
        make_jobsets(w, out / "jobsets" / f"{_slug(w.name)}.parquet")
    pending = [t for t in tasks if not is_done(t)]
    for t in pending:
        Path(t.error_path).unlink(missing_ok=True)
    failures: dict[str, str] = {}
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(pending)))
    bar = tqdm(
        total=len(tasks),
        initial=len(tasks) - len(pending),
        desc=spec.name,
        unit="run",
        disable=not progress or None,
    )
    with bar:
        if n_workers == 1:
            for t in pending:
                _, err = execute(t)
                if err:
                    failures[t.run_id] = err
                bar.update()
        else:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
                futures = {pool.submit(execute, t): t for t in pending}
                for fut in as_completed(futures):
                    err = _result(fut, futures[fut])
                    if err:
                        failures[futures[fut].run_id] = err
                    bar.update()
    write_combined(spec, out)
    return Outcome(
        out_dir=out,
        n_runs=len(tasks),
        skipped=len(tasks) - len(pending),
        ran=len(pending) - len(failures),
        failures=failures,
        wall_s=time.perf_counter() - t0,
    )


def _result(fut: Future, task: RunTask) -> str | None:
    try:
        return fut.result()[1]
    except Exception as exc:  # the worker process died (BrokenProcessPool) or could not pickle
        record_failure(task, exc, traceback.format_exc(), 0.0)
        return f"{type(exc).__name__}: {exc}"


def write_combined(spec: ExperimentSpec, out: Path) -> None:
    """Write ``results.parquet`` (every done run) and ``runs.csv`` (one row per run)."""
    from schedlab.evaluation.collect import collect_runs, run_summaries

    results = collect_runs(spec, out)
    if results is not None:
        results.write_parquet(out / "results.parquet")
    with io.atomic_path(out / "runs.csv") as tmp:
        run_summaries(spec, out, results).write_csv(tmp)
