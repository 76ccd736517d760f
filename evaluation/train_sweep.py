"""Training sweeps: one training run per seed (and per point of a small grid), in parallel.

``schedlab train deeprm --seeds 0-4 --grid lr=0.001,0.0003 -o OUT`` trains every (grid point,
seed) with a registered trainer (:data:`schedlab.registry.trainers`) on a backend
(:func:`~schedlab.evaluation.backends.make_backend`: this machine's processes, or Ray) and
writes::

    OUT/config.json         the sweep: trainer, base config ("train_config"), seeds, grid, runs
    OUT/<run>/              one ordinary training run directory per (point, seed), e.g.
                            OUT/lr0.001_seed3/ (config.json, curve.csv, best.pt, ...)
    OUT/<run>/sweep_run.json  written last: the run is complete (its best and final values)
    OUT/errors/<run>.json   a failed run: error and traceback (removed when it succeeds)
    OUT/runs.csv            one row per run: point, seed, status, final and best values
    OUT/summary.csv         one row per grid point: mean and confidence interval over seeds

A run directory is written where the run trains when the backend is local; on Ray the run
trains in a temporary directory of its worker node, seeded with the files the run directory
already holds (to resume it), and its files come back to ``OUT/<run>/`` on this machine: no
shared filesystem is needed. A run whose ``sweep_run.json`` matches its config is skipped; a run
cut short resumes from its training state (:data:`STATE`), so an interrupted sweep
resumes where it stopped. A failing run is recorded and the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab import interrupts, io
from schedlab.errors import Interrupted, OutputError
from schedlab.evaluation.backends import (
    Backend,
    BatchOutcome,
    available_cpus,
    make_backend,
    one_line,
    run_batch,
)
from schedlab.evaluation.sweep_runs import (
    SweepRun,
    is_complete,
    mark_complete,
    sweep_record,
)
from schedlab.evaluation.sweep_tables import SweepTables, write_tables
from schedlab.params import flat
from schedlab.policies.training import STATE, TrainResult


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainOutput:
    """What training one run gave; picklable, sent back by a worker."""

    result: TrainResult | None = None
    """The trainer's result; None if the run failed."""
    error: str | None = None
    """One-line error of a failed run."""
    traceback: str | None = None
    """Its traceback."""
    files: dict[str, bytes] | None = None
    """The run directory's files (relative path -> content) of a run trained elsewhere."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepOutcome(BatchOutcome):
    """What :func:`run_sweep` did (the runs of its seeds and grid, in its sweep directory)."""

    tables: SweepTables
    """The sweep's tables after this call (also in ``runs.csv`` and ``summary.csv``)."""


