"""Ray as an execution backend (``--backend ray``): a local instance, or an existing cluster.

:class:`RaySession` connects to Ray once per command (or starts a local instance) and
disconnects (or stops it) at the end; :class:`RayBackend`, the
:class:`~schedlab.evaluation.backends.Backend` of Ray, runs functions as Ray tasks and yields
their results as they complete (experiments and training sweeps alike, see
:func:`~schedlab.evaluation.backends.run_batch`).

Where things live; no filesystem shared between the nodes is needed:

* **Jobsets** are generated (or loaded) once, on the *driver* (the machine running
  ``schedlab``), into ``DIR/jobsets/`` exactly as with the local backend. The jobsets of each
  (workload, load) are then put into Ray's **object store** once, and every task of that load
  receives a reference to them (Ray copies an object to a node at most once). Trace files are
  read on the driver.
* **Results** come back to the driver: a task returns its run's results (or its failure
  record) through the object store, and the driver writes ``DIR/runs/<id>.parquet`` (or
  ``DIR/errors/<id>.json``) atomically, as the local backend does. ``DIR`` is a path on the
  driver; the worker nodes never write into it.
* **Code**: every node runs schedlab from its own Python environment, which must hold the same
  schedlab version (its ``ray`` extra, ``pip install '.[ray]'`` in schedlab's source tree, on
  every node, or a Ray ``runtime_env``).

A local instance (no address, and no ``RAY_ADDRESS`` in the environment) gets the CPUs given
(default: those this process may use), no dashboard, usage statistics off (unless
``RAY_USAGE_STATS_ENABLED`` says otherwise), and its session files in a private temporary
directory that is removed when it stops; as Ray does for any local instance, it requires
Ray's authentication token (``~/.ray/auth_token``, created by Ray if missing). A Ray already
initialised in this process (a test fixture, a notebook) is used as it is and left running.

Ray is an optional dependency (the ``ray`` extra, :mod:`schedlab.extras`); without it, every
entry point raises :class:`~schedlab.errors.BackendError` saying how to get it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from schedlab import interrupts
from schedlab.errors import BackendError, Interrupted
from schedlab.evaluation.backend_base import THREAD_VARIABLES, Result, available_cpus
from schedlab.extras import install_hint

INSTALL_HINT = f"the ray backend needs Ray, which is not installed: {install_hint('ray')}"
"""What to do when Ray is not installed."""

POLL_S = 0.2
"""Longest wait (seconds) for a task result before this process checks for signals again."""

TASK_ENV = {"env_vars": {name: "1" for name in THREAD_VARIABLES}}
"""Ray ``runtime_env`` of every task: the libraries' thread pools limited to one thread (a task
has one CPU; spinning threads of several workers slow every one down)."""


def import_ray() -> ModuleType:
    """The ``ray`` module; :class:`~schedlab.errors.BackendError` (how to install it) if
    missing."""
    try:
        import ray
    except ImportError as exc:
        raise BackendError(INSTALL_HINT) from exc
    return ray


class RaySession:
    """Ray for one command: started (or connected) on the first :meth:`start`, stopped (or
    disconnected) by :meth:`stop` if this session started it.

    Parameters
    ----------
    address
        A running cluster: ``"auto"`` (the cluster this machine belongs to, started with
        ``ray start``), ``"HOST:6379"`` (its head node's GCS address) or ``"ray://HOST:10001"``
        (Ray Client). None: ``RAY_ADDRESS`` if set, else a local instance on this machine.
    cpus
        CPUs of a local instance (default: :func:`available_cpus`); not allowed with an
        address (a cluster has its own resources).
    """

    def __init__(self, address: str | None = None, *, cpus: int | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        if self.address is not None and cpus is not None:
            msg = (
                f"cpus={cpus} sets the CPUs of a local Ray instance; a cluster "
                f"(address {self.address!r}) uses its own resources"
            )
            raise ValueError(msg)
        self.cpus = cpus
        self._ray: ModuleType | None = None
        self._owned = False
        self._temp_dir: Path | None = None

    def start(self) -> ModuleType:
        """Ray, initialised in this process (started or connected now if it was not)."""
        if self._ray is not None:
            return self._ray
        ray = import_ray()
        if not ray.is_initialized():
            self._init(ray)
            self._owned = True
        self._ray = ray
        return ray

    def _init(self, ray: ModuleType) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        kwargs: dict[str, Any] = {"logging_level": logging.WARNING}
        if self.address is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="schedlab-ray-"))
            kwargs |= {
                "num_cpus": self.cpus or available_cpus(),
                "include_dashboard": False,
                "_temp_dir": str(self._temp_dir),
            }
            where = "start a local Ray instance"
        else:
            kwargs["address"] = self.address
            where = f"connect to the Ray cluster at {self.address!r}"
        handlers = _signal_handlers()
        try:
            ray.init(**kwargs)
        except Exception as exc:
            if self.address is None:  # keep the instance's logs, and say where they are
                hint, self._temp_dir = f"its logs are in {self._temp_dir}", None
            else:
                hint = "is `ray start --head` running there, and is the address right?"
            msg = f"could not {where} ({type(exc).__name__}: {exc}); {hint}"
            raise BackendError(msg) from exc
        finally:
            _restore(handlers)  # ray.init replaces SIGTERM's handler with its own

    @property
    def owns_local(self) -> bool:
        """Whether :meth:`start` started a local instance, which :meth:`stop` shuts down with
        every task on it (a cluster connected to goes on running its tasks)."""
        return self._owned and self.address is None

    @property
    def active(self) -> ModuleType | None:
        """The ``ray`` module while this session uses Ray, else None."""
        return self._ray

    def stop(self) -> None:
        """Stop the local instance (or disconnect from the cluster) if :meth:`start` began
        it; a Ray initialised by someone else stays as it is."""
        if self._ray is not None and self._owned:
            self._ray.shutdown()
        self._ray, self._owned = None, False
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


def _signal_handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict[int, Any]) -> None:
    for s, handler in handlers.items():
        signal.signal(s, handler)


@contextlib.contextmanager
def _signal_named() -> Iterator[None]:
    """Ray's blocking calls turn a signal that interrupts them into a bare KeyboardInterrupt;
    re-raise it as :class:`~schedlab.errors.Interrupted` naming the signal that came."""
    try:
        yield
    except KeyboardInterrupt as exc:
        name = interrupts.requested()
        if isinstance(exc, Interrupted) or name is None:
            raise
        raise Interrupted(f"interrupted by {name}", name) from exc


class RayBackend:
    """Functions run as Ray tasks, each known by a key; results taken as they complete.

    Parameters
    ----------
    session
        The Ray to run on (started on the first :meth:`submit`).
    retries
        Times a task is run again when its worker process or node dies (a deterministic,
        idempotent task may safely run twice); an exception raised by the function itself is
        never retried.
    """

    remote = True
    """Tasks run on any node: inputs go through the object store (:meth:`put`), outputs come
    back as values."""

    def __init__(self, session: RaySession, *, retries: int = 1) -> None:
        self.session = session
        self._retries = retries
        self._pending: dict[Any, Any] = {}
        self._remote: dict[Callable[..., Any], Any] = {}

    def put(self, value: Any) -> Any:
        """``value`` in the object store, once: a reference to pass to many tasks."""
        return self.session.start().put(value)

    def submit(
        self, key: str, fn: Callable[..., Any], *args: Any, cpus: int = 1, group: Hashable = None
    ) -> None:
        """Run ``fn(*args)`` as a task of ``cpus`` CPUs (arguments may be references from
        :meth:`put`); ``fn`` must be importable by the workers (a module-level function).
        ``group`` is moot: Ray places each task on any free CPU."""
        ray = self.session.start()
        if fn not in self._remote:
            self._remote[fn] = ray.remote(fn)
        task = self._remote[fn].options(
            num_cpus=cpus, max_retries=self._retries, runtime_env=TASK_ENV
        )
        self._pending[task.remote(*args)] = key

    def __len__(self) -> int:
        """Tasks submitted whose result was not taken yet."""
        return len(self._pending)

    def completed(self) -> Iterator[Result]:
        """``(key, value, None)``, or ``(key, None, error)`` for a task that raised or whose
        worker died, per task as each completes."""
        while self._pending:
            ray = self.session.start()
            with _signal_named():
                ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=POLL_S)
                if ready:  # take every result ready now, not one per wait
                    ready, _ = ray.wait(
                        list(self._pending), num_returns=len(self._pending), timeout=0
                    )
            for ref in ready:
                key = self._pending.pop(ref, None)
                if key is None:  # cancelled meanwhile
                    continue
                try:
                    with _signal_named():
                        value = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    yield key, None, exc
                else:
                    yield key, value, None

    def cancel(self) -> None:
        """Cancel every task not completed: queued ones are dropped, running ones stopped
        (their worker process is killed). On a local instance this session started, the tasks
        stop with the instance (:meth:`close`): force-cancelling hundreds of them first races
        Ray's own bookkeeping (a failed check in its task manager ends the process)."""
        ray = self.session.active
        if ray is not None and not self.session.owns_local:
            for ref in list(self._pending):
                with contextlib.suppress(ray.exceptions.RayError, ValueError, TypeError):
                    ray.cancel(ref, force=True)
        self._pending.clear()

    def close(self) -> None:
        """Cancel what is left; stop (or disconnect from) Ray if this session started it."""
        self.cancel()
        self.session.stop()
