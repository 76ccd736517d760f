"""Tasks in spawned worker processes (:class:`LocalBackend`), started only when a batch is
worth them; see :mod:`.backends`."""

from __future__ import annotations

import functools
import multiprocessing
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from schedlab import interrupts
from schedlab.evaluation.backend_base import (
    THREAD_VARIABLES,
    Call,
    OnThisMachine,
    Result,
    run_call,
)
from schedlab.evaluation.runs import warm_up
from schedlab.exits import guarded

JOIN_S = 1.0
"""Seconds a cancelled worker is given to exit after SIGTERM before it is killed."""


def init_worker() -> None:
    """Initializer of a worker process: deaf to Ctrl-C (the parent stops it), one thread per
    library thread pool (:data:`THREAD_VARIABLES`)."""
    interrupts.ignore_in_worker()
    for name in THREAD_VARIABLES:  # before any library creates its pool
        os.environ[name] = "1"


def run_unit(fn: Callable[..., Any], *args: Any) -> Any:
    """A worker's unit of work: ``fn(*args)`` through :func:`~schedlab.exits.guarded`, inside
    :func:`~schedlab.interrupts.working` (SIGTERM then cleans up as it stops it)."""
    with interrupts.working():
        return guarded(fn, *args)


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


class LocalBackend(OnThisMachine):
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
        self._staged: list[Call] = []
        self._queue: deque[Call] = deque()
        self._running: dict[str, Call] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)  # notified on submit and cancel
        self._idle = threading.Semaphore(0)
        self._results: queue.SimpleQueue[Result] = queue.SimpleQueue()
        self._outstanding = 0
        self._stopped = False
        self._broken: Exception | None = None  # the pool broke; without here, tasks fail
        self._recent: deque[float] = deque(maxlen=2)
        self.workers_started = False
        """Whether the worker processes were started (see :data:`WORKER_START_S`)."""

    def _add(self, call: Call) -> None:
        with self._lock:
            self._outstanding += 1
            if self._broken is not None:
                self._results.put((call.key, None, self._broken))
                return
            self._staged.append(call)
            self._queued.notify()

    def _take(self, front: bool) -> Call | None:
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
                future = pool.submit(run_unit, call.fn, *call.args)
            except (RuntimeError, OSError) as exc:  # the pool broke (a worker died) or shut
                # down: OSError where it closed its wake-up pipe as submit wrote to it (CPython
                # 3.11 checks and writes without a lock; see stop_pool)
                self._pool_broke(call, exc)
                return
            future.add_done_callback(functools.partial(self._done, call=call))

    def _pool_broke(self, call: Call, exc: Exception) -> None:
        """With ``here`` this process runs ``call`` and the queue; else they fail with
        ``exc``, as every task submitted later. Nothing when the pool was stopped on purpose
        (:meth:`cancel`: Ctrl-C, the end of a batch)."""
        with self._lock:
            self._running.pop(call.key, None)  # this process may have run it meanwhile
            if self._stopped:
                return
            if self._here:
                self._queue.append(call)
                return
            self._broken = exc
            failed = [call, *self._queue, *self._staged]
            self._queue.clear()
            self._staged.clear()
        for c in failed:
            self._results.put((c.key, None, exc))

    def _done(self, future: Future[Any], call: Call) -> None:
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

    def _next_here(self) -> Call | None:
        """The task this process runs next: the queue's front, else a worker's running task."""
        if not self._here:
            return None
        with self._lock:
            call = self._take(front=True)
            return call if call is not None else next(iter(self._running.values()), None)

    def _run_here(self, call: Call) -> Result:
        t0 = time.perf_counter()
        result = run_call(call)
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
