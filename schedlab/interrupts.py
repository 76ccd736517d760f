"""SIGINT and SIGTERM for long operations: stop promptly, keep completed work, never record an
interrupt as a failure.

:func:`guard` turns both signals into :class:`~schedlab.errors.Interrupted` in the main thread
and remembers which signal came (:func:`requested`), so code that catches ``Exception`` around a
unit of work can tell an interrupt surfacing as another error (a C extension interrupted
mid-call) from a real failure and re-raise it. Worker processes call :func:`ignore_in_worker`:
only the parent reacts to Ctrl-C (sent to the whole process group) and stops its workers itself.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from schedlab.errors import Interrupted

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[str] = []


def requested() -> str | None:
    """Name of the signal received inside the current :func:`guard` (``"SIGINT"``), or None."""
    return _received[0] if _received else None


def _raise(signum: int, _frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    if not _received:
        _received.append(name)
    raise Interrupted(f"interrupted by {name}", name)


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (main thread only;
    elsewhere the block runs unguarded). Previous handlers are restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {s: signal.signal(s, _raise) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received.clear()


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT within the block (main thread only): processes started here inherit the
    ignored signal from their first instruction on, so Ctrl-C cannot hit them mid-start."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _exit(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signal.SIGTERM)


def ignore_in_worker() -> None:
    """For worker processes: ignore SIGINT (the parent handles it) and turn SIGTERM into
    :class:`SystemExit`, so an atomic write in progress removes its temporary file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit)
