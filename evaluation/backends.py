"""Where units of work run: one backend interface, its factory, and the batch skeleton that
experiments (:func:`~schedlab.evaluation.runner.run_experiment`) and training sweeps
(:func:`~schedlab.evaluation.train_sweep.run_sweep`) share.

A :class:`Backend` runs picklable functions as tasks, each known by a key
(:meth:`~Backend.submit`), yields ``(key, value, None)`` or ``(key, None, error)`` per task as
each completes (:meth:`~Backend.completed`), and stops promptly on :meth:`~Backend.cancel`
(queued tasks dropped, running ones stopped). Three implementations:

* :class:`SerialBackend` calls each function in this process, in submission order;
* :class:`LocalBackend` runs them in ``workers`` spawned worker processes (``spawn``: polars is
  not fork-safe), deaf to Ctrl-C (this process stops them), one library thread each; with
  ``here`` this process runs tasks too (see the class);
* :class:`~schedlab.evaluation.ray_backend.RayBackend` runs them as Ray tasks, where this
  process's files may not be (:attr:`~Backend.remote`): a task's inputs travel with it
  (:meth:`~Backend.put`) and its outputs come back as its value.

:func:`make_backend` picks one from a name, a worker count and an address; :func:`run_batch`
runs the pending units of a resumable batch on one: every unit is submitted, each result is
taken as it completes (a failing unit is recorded and the others go on), SIGINT or SIGTERM
stops the backend and raises :class:`~schedlab.errors.Interrupted` saying how to resume, and
the backend is closed in every case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab import interrupts
from schedlab.errors import Interrupted
from schedlab.evaluation.backend_base import (
    THREAD_VARIABLES,
    Backend,
    Result,
    SerialBackend,
    available_cpus,
)
from schedlab.evaluation.local_backend import LocalBackend

__all__ = [
    "THREAD_VARIABLES",
    "Backend",
    "BatchOutcome",
    "LocalBackend",
    "Result",
    "SerialBackend",
    "available_cpus",
    "make_backend",
    "one_line",
    "run_batch",
]

ERROR_CHARS = 600
"""Longest one-line error of a failed unit (:func:`one_line`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchOutcome:
    """What a call that executes a batch of runs did (an experiment, a training sweep)."""

    out_dir: Path
    """The directory of the runs."""
    n_runs: int
    """Runs in the batch."""
    skipped: int
    """Runs complete before this call."""
    ran: int
    """Runs completed successfully by this call."""
    failures: dict[str, str]
    """Run name -> one-line error of every run that failed in this call."""
    wall_s: float
    """Seconds spent, including what the batch does besides its runs (jobsets, tables)."""

    @staticmethod
    def tally(
        out_dir: Path, n_runs: int, n_pending: int, failures: dict[str, str], t0: float
    ) -> dict[str, Any]:
        """These fields for a batch of ``n_runs`` of which ``n_pending`` were to run when the
        call started at ``t0`` (:func:`time.perf_counter`)."""
        return {
            "out_dir": out_dir,
            "n_runs": n_runs,
            "skipped": n_runs - n_pending,
            "ran": n_pending - len(failures),
            "failures": failures,
            "wall_s": time.perf_counter() - t0,
        }


def make_backend(
    name: str = "local",
    *,
    workers: int | None = None,
    address: str | None = None,
    n_tasks: int = 1,
    here: bool = False,
) -> Backend:
    """The backend called ``name``.

    Parameters
    ----------
    name
        ``"local"``: :class:`SerialBackend` for one worker (or one task), else
        :class:`LocalBackend`; ``"ray"``: :class:`~schedlab.evaluation.ray_backend.RayBackend`.
    workers
        Local: processes running tasks (default: the CPUs this process may use), at most
        ``n_tasks``; this one among them with ``here``. Ray: the CPUs of a local instance (not
        allowed with ``address``).
    address
        Ray: the cluster (:class:`~schedlab.evaluation.ray_backend.RaySession`).
    n_tasks
        Tasks that will be submitted (no more local workers are started).
    here
        Local: this process runs tasks too (:class:`LocalBackend`).

    Raises
    ------
    ValueError
        An unknown backend, or an address with the local one.
    """
    if name == "ray":
        from schedlab.evaluation.ray_backend import RayBackend, RaySession, import_ray

        import_ray()  # fail now, in one line, if Ray is missing
        return RayBackend(RaySession(address, cpus=workers))
    if name != "local":
        msg = f"backend must be 'local' or 'ray', got {name!r}"
        raise ValueError(msg)
    if address is not None:
        msg = f"address {address!r} names a Ray cluster; it needs backend 'ray'"
        raise ValueError(msg)
    n = min(workers or available_cpus(), n_tasks)
    if n <= 1:
        return SerialBackend()
    return LocalBackend(n - 1 if here else n, here=here)


def one_line(text: str) -> str:
    """``text`` on one line (whitespace runs -> one space), at most :data:`ERROR_CHARS`."""
    return " ".join(text.split())[:ERROR_CHARS]


def run_batch(
    backend: Backend,
    start: Callable[[], object],
    take: Callable[[str, Any, BaseException | None], str | None],
    *,
    total: int,
    pending: int,
    noun: str,
    again: str,
    desc: str,
    progress: bool = True,
    then: Callable[[str, Any], object] | None = None,
) -> dict[str, str]:
    """Run the ``pending`` of ``total`` units of a resumable batch on ``backend``, within
    :func:`~schedlab.interrupts.guard`; the backend is closed at the end.

    Parameters
    ----------
    backend
        Where the units run.
    start
        Prepares the batch and submits every pending unit to ``backend``.
    take
        Records one unit's :data:`Result` (its files); returns its one-line error if it
        failed, else None. A failing unit does not stop the others.
    total, pending
        Units of the batch, and those to run now (the others were complete).
    noun, again
        Words of the interrupt message: ``"interrupted by SIGINT after 3 of 8 {noun} (1 now);
        run the same command {again}"``.
    desc, progress
        Label of the progress bar over units, and whether it is shown.
    then
        Called as ``then(key, value)`` after a unit that succeeded is counted (an interrupt
        there keeps it counted).

    Returns
    -------
    dict[str, str]
        Key -> one-line error of every unit that failed.

    Raises
    ------
    Interrupted
        SIGINT or SIGTERM: the backend was cancelled (complete units are kept).
    """
    from tqdm import tqdm

    failures: dict[str, str] = {}
    now = 0
    bar = tqdm(
        total=total, initial=total - pending, desc=desc, unit="run", disable=not progress or None
    )
    try:
        with interrupts.guard(), bar:
            start()
            for key, value, error in backend.completed():
                failure = take(key, value, error)
                if failure is None:
                    now += 1
                    if then is not None:
                        then(key, value)
                else:
                    failures[key] = failure
                bar.update()
                interrupts.check()  # an interrupt whose exception was discarded during that unit
    except KeyboardInterrupt as exc:
        backend.cancel()
        name = getattr(exc, "signal", None) or "SIGINT"
        msg = (
            f"interrupted by {name} after {total - pending + now} of {total} {noun} "
            f"({now} now); run the same command {again}"
        )
        raise Interrupted(msg, name) from exc
    finally:
        backend.close()
    return failures
