"""Code from outside schedlab that exits the process, reported as a failure (issue 36).

A policy, generator, loader or plug-in that calls ``sys.exit(0)`` (or raises
:class:`SystemExit`) inside a command would otherwise end it with the exit status it chose, no
output and no results: a silent "success". The command line (:mod:`schedlab.cli.app`) and the
experiments' task runner (:mod:`schedlab.evaluation.backends`) turn such an exit into
:class:`ExitCalledError`, naming the function that exited (module, function, file and line,
from the traceback), so it is one ``Error:`` line and exit status 1, or one failed run of an
experiment whose other runs go on.

schedlab's own exits pass through unchanged: SIGTERM in a worker
(:func:`schedlab.interrupts.ignore_in_worker`) and ``schedlab check``'s failure status are
raised from schedlab's modules, which :func:`foreign_exit` recognises by the innermost frame.
``os._exit`` cannot be caught by anyone and is not covered.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

from schedlab.errors import SchedlabError


class ExitCalledError(SchedlabError, RuntimeError):
    """Code outside schedlab tried to exit the process; the message names it."""


def _innermost(tb: TracebackType | None) -> TracebackType | None:
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def foreign_exit(exc: SystemExit, doing: str = "") -> ExitCalledError | None:
    """The :class:`ExitCalledError` for ``exc`` raised by code outside schedlab (``doing``
    says what was running, e.g. ``"schedlab simulate"``), or None if schedlab raised it."""
    tb = _innermost(exc.__traceback__)
    if tb is None:
        return None
    frame = tb.tb_frame
    module = str(frame.f_globals.get("__name__", "?"))
    if module == "schedlab" or module.startswith("schedlab."):
        return None
    name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    where = f"{module}:{name} ({frame.f_code.co_filename}:{tb.tb_lineno})"
    during = f" during {doing}" if doing else ""
    msg = (
        f"{where} called sys.exit({exc.code!r}){during}: a policy, generator, loader or plug-in "
        "must return or raise, never exit the process; counted as a failure"
    )
    return ExitCalledError(msg)


def guarded(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, with an exit of code outside schedlab raised as :class:`ExitCalledError`
    (module-level, so worker processes can run it)."""
    try:
        return fn(*args)
    except SystemExit as exc:
        failure = foreign_exit(exc)
        if failure is None:
            raise
        raise failure from None
