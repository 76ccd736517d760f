"""Executors run the runs of an experiment: the runner's only view of where work happens.

An :class:`Executor` takes every pending :class:`~schedlab.evaluation.runs.RunTask`
(:meth:`~Executor.submit`), yields a :class:`~schedlab.evaluation.runs.RunResult` per task as
each completes (:meth:`~Executor.as_completed`), and stops promptly on :meth:`~Executor.cancel`
(pending tasks dropped, running ones stopped; results already written stay, as every run file
is written atomically). A distributed backend (e.g. Ray) plugs in by implementing these three
methods and :meth:`~Executor.close`.

Two implementations:

* :class:`SerialExecutor` runs every task in this process, in order.
* :class:`LocalExecutor` runs tasks in this process *and* in ``helpers`` spawned worker
  processes (``spawn``: polars is not fork-safe). This process never waits for a worker to
  start: it takes tasks from the front of the queue while workers, once warmed up (imports
  done), take them from the back, one at a time; with the queue empty it runs a worker's task
  itself rather than wait. So more workers are never much slower than one: a worker that is
  slow to start only takes less work. Tasks are ordered so that runs of the same policy go to
  the same process (a learned policy's torch import is paid by few processes), and the
  libraries' thread pools are limited to one thread per process.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Protocol

from schedlab import interrupts
from schedlab.evaluation.runs import RunResult, RunTask, execute, record_failure, warm_up

JOIN_S = 1.0
"""Seconds a cancelled worker is given to exit after SIGTERM before it is killed."""


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


def _init_worker() -> None:
    interrupts.ignore_in_worker()
    for name in THREAD_VARIABLES:  # before any library creates its pool
        os.environ[name] = "1"


class _OneTorchThread:
    """While helpers run, this process's torch (if it uses torch) computes on one thread."""

    def __init__(self) -> None:
        self._previous: int | None = None

    def __enter__(self) -> None:
        if "torch" in sys.modules:
            torch = sys.modules["torch"]
            self._previous = torch.get_num_threads()
            torch.set_num_threads(1)

    def __exit__(self, *_exc: object) -> None:
        if self._previous is not None:
            sys.modules["torch"].set_num_threads(self._previous)
            self._previous = None


class LocalExecutor:
    """Tasks in this process and in ``helpers`` worker processes (see the module docstring).

    The workers start (and import what a run needs) as soon as the executor is created, so
    create it before other preparation (e.g. generating jobsets) to overlap the two. When its
    queue is empty, this process does not wait for a worker's run: it runs the same task itself
    (runs are deterministic and written atomically, so both copies are identical) and takes
    whichever result comes first; workers still busy at the end are stopped.
    """

    def __init__(self, helpers: int) -> None:
        if helpers < 1:
            msg = f"a LocalExecutor needs >= 1 helper process, got {helpers}"
            raise ValueError(msg)
        ctx = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(helpers, mp_context=ctx, initializer=_init_worker)
        self._queue: deque[RunTask] = deque()
        self._running: dict[str, RunTask] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        self._idle = threading.Semaphore(0)
        self._results: queue.SimpleQueue[RunResult] = queue.SimpleQueue()
        self._outstanding = 0
        self._stopped = False
        self._submitted = threading.Event()
        for _ in range(helpers):
            self._pool.submit(warm_up).add_done_callback(lambda _f: self._idle.release())
        self._feeder = threading.Thread(target=self._feed, name="schedlab-feeder", daemon=True)
        self._feeder.start()

    def submit(self, tasks: Sequence[RunTask]) -> None:
        """Queue ``tasks``, grouped by policy (this process takes the front)."""
        order = {spec: i for i, spec in enumerate(dict.fromkeys(t.spec for t in tasks))}
        with self._lock:
            self._queue.extend(sorted(tasks, key=lambda t: order[t.spec]))
            self._outstanding += len(tasks)
        self._submitted.set()

    def _feed(self) -> None:
        """Feeder thread: give each idle worker one task from the back of the queue."""
        self._submitted.wait()
        while True:
            self._idle.acquire()
            with self._lock:
                if self._stopped or not self._queue:
                    return
                task = self._queue.pop()
                self._running[task.run_id] = task
            try:
                future = self._pool.submit(execute, task)
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
        with _OneTorchThread():
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
                        result = execute(task)
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
        self._submitted.set()
        self._idle.release()
        processes = list(getattr(self._pool, "_processes", {}).values())  # no public API < 3.14
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            p.terminate()
        for p in processes:
            p.join(JOIN_S)
            if p.is_alive():
                p.kill()

    def close(self) -> None:
        """Stop the feeder and the workers (a worker still running a task this process
        already completed is stopped, not waited for)."""
        with self._lock:
            busy = bool(self._running)
        if busy:
            self.cancel()
            return
        with self._lock:
            self._stopped = True
        self._submitted.set()
        self._idle.release()
        self._pool.shutdown(wait=True, cancel_futures=True)