def train_in(trainer: str, config: Any, run_dir: str) -> TrainOutput:
    """Train one run in ``run_dir`` with ``trainer`` (resuming from :data:`STATE` if
    there); an error is returned, not raised, so the sweep goes on. Runs in a worker."""
    try:
        from schedlab.registry import trainers

        resume = (Path(run_dir) / STATE).is_file()
        result = trainers.load(trainer).train(config, run_dir, resume=resume, progress=False)
        return TrainOutput(result=result)
    except Exception as exc:
        if (name := interrupts.requested()) is not None:
            raise Interrupted(f"interrupted by {name}", name) from exc
        return TrainOutput(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


def train_shipped(trainer: str, config: Any, files: dict[str, bytes]) -> TrainOutput:
    """:func:`train_in` in a temporary directory seeded with ``files`` (the run directory's
    files, to resume); returns the directory's files too. Runs on a Ray worker node."""
    with tempfile.TemporaryDirectory(prefix="schedlab-train-") as tmp:
        write_files(Path(tmp), files)
        out = train_in(trainer, config, tmp)
        return dataclasses.replace(out, files=read_files(Path(tmp)))


def read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``: relative POSIX path -> content."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative path -> content) under ``folder``, each atomically."""
    for name, data in files.items():
        with io.atomic_path(folder / name) as tmp:
            tmp.write_bytes(data)


def check_sweep_directory(out: Path, sweep: Mapping[str, Any], *, resume: bool) -> None:
    """Refuse to mix sweeps: a directory holding a sweep needs ``resume`` and the same trainer,
    seeds and grid; ``resume`` needs a sweep there.

    Raises
    ------
    OutputError
        Naming what differs and how to proceed.
    """
    path = out / "config.json"
    saved = json.loads(path.read_text()) if path.is_file() else None
    if saved is None or "sweep" not in saved:
        if resume:
            msg = (
                f"--resume: {out} holds no training sweep (no sweep in config.json); drop --resume"
            )
            raise OutputError(msg)
        if saved is not None:
            msg = f"{out} holds a single training run; choose another directory for a sweep"
            raise OutputError(msg)
        return
    if not resume:
        msg = f"{out} already holds a training sweep; pass --resume or choose another directory"
        raise OutputError(msg)
    old = {k: saved.get(k) for k in ("trainer", "sweep")}
    new = json.loads(json.dumps({k: sweep[k] for k in ("trainer", "sweep")}, default=str))
    if old != new:
        msg = (
            f"--resume: {out} holds another sweep ({old['trainer']}, {old['sweep']}); this one "
            f"is ({new['trainer']}, {new['sweep']}); choose another directory"
        )
        raise OutputError(msg)


def run_sweep(
    trainer: str,
    runs: Sequence[SweepRun],
    out_dir: str | Path,
    *,
    base: Mapping[str, Any],
    backend: str | Backend = "local",
    address: str | None = None,
    workers: int | None = None,
    resume: bool = False,
    progress: bool = True,
    on_done: Callable[[Path, SweepRun, Any], object] | None = None,
) -> SweepOutcome:
    """Train every run of ``runs`` not complete yet into ``out_dir`` (see the module docstring).

    Parameters
    ----------
    trainer
        Registered trainer name.
    runs
        From :func:`plan_sweep`.
    out_dir
        The sweep directory.
    base
        The base config (before seeds and grid), saved as ``"train_config"`` for ``--resume``.
    backend, address, workers
        Where runs train (:func:`~schedlab.evaluation.backends.make_backend`), or a backend
        itself (closed here); local ``workers`` default to the CPUs this process may use
        divided by the runs' torch ``threads``.
    resume
        Continue the sweep in ``out_dir`` (required when it holds one).
    progress
        Show a progress bar over runs.
    on_done
        Called as ``on_done(run_dir, run, result)`` here once a run is complete (e.g. to draw
        its learning report into ``run_dir``).

    Raises
    ------
    OutputError
        ``out_dir`` holds another sweep, or a sweep without ``resume``.
    Interrupted
        SIGINT or SIGTERM: complete runs are kept, running ones stopped; ``resume`` continues.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    sweep = sweep_record(trainer, runs, base)
    check_sweep_directory(out, sweep, resume=resume)
    pending = [r for r in runs if not is_complete(r, out)]
    local_workers = workers or max(1, available_cpus() // max(map(_cpus, runs)))
    runs_on = (
        backend
        if not isinstance(backend, str)
        else make_backend(
            backend,
            address=address,
            n_tasks=len(pending),
            workers=local_workers if backend == "local" else workers,
        )
    )
    by_name = {r.name: r for r in pending}

    def start() -> None:
        _submit(runs_on, trainer, pending, out)
        # written once the backend took the runs: one that cannot start leaves no sweep
        io.write_text_atomic(out / "config.json", json.dumps(sweep, indent=2, default=str))

    def take(name: str, output: Any, error: BaseException | None) -> str | None:
        if error is not None:  # the worker died, or Ray lost the task
            output = TrainOutput(error=f"{type(error).__name__}: {error}", traceback=str(error))
        if output.files:
            write_files(out / name, output.files)
        if output.error is not None:
            _record_failure(by_name[name], output, out)
            return one_line(output.error)
        mark_complete(by_name[name], output.result, out)
        return None

    def then(name: str, output: TrainOutput) -> None:
        if on_done is not None:
            on_done(out / name, by_name[name], output.result)

    failures = run_batch(
        runs_on,
        start,
        take,
        then=then,
        total=len(runs),
        pending=len(pending),
        noun="training runs",
        again="with --resume to continue",
        desc=f"{trainer} sweep",
        progress=progress,
    )
    tables = write_tables(runs, out)
    return SweepOutcome(
        **SweepOutcome.tally(out, len(runs), len(pending), failures, t0), tables=tables
    )


def _cpus(run: SweepRun) -> int:
    """CPUs a run uses: its torch ``threads`` (1 for a config without)."""
    return int(flat(run.config).get("threads", 1))


def _submit(backend: Backend, trainer: str, runs: Sequence[SweepRun], out: Path) -> None:
    """Submit ``runs``, their errors removed: trained in their directory, or (on a remote
    backend, Ray) elsewhere with the directory's files sent along and brought back."""
    for r in runs:
        (out / "errors" / f"{r.name}.json").unlink(missing_ok=True)
        if backend.remote:
            files = read_files(out / r.name)
            backend.submit(r.name, train_shipped, trainer, r.config, files, cpus=_cpus(r))
        else:
            backend.submit(r.name, train_in, trainer, r.config, str(out / r.name), cpus=_cpus(r))


def _record_failure(run: SweepRun, output: TrainOutput, out: Path) -> None:
    info = {
        "run": run.name,
        "seed": run.seed,
        "point": run.point,
        "error": output.error,
        "traceback": output.traceback,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    io.write_text_atomic(
        out / "errors" / f"{run.name}.json", json.dumps(info, indent=2, default=str)
    )
