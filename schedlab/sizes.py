"""Memory estimates made before allocating: a request that cannot fit is refused in one line.

Every place that sizes its arrays from a user's numbers (generation: jobsets × loads × jobs;
loading: a trace's text; simulation: machines × horizon × resources per jobset) calls
:func:`check` with its estimate in bytes, what the estimate is made of, and the option or field
that changes it. Above the memory this machine can give (:func:`budget`) the request is refused
with :class:`~schedlab.errors.SizeError` instead of a numpy ``MemoryError`` traceback or a run
the kernel kills minutes later, e.g.::

    generating 1,000,000,000 jobsets x 1 load x 27.1 jobs = 2.71e+10 jobs needs about 2.6 TiB,
    more than the 21.3 GiB this machine has available; lower --jobsets / the loads (or go
    ahead: --allow-large, SCHEDLAB_ALLOW_LARGE=1)

Going ahead is explicit: ``schedlab --allow-large ...`` or ``$SCHEDLAB_ALLOW_LARGE=1`` (worker
processes inherit it). ``$SCHEDLAB_MEMORY_BUDGET`` (bytes; ``8e9`` or ``8GiB``) replaces the
measured budget, e.g. on a node shared with other jobs.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schedlab.errors import SizeError

ALLOW_ENV = "SCHEDLAB_ALLOW_LARGE"
"""Set to ``1`` to go ahead with any request (what ``schedlab --allow-large`` sets)."""
BUDGET_ENV = "SCHEDLAB_MEMORY_BUDGET"
"""Bytes a request may use, replacing the measured available memory."""
HOW_TO_PROCEED = "or go ahead: --allow-large, SCHEDLAB_ALLOW_LARGE=1"
_UNITS = {
    "": 1,
    "k": 1e3,
    "m": 1e6,
    "g": 1e9,
    "t": 1e12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}


def human(nbytes: float) -> str:
    """``nbytes`` in binary units, e.g. ``"373.0 GiB"``."""
    if abs(nbytes) < 1024:
        return f"{nbytes:.0f} B"
    power = min(int(math.log(abs(nbytes), 1024)), 5)
    return f"{nbytes / 1024**power:.1f} {('B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB')[power]}"


def parse_bytes(text: str, *, where: str = BUDGET_ENV) -> float:
    """``"8e9"``, ``"8GB"`` or ``"8GiB"`` as bytes (> 0); a ValueError naming ``where`` else."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKmMgGtT]i?)?[bB]?\s*", text)
    try:
        value = float(m.group(1)) * _UNITS[(m.group(2) or "").lower()] if m else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        msg = f"{where}={text!r}: expected a number of bytes > 0, e.g. 8e9 or 8GiB"
        raise ValueError(msg)
    return value


