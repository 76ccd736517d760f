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

import functools
import multiprocessing
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from schedlab import interrupts
from schedlab.errors import Interrupted
from schedlab.evaluation.runs import warm_up
from schedlab.exits import guarded

Result = tuple[str, Any, BaseException | None]
"""``(key, value, None)`` of a task that returned, ``(key, None, error)`` of one that raised
(or whose worker died)."""

JOIN_S = 1.0
"""Seconds a cancelled worker is given to exit after SIGTERM before it is killed."""

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
            "out_dir": out_dir, "n_runs": n_runs, "skipped": n_runs - n_pending,
            "ran": n_pending - len(failures), "failures": failures,
            "wall_s": time.perf_counter() - t0,
        }  # fmt: skip


class Backend(Protocol):
    """Where tasks run (see the module docstring)."""

    remote: bool
    """Whether tasks may run where this process's files are not (inputs go with the task,
    outputs come back as its value)."""

    def put(self, value: Any) -> Any:
        """``value`` as an argument to pass to many tasks (stored once where that pays)."""
        ...

    def submit(
        self, key: str, fn: Callable[..., Any], *args: Any, cpus: int = 1,
        group: Hashable = None,
    ) -> None:  # fmt: skip
        """Run ``fn(*args)`` (a module-level function) as a task of ``cpus`` CPUs; tasks of
        one ``group`` (e.g. that import the same library) preferably run in the same process."""
        ...

    def completed(self) -> Iterator[Result]:
        """One :data:`Result` per submitted task, as each completes."""
        ...

    def cancel(self) -> None:
        """Drop queued tasks and stop running ones, promptly (about a second at most)."""
        ...

    def close(self) -> None:
        """Release the workers (once every result was taken, or after :meth:`cancel`)."""
        ...


class _Call(NamedTuple):
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    group: Hashable


def _call(call: _Call) -> Result:
    """Run ``call`` in this process; an exception becomes the result's error."""
    try:
        return call.key, guarded(call.fn, *call.args), None
    except Exception as exc:
        return call.key, None, exc


class _OnThisMachine:
    """What the backends of this machine share: tasks see its files, values are passed as
    they are, and the CPUs of a task are moot (the workers were counted up front)."""

    remote = False

    def put(self, value: Any) -> Any:
        """``value`` itself (pickled with each task that gets it)."""
        return value

    def submit(
        self, key: str, fn: Callable[..., Any], *args: Any, cpus: int = 1,
        group: Hashable = None,
    ) -> None:  # fmt: skip
        """Queue ``fn(*args)``."""
        self._add(_Call(key, fn, args, group))

    def _add(self, call: _Call) -> None:
        raise NotImplementedError


class SerialBackend(_OnThisMachine):
    """Every task in this process, in submission order (when :meth:`completed` runs it)."""

    def __init__(self) -> None:
        self._queue: deque[_Call] = deque()

    def _add(self, call: _Call) -> None:
        self._queue.append(call)

    def completed(self) -> Iterator[Result]:
        """Run the queued tasks one after the other."""
        while self._queue:
            yield _call(self._queue.popleft())

    def cancel(self) -> None:
        """Drop the queued tasks (a running one is stopped by the interrupt itself)."""
        self._queue.clear()

    def close(self) -> None:
        """Nothing to release."""
        self.cancel()


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS", "NUMBA_NUM_THREADS")
"""Thread pools of the libraries a run uses, limited to one per process when several
processes share the CPUs (spinning OpenMP threads of several processes slow every one down)."""


def init_worker() -> None:
    """Initializer of a worker process: deaf to Ctrl-C (the parent stops it), one thread per
    library thread pool (:data:`THREAD_VARIABLES`)."""
    interrupts.ignore_in_worker()
    for name in THREAD_VARIABLES:  # before any library creates its pool
        os.environ[name] = "1"


