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
  done), take them from the back. So more workers are never slower than one: a worker that is
  slow to start only takes less work. Tasks are ordered so that runs of the same policy go to
  the same process (a learned policy's torch import is paid by few processes).
"""

from __future__ import annotations

import multiprocessing
import queue
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


def _init_worker() -> None:
    interrupts.ignore_in_worker()


class LocalExecutor:
    """Tasks in this process and in ``helpers`` worker processes (see the module docstring).

    The workers start (and import what a run needs) as soon as the executor is created, so
    create it before other preparation (e.g. generating jobsets) to overlap the two.
    """

    def __init__(self, helpers: int) -> None:
        if helpers < 1:
            msg = f"a LocalExecutor needs >= 1 helper process, got {helpers}"
            raise ValueError(msg)
        ctx = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(helpers, mp_context=ctx, initializer=_init_worker)
        self._queue: deque[RunTask] = deque()
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
            try:
                future = self._pool.submit(execute, task)
            except RuntimeError:  # the pool broke (a worker died) or shut down
                with self._lock:
                    self._queue.append(task)  # this process will run it
                return
            future.add_done_callback(lambda f, t=task: self._done(f, t))

    def _done(self, future: Future[RunResult], task: RunTask) -> None:
        if future.cancelled() or self._stopped:  # a cancelled run is no failure
            return
        exc = future.exception()
        if exc is None:
            self._results.put(future.result())
        else:  # the worker died (BrokenProcessPool) or the result could not be pickled
            record_failure(task, exc, f"{type(exc).__name__}: {exc}", 0.0)
            self._results.put(RunResult(run_id=task.run_id, error=f"{type(exc).__name__}: {exc}"))
        self._idle.release()

    def as_completed(self) -> Iterator[RunResult]:
        """Results of the workers as they come; in between, run tasks in this process."""
        while self._outstanding > 0:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                with self._lock:
                    task = self._queue.popleft() if self._queue else None
                if task is None:
                    try:
                        result = self._results.get(timeout=0.1)
                    except queue.Empty:
                        continue
                else:
                    result = execute(task)
            self._outstanding -= 1
            yield result

    def cancel(self) -> None:
        """Drop queued tasks, terminate the workers (SIGTERM, then SIGKILL after
        :data:`JOIN_S`)."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
        self._submitted.set()
        processes = list(getattr(self._pool, "_processes", {}).values())  # no public API < 3.14
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            p.terminate()
        for p in processes:
            p.join(JOIN_S)
            if p.is_alive():
                p.kill()
        self._idle.release()

    def close(self) -> None:
        """Stop the feeder and the workers."""
        with self._lock:
            self._stopped = True
        self._submitted.set()
        self._idle.release()
        self._pool.shutdown(wait=True, cancel_futures=True)
