"""SIGINT and SIGTERM for long operations: stop promptly, keep completed work, never record an
interrupt as a failure.

:func:`guard` turns both signals into :class:`~schedlab.errors.Interrupted` in the main thread
and remembers which signal came (:func:`requested`), so code that catches ``Exception`` around a
unit of work can tell an interrupt surfacing as another error (a C extension interrupted
mid-call) from a real failure and re-raise it. A signal that arrives while Python code runs
inside a C callback that cannot propagate errors (a ``__del__``, a library's hook) has its
exception discarded by the interpreter: :func:`guard` keeps that from printing a traceback, and
loops over units of work call :func:`check` between units, so the interrupt still stops them.
Worker processes call :func:`ignore_in_worker`: only the parent reacts to Ctrl-C (sent to the
whole process group) and stops its workers itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from schedlab.errors import Interrupted

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[str] = []
_deferred: list[bool] = []


def requested() -> str | None:
    """Name of the signal received inside the current :func:`guard` (``"SIGINT"``), or None."""
    return _received[0] if _received else None


def _raise(signum: int, _frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    if not _received:
        _received.append(name)
    if not _deferred:
        raise Interrupted(f"interrupted by {name}", name)


def check() -> None:
    """Raise :class:`Interrupted` if a signal came inside the current :func:`guard` (its
    exception may have been discarded where it was raised: module docstring)."""
    if (name := requested()) is not None and not _deferred:
        raise Interrupted(f"interrupted by {name}", name)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (main thread only;
    elsewhere the block runs unguarded), and an :class:`Interrupted` the interpreter discards
    (raised inside a C callback) is not printed: :func:`requested` has it. Previous handlers
    are restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {s: signal.signal(s, _raise) for s in _SIGNALS}
    previous_hook = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            previous_hook(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received.clear()


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Start processes within the block: they inherit SIGINT blocked, so Ctrl-C cannot hit them
    mid-start (:func:`ignore_in_worker` unblocks it once ignored), and an interrupt of this
    process (inside :func:`guard`) is raised only after the block, never halfway through
    handing a new process its start-up data. Main thread only; elsewhere a plain block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    _deferred.append(True)
    try:
        yield
    finally:
        _deferred.pop()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    check()


_working: list[bool] = []


@contextlib.contextmanager
def working() -> Iterator[None]:
    """In a worker process (:func:`ignore_in_worker`), around one unit of work: the span in
    which SIGTERM raises :class:`SystemExit`."""
    _working.append(True)
    try:
        yield
    finally:
        _working.pop()


def _exit(_signum: int, _frame: FrameType | None) -> None:
    if not _working:  # idle, or running its exit hooks: nothing to clean up, end at once
        os._exit(128 + signal.SIGTERM)
    raise SystemExit(128 + signal.SIGTERM)


def ignore_in_worker() -> None:
    """For worker processes: ignore SIGINT (the parent handles it; unblocked once ignored, see
    :func:`spawning`) and turn SIGTERM into :class:`SystemExit` within a unit of work
    (:func:`working`), so an atomic write in progress removes its temporary file. Outside one,
    SIGTERM ends the process at once: a worker the parent stops as it exits would otherwise
    raise inside an exit hook (torch's), and the interpreter prints that as "Exception ignored
    in atexit callback"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGTERM, _exit)
