"""Run functions as independent tasks on a backend, taking results as they complete.

Used by training sweeps (:mod:`schedlab.evaluation.train_sweep`), whose units of work are few
and long. Three implementations share one interface (:class:`Tasks`):

* :class:`SerialTasks` calls each function in this process, in submission order;
* :class:`ProcessTasks` calls them in spawned worker processes (``spawn``: polars is not
  fork-safe), one task per worker at a time;
* :class:`~schedlab.evaluation.ray_backend.RayTasks` runs them as Ray tasks.

Functions and their arguments must be picklable (module-level functions). A function that
raises gives ``(key, None, error)``; the others go on.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, Protocol

from schedlab import interrupts
from schedlab.evaluation.executors import init_worker, stop_pool


class Tasks(Protocol):
    """Functions run as tasks, each known by a key (see the module docstring)."""

    def submit(self, key: Any, fn: Callable[..., Any], *args: Any, cpus: int = 1) -> None:
        """Run ``fn(*args)`` as a task that uses ``cpus`` CPUs."""
        ...

    def completed(self) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """``(key, value, None)`` or ``(key, None, error)`` per task, as each completes."""
        ...

    def cancel(self) -> None:
        """Drop the tasks not started and stop the running ones."""
        ...

    def close(self) -> None:
        """Release the workers (after :meth:`completed` is exhausted, or after cancel)."""
        ...


class SerialTasks:
    """Every task in this process, in submission order (when :meth:`completed` runs it)."""

    def __init__(self) -> None:
        self._queue: list[tuple[Any, Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, key: Any, fn: Callable[..., Any], *args: Any, cpus: int = 1) -> None:
        """Queue ``fn(*args)`` (``cpus`` is ignored: one task at a time)."""
        self._queue.append((key, fn, args))

    def completed(self) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """Run the queued tasks one after the other."""
        while self._queue:
            key, fn, args = self._queue.pop(0)
            try:
                value = fn(*args)
            except Exception as exc:
                yield key, None, exc
            else:
                yield key, value, None

    def cancel(self) -> None:
        """Drop the queued tasks (a running one is stopped by the interrupt itself)."""
        self._queue.clear()

    def close(self) -> None:
        """Nothing to release."""
        self.cancel()


class ProcessTasks:
    """Tasks in ``workers`` spawned processes (deaf to Ctrl-C: this process stops them)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            msg = f"ProcessTasks needs >= 1 worker process, got {workers}"
            raise ValueError(msg)
        ctx = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker)
        self._futures: dict[Future[Any], Any] = {}

    def submit(self, key: Any, fn: Callable[..., Any], *args: Any, cpus: int = 1) -> None:
        """Queue ``fn(*args)`` for the next free worker (``cpus`` sized the pool already)."""
        with interrupts.spawning():  # a submit may spawn a worker, born deaf to Ctrl-C
            self._futures[self._pool.submit(fn, *args)] = key

    def completed(self) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """Results as the workers finish (a worker that dies gives its task's error)."""
        for future in as_completed(list(self._futures)):
            key = self._futures.pop(future, None)
            if key is None or future.cancelled():
                continue
            exc = future.exception()
            yield (key, None, exc) if exc is not None else (key, future.result(), None)

    def cancel(self) -> None:
        """Cancel queued tasks; terminate the workers (then kill them, see
        :func:`~schedlab.evaluation.executors.stop_pool`)."""
        self._futures.clear()
        stop_pool(self._pool)

    def close(self) -> None:
        """Stop the workers."""
        self.cancel()


def make_tasks(
    backend: str, *, workers: int | None = None, address: str | None = None, n_tasks: int = 1
) -> Tasks:
    """The tasks of ``backend``.

    Parameters
    ----------
    backend
        ``"local"``: :class:`SerialTasks` for one worker (or one task), else
        :class:`ProcessTasks`; ``"ray"``: :class:`~schedlab.evaluation.ray_backend.RayTasks`.
    workers
        Local: worker processes (default: the CPUs this process may use), at most ``n_tasks``.
        Ray: the CPUs of a local instance (not allowed with ``address``).
    address
        Ray: the cluster (:class:`~schedlab.evaluation.ray_backend.RaySession`).
    n_tasks
        Tasks that will be submitted (no more local workers are started).

    Raises
    ------
    ValueError
        An unknown backend, or an address with the local one.
    """
    if backend == "ray":
        from schedlab.evaluation.ray_backend import RaySession, RayTasks, import_ray

        import_ray()  # fail now, in one line, if Ray is missing
        return RayTasks(RaySession(address, cpus=workers))
    if backend != "local":
        msg = f"backend must be 'local' or 'ray', got {backend!r}"
        raise ValueError(msg)
    if address is not None:
        msg = f"address {address!r} names a Ray cluster; it needs backend 'ray'"
        raise ValueError(msg)
    from schedlab.evaluation.runner import available_cpus

    n = min(workers or available_cpus(), n_tasks)
    return SerialTasks() if n <= 1 else ProcessTasks(n)