UNLIMITED = 2**60
"""Limits at or above this many bytes mean "no limit" (cgroup v1 writes 2^63 rounded down to a
page for none)."""
CGROUP = Path("/sys/fs/cgroup")
"""Where the cgroup file systems are mounted (v2 unified, or one folder per v1 controller)."""
PROC = Path("/proc/self")
"""This process's ``/proc`` folder (``cgroup``, ``status``)."""


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def _cgroup_paths(proc: Path, controller: str) -> list[str]:
    """The process's cgroup path for ``controller`` (``""``: the v2 unified hierarchy) and its
    ancestors, from ``/proc/self/cgroup`` (``["/a/b", "/a", "/"]``; ``["/"]`` if unknown)."""
    own = "/"
    try:
        for line in (proc / "cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if (controller in controllers.split(",")) if controller else controllers == "":
                own = path or "/"
    except (OSError, ValueError):
        pass
    parts = [p for p in own.split("/") if p]
    return ["/" + "/".join(parts[:k]) for k in range(len(parts), -1, -1)]


def _cgroup_room(root: Path, proc: Path) -> float:
    """Bytes left under the tightest memory limit of this process's cgroups (v2: ``memory.max``
    − ``memory.current``; v1: ``memory.limit_in_bytes`` − ``memory.usage_in_bytes``), at its
    own level and every ancestor's; ``inf`` if none is set."""
    room = math.inf
    for controller, folder, limit, usage in (
        ("", root, "memory.max", "memory.current"),
        ("memory", root / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ):
        for path in _cgroup_paths(proc, controller):
            where = folder / path.lstrip("/")
            cap, used = _read_int(where / limit), _read_int(where / usage)
            if cap is not None and cap < UNLIMITED:
                room = min(room, cap - (used or 0))
    return room


def _status_bytes(proc: Path, key: str) -> int:
    try:
        for line in (proc / "status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _rlimit_room(proc: Path, getrlimit: Any = None) -> tuple[float, str]:
    """Bytes this process may still map under its soft ``RLIMIT_AS`` (``ulimit -v``: minus its
    ``VmSize``) and ``RLIMIT_DATA`` (``ulimit -d``: minus its ``VmData``), the tighter, with its
    name; ``(inf, "")`` where neither is set."""
    import resource

    get = getrlimit or resource.getrlimit
    best: tuple[float, str] = (math.inf, "")
    for limit, key, name in (
        (resource.RLIMIT_AS, "VmSize", "this process's address-space limit (ulimit -v)"),
        (resource.RLIMIT_DATA, "VmData", "this process's data-segment limit (ulimit -d)"),
    ):
        soft = get(limit)[0]
        if soft != resource.RLIM_INFINITY and 0 <= soft < UNLIMITED:
            best = min(best, (float(soft - _status_bytes(proc, key)), name))
    return best


def limits(*, cgroup: Path = CGROUP, proc: Path = PROC, getrlimit: Any = None) -> tuple[float, str]:
    """The bytes this process can still allocate and what limits it: the least of
    ``MemAvailable`` (``/proc/meminfo``), the room under its cgroups' memory limits (v1 and
    v2) and under its ``RLIMIT_AS`` / ``RLIMIT_DATA``; the physical memory where none can be
    read. The description completes "more than the N GiB ..."."""
    avail, what = math.inf, "this machine has available"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if (room := _cgroup_room(cgroup, proc)) < avail:
        avail, what = room, "left under this process's cgroup memory limit"
    room, name = _rlimit_room(proc, getrlimit)
    if room < avail:
        avail, what = room, f"left under {name}"
    if math.isinf(avail):
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(float(avail), 0.0), what


def available() -> float:
    """Bytes this process can still allocate (:func:`limits`)."""
    return limits()[0]


def budget() -> float:
    """Bytes one request may use: ``$SCHEDLAB_MEMORY_BUDGET`` if set, else :func:`available`."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    return parse_bytes(text) if text else available()


def allowed() -> bool:
    """Whether the user asked to go ahead with any size (``$SCHEDLAB_ALLOW_LARGE`` is set and
    not ``0``/empty)."""
    return os.environ.get(ALLOW_ENV, "").strip().lower() not in ("", "0", "false", "no")


@contextlib.contextmanager
def allow_large() -> Iterator[None]:
    """Within the block, :func:`check` lets every request through (sets
    ``$SCHEDLAB_ALLOW_LARGE`` so that worker processes started inside inherit it)."""
    before = os.environ.get(ALLOW_ENV)
    os.environ[ALLOW_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ALLOW_ENV, None)
        else:
            os.environ[ALLOW_ENV] = before


def check(what: str, nbytes: float, knob: str) -> None:
    """Refuse a request estimated at ``nbytes`` bytes if it exceeds :func:`budget`.

    Parameters
    ----------
    what
        What is requested and what the estimate is made of, e.g. ``"generating 10 jobsets x
        1 load x 5.2e9 jobs"``; the message's opening.
    nbytes
        The estimate, in bytes (may be ``inf`` for a count past any machine).
    knob
        What to change, naming the option or field: ``"lower --jobsets / the loads"``.

    Raises
    ------
    SizeError
        Unless :func:`allowed`.
    """
    if allowed():
        return
    given = os.environ.get(BUDGET_ENV, "").strip()
    limit, source = (parse_bytes(given), f"of ${BUDGET_ENV}") if given else limits()
    if nbytes > limit:
        need = human(nbytes) if math.isfinite(nbytes) else "more than any machine holds"
        have = f"the {human(limit)} {source}"
        msg = f"{what} needs about {need}, more than {have}; {knob} ({HOW_TO_PROCEED})"
        raise SizeError(msg)
