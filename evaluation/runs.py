"""Runs of an experiment: planning, identity (fingerprints), and executing one run.

This is the half of the runner that worker processes import, so it imports only what one run
needs (the JobSet, the simulator through the policy registry); it knows the spec only by type.
Layout of the files it reads and writes: :mod:`schedlab.evaluation.runner`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab import interrupts, io
from schedlab.code_versions import code_version
from schedlab.errors import Interrupted
from schedlab.jobset import JobSet
from schedlab.registry import generators, loaders, policies, policy_name
from schedlab.results import Results

if TYPE_CHECKING:
    from schedlab.evaluation.spec import ExperimentSpec, WorkloadSpec

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
    cluster: dict[str, Any]
    """Fields of the config of the model kind the policy acts on (``[cluster]``; a
    :class:`~schedlab.simulator.config.ClusterConfig`'s for the cluster model)."""
    fingerprint: str
    """Hash of everything the run's output depends on."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunResult:
    """What executing one :class:`RunTask` gave."""

    run_id: str
    """The task's run id."""
    error: str | None = None
    """One-line error of a failed run (its traceback is in ``errors/<id>.json``), else None."""
    warnings: tuple[str, ...] = ()
    """Warnings the run gave, one line each (also in the run file's metadata)."""


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
    """Hash of what a workload's jobsets depend on (not its name, nor the cluster its runs
    simulate, which is part of each run's fingerprint)."""
    d = {k: v for k, v in dataclasses.asdict(w).items() if k not in ("name", "cluster")}
    return _hash([d, RUN_SCHEMA])


def checkpoint_digest(spec: str) -> str | None:
    """SHA-256 of the checkpoint file the policy ``spec`` runs, or None for a spec without one:
    part of the run's fingerprint, so a checkpoint replaced under the same name or path makes
    its runs stale instead of silently reusing results of the old weights."""
    from schedlab.policies.shipped import checkpoint_path, resolve_checkpoint

    ckpt = checkpoint_path(spec)
    if ckpt is None:
        return None
    path = resolve_checkpoint(ckpt)
    return io.sha256(path) if path.is_file() else None


def plugin_code(spec: str, w: WorkloadSpec) -> list[str]:
    """The code versions (:func:`~schedlab.code_versions.code_version`) of a run's policy, generator
    and loader that are plug-ins or references: part of the run's fingerprint, so a run made
    with another version of them is run again, never reused."""
    found = [
        code_version(registry, name)
        for registry, name in (
            (policies, policy_name(spec)),
            (generators, w.generator),
            (loaders, w.loader),
        )
        if name and name in registry  # (a JobSet file's "loader" is none of the registry's)
    ]
    return [c for c in found if c is not None]


def jobsets_path(out: Path, w: WorkloadSpec) -> Path:
    """Where the jobsets of workload ``w`` are kept in the experiment directory ``out``."""
    return out / "jobsets" / f"{_slug(w.name)}.parquet"


def plan(spec: ExperimentSpec, out_dir: str | os.PathLike[str]) -> list[RunTask]:
    """Every run of ``spec``: workloads × loads × policies, in spec order (a policy restricted
    to some workloads runs on those only; a workload's ``cluster`` fields replace the spec's)."""
    out = Path(out_dir)
    digests: dict[str, str | None] = {}
    tasks = []
    for w in spec.workloads:
        cluster = {**dataclasses.asdict(spec.cluster), **w.cluster}
        for load in w.loads or (None,):
            for p in spec.policies:
                if p.workloads and w.name not in p.workloads:
                    continue
                rid = run_id(w.name, load, p.name)
                parts = [workload_fingerprint(w), load, p.spec, p.name, cluster, RUN_SCHEMA]
                digest = digests.setdefault(p.spec, checkpoint_digest(p.spec))
                extra = [*([digest] if digest is not None else []), *plugin_code(p.spec, w)]
                fp = _hash([*parts, *extra])
                tasks.append(
                    RunTask(
                        run_id=rid,
                        workload=w.name,
                        load=load,
                        policy=p.name,
                        spec=p.spec,
                        jobsets_path=str(jobsets_path(out, w)),
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
        meta = json.loads(pl.read_parquet_metadata(Path(path)).get(io.METADATA_KEY, "{}"))
    except Exception:  # an unreadable file is not done; it is overwritten
        return {}
    return meta.get("run", {}) if isinstance(meta, dict) else {}


def is_done(task: RunTask) -> bool:
    """True if the run's file exists and its metadata carries the task's fingerprint."""
    run = run_meta(task.out_path)
    return run.get("fingerprint") == task.fingerprint and run.get("complete") is True


@functools.lru_cache(maxsize=2)
def _read_jobsets(path: str, _mtime_ns: int, _size: int) -> JobSet:
    return JobSet.read_parquet(path)


def read_jobsets(task: RunTask) -> JobSet:
    """The jobsets of ``task`` (its load only), read once per file version and process."""
    st = os.stat(task.jobsets_path)
    return select_load(_read_jobsets(task.jobsets_path, st.st_mtime_ns, st.st_size), task.load)


def select_load(js: JobSet, load: float | None) -> JobSet:
    """The jobsets of ``js`` generated for offered ``load`` (None: all of them)."""
    if load is None:
        return js
    return JobSet(js.jobs.filter(pl.col("load").is_close(load)), js.meta)


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """A learned policy's batched inference on one torch thread (tiny networks: more threads
    only spin, and several processes may share the CPUs); the setting is restored after.
    Freed memory is kept for reuse from then on (:func:`retain_freed_memory`)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    from schedlab.policies.runtime import retain_freed_memory

    retain_freed_memory()  # a CNN's activations: reuse freed memory instead of faulting it in
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOutput:
    """One executed run, not yet written: its results, or the record of its failure.

    Picklable, so a run executed elsewhere (a Ray worker) is written by the process that owns
    the experiment directory (:meth:`write`).
    """

    task: RunTask
    """The run."""
    result: RunResult
    """What the runner is told."""
    results: Results | None = None
    """The run file's content (None when the run failed)."""
    failure: dict[str, Any] | None = None
    """The content of ``errors/<id>.json`` (None when the run succeeded)."""

    def write(self) -> RunResult:
        """Write ``runs/<id>.parquet`` or ``errors/<id>.json`` atomically; return the result.

        A run file that cannot be written (disk full, permissions) is recorded as the run's
        failure instead.
        """
        if self.results is None:
            write_failure(self.task, self.failure or {})
            return self.result
        try:
            self.results.write_parquet(self.task.out_path)
        except Exception as exc:
            wall_s = float(self.results.meta["run"]["wall_s"])
            record_failure(self.task, exc, traceback.format_exc(), wall_s)
            return RunResult(run_id=self.task.run_id, error=f"{type(exc).__name__}: {exc}")
        return self.result


def compute(task: RunTask, jobsets: JobSet | None = None) -> RunOutput:
    """Run one task without writing anything (see :func:`execute`).

    ``jobsets`` are the workload's jobsets (all loads; this run selects its own), e.g. taken
    from Ray's object store; None reads them from ``task.jobsets_path``.
    """
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            from schedlab.registry import make_policy
            from schedlab.simulator.run import simulate

            js = read_jobsets(task) if jobsets is None else select_load(jobsets, task.load)
            policy = make_policy(task.spec)
            policy.name = task.policy
            with _one_torch_thread():
                res = simulate(js, [policy], task.cluster)  # the model kind's config fields
            table = res.table.with_columns(pl.lit(task.workload).alias("workload"))
            said = tuple(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
            run = {
                **dataclasses.asdict(task),
                "wall_s": time.perf_counter() - t0,
                "n_jobs": table.height,
                "n_jobsets": len(js.jobset_ids),
                "warnings": list(said),
                "complete": True,
            }
            results = Results(table, {**res.meta, "run": run})
            return RunOutput(
                task=task, result=RunResult(run_id=task.run_id, warnings=said), results=results
            )
        except Exception as exc:
            if (name := interrupts.requested()) is not None:
                raise Interrupted(f"interrupted by {name}", name) from exc
            info = failure_record(task, exc, traceback.format_exc(), time.perf_counter() - t0)
            error = RunResult(run_id=task.run_id, error=f"{type(exc).__name__}: {exc}")
            return RunOutput(task=task, result=error, failure=info)


def execute(task: RunTask) -> RunResult:
    """Run one task: write ``runs/<id>.parquet``, or ``errors/<id>.json`` on failure.

    Warnings are captured (one line each) into the result and the run's metadata. An interrupt
    (:func:`schedlab.interrupts.guard`) is re-raised, never recorded as a failure. A learned
    policy runs on one torch thread.
    """
    return compute(task).write()


def failure_record(task: RunTask, exc: BaseException, tb: str, wall_s: float) -> dict[str, Any]:
    """The content of ``errors/<id>.json``: the task, the error, its traceback, the time."""
    return {
        **dataclasses.asdict(task),
        "error": type(exc).__name__,
        "message": str(exc),
        "traceback": tb,
        "wall_s": wall_s,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_failure(task: RunTask, info: dict[str, Any]) -> None:
    """Write ``info`` (:func:`failure_record`) to ``errors/<id>.json`` of ``task``, atomically."""
    io.write_text_atomic(task.error_path, json.dumps(info, indent=2, default=str))


def record_failure(task: RunTask, exc: BaseException, tb: str, wall_s: float) -> None:
    """Write ``errors/<id>.json`` for ``task`` (atomically)."""
    write_failure(task, failure_record(task, exc, tb, wall_s))


def warm_up() -> int:
    """Import what a run needs (in a fresh worker process); returns the process id."""
    import schedlab.simulator.run  # noqa: F401

    return os.getpid()


def announce_long(tasks: Iterable[RunTask], say: Callable[[str], None]) -> None:
    """``say`` a note for each of ``tasks`` expected to take long, with its estimate
    (:func:`schedlab.simulator.cost.estimate`), before they run; a run whose policy or cluster
    cannot be made is left to report its own error when it runs."""
    from schedlab.registry import make_policy
    from schedlab.simulator.config import ClusterConfig
    from schedlab.simulator.cost import UNINTERRUPTIBLE, estimate
    from schedlab.simulator.model import model_kind

    for t in tasks:
        try:
            policy = make_policy(t.spec)
            config = model_kind([policy]).make_config(t.cluster)
            if not isinstance(config, ClusterConfig):
                continue
            cost = estimate(read_jobsets(t), policy, config)
        except Exception:  # the run reports it when it runs
            continue
        if cost.long:
            say(f"note: {t.run_id}: {cost.describe()}; {UNINTERRUPTIBLE}")
