"""Executors run the runs of an experiment: the runner's only view of where work happens.

An :class:`Executor` takes every pending :class:`~schedlab.evaluation.runs.RunTask`
(:meth:`~Executor.submit`), yields a :class:`~schedlab.evaluation.runs.RunResult` per task as
each completes (:meth:`~Executor.as_completed`), and stops promptly on :meth:`~Executor.cancel`
(pending tasks dropped, running ones stopped; results already written stay, as every run file
is written atomically). A distributed backend plugs in by implementing these three methods and
:meth:`~Executor.close`: :class:`~schedlab.evaluation.ray_backend.RayExecutor` runs them on Ray.

Two implementations:

* :class:`SerialExecutor` runs every task in this process, in order.
* :class:`LocalExecutor` runs tasks in this process *and* in ``helpers`` spawned worker
  processes (``spawn``: polars is not fork-safe). This process never waits for a worker to
  start: it takes tasks from the front of the queue while workers, once warmed up (imports
  done), take them from the back, one at a time; with the queue empty it runs a worker's task
  itself rather than wait. So more workers are never much slower than one: a worker that is
  slow to start only takes less work. Tasks are ordered so that runs of the same policy go to
  the same process (a learned policy's torch import is paid by few processes), the libraries'
  thread pools are limited to one thread per worker (as torch is in every run), and workers
  start only when the queued work is long enough to pay for their start.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from schedlab import interrupts
from schedlab.evaluation.runs import RunResult, RunTask, execute, record_failure, warm_up

JOIN_S = 1.0
"""Seconds a cancelled worker is given to exit after SIGTERM before it is killed."""


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


class Executor(Protocol):
    """Where the runs of an experiment execute (see the module docstring)."""

    def submit(self, tasks: Sequence[RunTask]) -> None:
        """Queue ``tasks`` (in the order they should preferably start)."""
        ...

    def as_completed(self) -> Iterator[RunResult]:
        """One result per submitted task, as each completes."""
        ...

    def cancel(self) -> None:
        """Drop pending tasks and stop running ones, promptly (about a second at most)."""
        ...

    def close(self) -> None:
        """Release workers once every result was taken (or after :meth:`cancel`)."""
        ...


class SerialExecutor:
    """Every task in this process, in submission order."""

    def __init__(self) -> None:
        self._queue: deque[RunTask] = deque()

    def submit(self, tasks: Sequence[RunTask]) -> None:
        """Queue ``tasks``."""
        self._queue.extend(tasks)

    def as_completed(self) -> Iterator[RunResult]:
        """Run the queued tasks one after the other."""
        while self._queue:
            yield execute(self._queue.popleft())

    def cancel(self) -> None:
        """Drop the tasks not started (the running one is interrupted by the signal)."""
        self._queue.clear()

    def close(self) -> None:
        """Nothing to release."""


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
"""Rough seconds a worker process needs to start (imports) on a small shared machine. Workers
are started only once the queued work, estimated from the runs done here, exceeds twice this
(see :meth:`LocalExecutor._worth_workers`). The environment variable
``SCHEDLAB_WORKER_START_S`` overrides it (0: start workers after the second run here)."""


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


class LocalExecutor:
    """Tasks in this process and in up to ``helpers`` worker processes (see the module
    docstring).

    Runs start here at once. Workers are started only when the queued work, estimated from the
    runs done here, would take longer than ``2 × WORKER_START_S`` serially (a short experiment
    never pays for them). When its queue is empty, this process does not wait for a
    worker's run: it runs the same task itself (runs are deterministic and written atomically,
    so both copies are identical) and takes whichever result comes first; workers still busy
    or starting at the end are stopped, not waited for.
    """

    def __init__(self, helpers: int) -> None:
        if helpers < 1:
            msg = f"a LocalExecutor needs >= 1 helper process, got {helpers}"
            raise ValueError(msg)
        self._helpers = helpers
        self._pool: ProcessPoolExecutor | None = None
        self._queue: deque[RunTask] = deque()
        self._running: dict[str, RunTask] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        self._idle = threading.Semaphore(0)
        self._results: queue.SimpleQueue[RunResult] = queue.SimpleQueue()
        self._outstanding = 0
        self._stopped = False
        self._recent: deque[float] = deque(maxlen=2)
        self.workers_started = False
        """Whether the worker processes were started (see :data:`WORKER_START_S`)."""

    def _start_workers(self) -> None:
        """Spawn the workers (they warm up, then the feeder thread gives them tasks)."""
        self.workers_started = True
        ctx = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(self._helpers, mp_context=ctx, initializer=init_worker)
        with interrupts.spawning():  # each submit spawns a worker, born deaf to Ctrl-C
            for _ in range(self._helpers):
                self._pool.submit(warm_up).add_done_callback(lambda _f: self._idle.release())
        threading.Thread(target=self._feed, name="schedlab-feeder", daemon=True).start()

    def _worth_workers(self) -> bool:
        """True once the queued work, estimated as the shorter of the last two runs here times
        the queued runs, exceeds ``2 × WORKER_START_S`` (a run that paid for imports, e.g. the
        first of a learned policy, does not count alone)."""
        if self.workers_started or self._stopped or len(self._recent) < 2:
            return False
        return min(self._recent) * len(self._queue) > 2 * WORKER_START_S

    def submit(self, tasks: Sequence[RunTask]) -> None:
        """Queue ``tasks``, grouped by policy (this process takes the front)."""
        order = {spec: i for i, spec in enumerate(dict.fromkeys(t.spec for t in tasks))}
        with self._lock:
            self._queue.extend(sorted(tasks, key=lambda t: order[t.spec]))
            self._outstanding += len(tasks)

    def _feed(self) -> None:
        """Feeder thread: give each idle worker one task from the back of the queue."""
        pool = self._pool
        assert pool is not None
        while True:
            self._idle.acquire()
            with self._lock:
                if self._stopped or not self._queue:
                    return
                task = self._queue.pop()
                self._running[task.run_id] = task
            try:
                future = pool.submit(execute, task)
            except RuntimeError:  # the pool broke (a worker died) or shut down
                with self._lock:
                    del self._running[task.run_id]
                    self._queue.append(task)  # this process will run it
                return
            future.add_done_callback(lambda f, t=task: self._done(f, t))

    def _done(self, future: Future[RunResult], task: RunTask) -> None:
        with self._lock:
            self._running.pop(task.run_id, None)
            if future.cancelled() or self._stopped or task.run_id in self._taken:
                return  # cancelled, or this process ran the task too
        exc = future.exception()
        if exc is None:
            self._results.put(future.result())
        else:  # the worker died (BrokenProcessPool) or the result could not be pickled
            record_failure(task, exc, f"{type(exc).__name__}: {exc}", 0.0)
            self._results.put(RunResult(run_id=task.run_id, error=f"{type(exc).__name__}: {exc}"))
        self._idle.release()

    def _next_here(self) -> RunTask | None:
        """The task this process runs next: the queue's front, else a worker's running task."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            return next(iter(self._running.values()), None)

    def as_completed(self) -> Iterator[RunResult]:
        """Results of the workers as they come; in between, run tasks in this process."""
        while self._outstanding > 0:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                task = self._next_here()
                if task is None:
                    try:
                        result = self._results.get(timeout=0.1)
                    except queue.Empty:
                        continue
                else:
                    t0 = time.perf_counter()
                    result = execute(task)
                    self._recent.append(time.perf_counter() - t0)
                    if self._worth_workers():
                        self._start_workers()
            with self._lock:
                if result.run_id in self._taken:
                    continue
                self._taken.add(result.run_id)
                self._running.pop(result.run_id, None)
            self._outstanding -= 1
            yield result

    def cancel(self) -> None:
        """Drop queued tasks, terminate the workers (SIGTERM, then SIGKILL after
        :data:`JOIN_S`)."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
        self._idle.release()
        pool, self._pool = self._pool, None
        if pool is not None:
            stop_pool(pool)

    def close(self) -> None:
        """Stop the feeder and the workers; a worker still starting, or running a task this
        process already completed, is stopped rather than waited for."""
        self.cancel()
