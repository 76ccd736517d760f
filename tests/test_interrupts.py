"""Interrupts raised where the interpreter cannot propagate them still stop the work, quietly."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

import pytest

from schedlab import interrupts
from schedlab.errors import Interrupted


class _Finalized:
    """Runs ``action`` in ``__del__``: an exception there is discarded by the interpreter (as
    in a C library's callback) and handed to ``sys.unraisablehook``."""

    def __init__(self, action: Callable[[], None]) -> None:
        self.action = action

    def __del__(self) -> None:
        self.action()


def _fail() -> None:
    raise ValueError("a real error in a finalizer")


def test_an_interrupt_discarded_by_the_interpreter_is_silent_and_still_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    with interrupts.guard():
        interrupts.check()  # nothing yet
        obj = _Finalized(lambda: signal.raise_signal(signal.SIGINT))
        del obj  # the handler's Interrupted is raised, and discarded, inside __del__
        assert interrupts.requested() == "SIGINT"
        obj = _Finalized(_fail)
        del obj
        with pytest.raises(Interrupted, match="SIGINT"):
            interrupts.check()
    assert [type(e) for e in seen] == [ValueError]  # only the real error is reported
    assert interrupts.requested() is None


def test_the_previous_hook_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    def hook(_: object) -> None:
        return None

    monkeypatch.setattr(sys, "unraisablehook", hook)
    with interrupts.guard():
        assert sys.unraisablehook is not hook
    assert sys.unraisablehook is hook


WORKER = """
import atexit, signal, sys, time
from schedlab import interrupts
interrupts.ignore_in_worker()
if sys.argv[1] == "busy":
    with interrupts.working():
        print("ready", flush=True)
        try:
            time.sleep(5)
        except SystemExit:
            print("cleaned up", flush=True)
            raise
atexit.register(time.sleep, 5)  # an exit hook still running when the parent stops it
print("ready", flush=True)
"""


@pytest.mark.parametrize("state", ["busy", "exiting"])
def test_a_stopped_worker_cleans_up_in_a_unit_of_work_and_says_nothing_outside(state) -> None:
    """Inside a unit of work, SIGTERM raises SystemExit (atomic writes remove their temporary
    files); outside one, as in an exit hook (torch's), it ends the worker at once, where a
    SystemExit would print "Exception ignored in atexit callback"."""
    import subprocess
    import time

    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, state],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.5)  # inside the sleep of the unit, or of the exit hook
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "Exception ignored" not in err, err
    assert ("cleaned up" in out) == (state == "busy")