WORKER_START_S = float(os.environ.get("SCHEDLAB_WORKER_START_S", "2.0"))
"""Rough seconds a worker process needs to start (imports) on a small shared machine. With
``here``, workers are started only once the queued work, estimated from the tasks done here,
exceeds twice this (see :meth:`LocalBackend._worth_workers`). The environment variable
``SCHEDLAB_WORKER_START_S`` overrides it (0: start workers after the second task here)."""


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting for its calls: pending calls are cancelled, its
    processes get SIGTERM, then SIGKILL (and are reaped) after :data:`JOIN_S` seconds.

    Returns once the pool's manager thread has also finished (at most :data:`JOIN_S` more
    seconds): it closes the pool's wake-up pipe when it sees the workers gone, and if that
    happened while the interpreter exits, ``concurrent.futures``' exit hook could write to
    the pipe as it closes and print a traceback (``OSError: Bad file descriptor``; CPython
    3.11 checks and writes without a lock)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no API < 3.14
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() drops it
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    for p in processes:
        p.join(JOIN_S)
        if p.is_alive():
            p.kill()
            p.join(JOIN_S)  # reap it: no zombie left behind
    if manager is not None:
        manager.join(JOIN_S)


class LocalBackend(_OnThisMachine):
    """Tasks in ``workers`` spawned worker processes, one task per worker at a time, and with
    ``here`` in this process too.

    The workers warm up (imports) before a feeder thread gives each idle one a queued task.
    Tasks are queued by ``group`` (in order of each group's first task), so tasks of one group
    go to the same process (a learned policy's torch import is paid by few processes).

    Without ``here`` the workers start with :meth:`completed` and take the queue from the
    front; this process only waits for their results. With ``here`` (for short tasks that may
    run twice: each writes its output atomically and identically) this process takes tasks
    from the front of the queue and the workers from the back, so more workers are never much
    slower than one: a worker slow to start only takes less work. Workers start only when the
    queued work, estimated from the tasks done here, would take longer than
    ``2 × WORKER_START_S`` serially (a short batch never pays for them). When the queue is
    empty this process does not wait for a worker: it runs a worker's running task itself and
    takes whichever result comes first. Workers still busy or starting at the end are stopped,
    not waited for.
    """

    def __init__(self, workers: int, *, here: bool = False) -> None:
        if workers < 1:
            msg = f"a LocalBackend needs >= 1 worker process, got {workers}"
            raise ValueError(msg)
        self._workers = workers
        self._here = here
        self._pool: ProcessPoolExecutor | None = None
        self._staged: list[_Call] = []
        self._queue: deque[_Call] = deque()
        self._running: dict[str, _Call] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)  # notified on submit and cancel
        self._idle = threading.Semaphore(0)
        self._results: queue.SimpleQueue[Result] = queue.SimpleQueue()
        self._outstanding = 0
        self._stopped = False
        self._broken: RuntimeError | None = None  # the pool broke; without here, tasks fail
        self._recent: deque[float] = deque(maxlen=2)
        self.workers_started = False
        """Whether the worker processes were started (see :data:`WORKER_START_S`)."""

    def _add(self, call: _Call) -> None:
        with self._lock:
            self._outstanding += 1
            if self._broken is not None:
                self._results.put((call.key, None, self._broken))
                return
            self._staged.append(call)
            self._queued.notify()

    def _take(self, front: bool) -> _Call | None:
        """The next queued task (lock held), the tasks submitted since the last call queued
        first, grouped."""
        if self._staged:
            order = {g: i for i, g in enumerate(dict.fromkeys(c.group for c in self._staged))}
            self._queue.extend(sorted(self._staged, key=lambda c: order[c.group]))
            self._staged.clear()
        if not self._queue:
            return None
        return self._queue.popleft() if front else self._queue.pop()

    def _start_workers(self) -> None:
        """Spawn the workers (they warm up, then the feeder thread gives them tasks)."""
        self.workers_started = True
        ctx = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(self._workers, mp_context=ctx, initializer=init_worker)
        with interrupts.spawning():  # each submit spawns a worker, born deaf to Ctrl-C
            for _ in range(self._workers):
                self._pool.submit(warm_up).add_done_callback(lambda _f: self._idle.release())
        threading.Thread(target=self._feed, name="schedlab-feeder", daemon=True).start()

    def _worth_workers(self) -> bool:
        """True once the queued work, estimated as the shorter of the last two tasks here
        times the queued tasks, exceeds ``2 × WORKER_START_S`` (a task that paid for imports,
        e.g. the first of a learned policy, does not count alone)."""
        if self.workers_started or self._stopped or len(self._recent) < 2:
            return False
        return min(self._recent) * len(self._queue) > 2 * WORKER_START_S

    def _feed(self) -> None:
        """Feeder thread: give each idle worker one queued task (the back one with ``here``),
        waiting for one if none is queued."""
        pool = self._pool
        assert pool is not None
        while True:
            self._idle.acquire()
            with self._lock:
                while not self._stopped and (call := self._take(front=not self._here)) is None:
                    self._queued.wait()
                if self._stopped:
                    return
                assert call is not None  # the wait ends on a call unless stopped
                self._running[call.key] = call
            try:
                future = pool.submit(guarded, call.fn, *call.args)
            except RuntimeError as exc:  # the pool broke (a worker died) or shut down
                self._pool_broke(call, exc)
                return
            future.add_done_callback(functools.partial(self._done, call=call))

    def _pool_broke(self, call: _Call, exc: RuntimeError) -> None:
        """With ``here`` this process runs ``call`` and the queue; else they fail with
        ``exc``, as every task submitted later."""
        with self._lock:
            del self._running[call.key]
            if self._here:
                self._queue.append(call)
                return
            self._broken = exc
            failed = [call, *self._queue, *self._staged]
            self._queue.clear()
            self._staged.clear()
        for c in failed:
            self._results.put((c.key, None, exc))

    def _done(self, future: Future[Any], call: _Call) -> None:
        with self._lock:
            self._running.pop(call.key, None)
            if future.cancelled() or self._stopped or call.key in self._taken:
                return  # cancelled, or this process ran the task too
        exc = future.exception()  # fn raised, its worker died (BrokenProcessPool), unpicklable
        if exc is None:
            self._results.put((call.key, future.result(), None))
        else:
            self._results.put((call.key, None, exc))
        self._idle.release()

    def _next_here(self) -> _Call | None:
        """The task this process runs next: the queue's front, else a worker's running task."""
        if not self._here:
            return None
        with self._lock:
            call = self._take(front=True)
            return call if call is not None else next(iter(self._running.values()), None)

    def _run_here(self, call: _Call) -> Result:
        t0 = time.perf_counter()
        result = _call(call)
        self._recent.append(time.perf_counter() - t0)
        if self._worth_workers():
            self._start_workers()
        return result

    def completed(self) -> Iterator[Result]:
        """Results as they come; with ``here``, tasks run here in between."""
        if not self._here and not self.workers_started and self._outstanding > 0:
            self._start_workers()
        while self._outstanding > 0:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                call = self._next_here()
                if call is None:
                    try:
                        result = self._results.get(timeout=0.1)
                    except queue.Empty:
                        continue
                else:
                    result = self._run_here(call)
            with self._lock:
                if result[0] in self._taken:
                    continue
                self._taken.add(result[0])
                self._running.pop(result[0], None)
            self._outstanding -= 1
            yield result

    def cancel(self) -> None:
        """Drop queued tasks, terminate the workers (SIGTERM, then SIGKILL after
        :data:`JOIN_S`)."""
        with self._lock:
            self._stopped = True
            self._staged.clear()
            self._queue.clear()
            self._queued.notify()
        self._idle.release()
        pool, self._pool = self._pool, None
        if pool is not None:
            stop_pool(pool)

    def close(self) -> None:
        """Stop the feeder and the workers; a worker still starting, or running a task this
        process already completed, is stopped rather than waited for."""
        self.cancel()


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def make_backend(
    name: str = "local", *, workers: int | None = None, address: str | None = None,
    n_tasks: int = 1, here: bool = False,
) -> Backend:  # fmt: skip
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
    bar = tqdm(total=total, initial=total - pending, desc=desc, unit="run",
               disable=not progress or None)  # fmt: skip
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
        msg = (f"interrupted by {name} after {total - pending + now} of {total} {noun} "
               f"({now} now); run the same command {again}")  # fmt: skip
        raise Interrupted(msg, name) from exc
    finally:
        backend.close()
    return failures
