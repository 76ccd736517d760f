"""What every backend is (:class:`Backend`), a task as it is queued, and the one backend that
runs tasks in this process (:class:`SerialBackend`); :mod:`.backends` documents the backends
and picks one."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple, Protocol

from schedlab.exits import guarded

Result = tuple[str, Any, BaseException | None]
"""``(key, value, None)`` of a task that returned, ``(key, None, error)`` of one that raised
(or whose worker died)."""

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS", "NUMBA_NUM_THREADS")
"""Thread pools of the libraries a run uses, limited to one per process when several
processes share the CPUs (spinning OpenMP threads of several processes slow every one down)."""


class Backend(Protocol):
    """Where tasks run (see the module docstring)."""

    remote: bool
    """Whether tasks may run where this process's files are not (inputs go with the task,
    outputs come back as its value)."""

    def put(self, value: Any) -> Any:
        """``value`` as an argument to pass to many tasks (stored once where that pays)."""
        ...

    def submit(
        self, key: str, fn: Callable[..., Any], *args: Any, cpus: int = 1, group: Hashable = None
    ) -> None:
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


class Call(NamedTuple):
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    group: Hashable


def run_call(call: Call) -> Result:
    """Run ``call`` in this process; an exception becomes the result's error."""
    try:
        return call.key, guarded(call.fn, *call.args), None
    except Exception as exc:
        return call.key, None, exc


class OnThisMachine:
    """What the backends of this machine share: tasks see its files, values are passed as
    they are, and the CPUs of a task are moot (the workers were counted up front)."""

    remote = False

    def put(self, value: Any) -> Any:
        """``value`` itself (pickled with each task that gets it)."""
        return value

    def submit(
        self, key: str, fn: Callable[..., Any], *args: Any, cpus: int = 1, group: Hashable = None
    ) -> None:
        """Queue ``fn(*args)``."""
        self._add(Call(key, fn, args, group))

    def _add(self, call: Call) -> None:
        raise NotImplementedError


class SerialBackend(OnThisMachine):
    """Every task in this process, in submission order (when :meth:`completed` runs it)."""

    def __init__(self) -> None:
        self._queue: deque[Call] = deque()

    def _add(self, call: Call) -> None:
        self._queue.append(call)

    def completed(self) -> Iterator[Result]:
        """Run the queued tasks one after the other."""
        while self._queue:
            yield run_call(self._queue.popleft())

    def cancel(self) -> None:
        """Drop the queued tasks (a running one is stopped by the interrupt itself)."""
        self._queue.clear()

    def close(self) -> None:
        """Nothing to release."""
        self.cancel()


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
