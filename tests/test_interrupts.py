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
