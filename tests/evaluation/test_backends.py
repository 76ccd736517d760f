"""Backends of experiments and training sweeps: serial, spawned processes (results, errors,
prompt stop, a pool left with nothing running) and the choice between them."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from schedlab.evaluation.backend_base import Call
from schedlab.evaluation.backends import LocalBackend, SerialBackend, make_backend
from schedlab.evaluation.local_backend import stop_pool


def test_processes_run_tasks_elsewhere_and_report_errors() -> None:
    tasks = LocalBackend(2)
    try:
        tasks.submit("pid", os.getpid)
        tasks.submit("bad", int, "not a number")
        got = {key: (value, error) for key, value, error in tasks.completed()}
    finally:
        tasks.close()
    assert got["pid"][1] is None
    assert got["pid"][0] != os.getpid()
    assert isinstance(got["bad"][1], ValueError)
    assert "not a number" in str(got["bad"][1])


def test_a_worker_that_dies_fails_its_task_and_those_left() -> None:
    tasks = LocalBackend(1)
    try:
        tasks.submit("dies", os._exit, 3)
        tasks.submit("after", os.getpid)
        got = {key: error for key, _, error in tasks.completed()}
        tasks.submit("later", os.getpid)
        got |= {key: error for key, _, error in tasks.completed()}
    finally:
        tasks.close()
    assert sorted(got) == ["after", "dies", "later"]
    assert all(isinstance(e, BrokenProcessPool) for e in got.values())


def test_cancel_stops_running_workers_promptly() -> None:
    tasks = LocalBackend(1)
    tasks.submit("pid", os.getpid)
    pid = next(iter(tasks.completed()))[1]
    tasks.submit("long", time.sleep, 60)
    t0 = time.monotonic()
    tasks.cancel()
    assert time.monotonic() - t0 < 5
    with pytest.raises(ProcessLookupError):  # the worker is gone (joined)
        os.kill(pid, 0)


def test_tasks_submitted_after_results_were_taken_run_too() -> None:
    tasks = LocalBackend(1)
    try:
        tasks.submit("first", os.getpid)
        first = [value for _, value, _ in tasks.completed()]
        tasks.submit("second", os.getpid)
        second = [value for _, value, _ in tasks.completed()]
    finally:
        tasks.close()
    assert first == second  # the same worker
    assert first != [os.getpid()]


def test_serial_tasks_run_in_order_here() -> None:
    tasks = SerialBackend()
    tasks.submit("a", os.getpid)
    tasks.submit("b", int, "x")
    tasks.submit("c", str, 3)
    got = list(tasks.completed())
    assert [k for k, _, _ in got] == ["a", "b", "c"]
    assert got[0][1] == os.getpid()
    assert isinstance(got[1][2], ValueError)
    assert got[2][1:] == ("3", None)


def test_the_backend_is_chosen_by_name_workers_and_tasks() -> None:
    assert isinstance(make_backend("local", workers=1, n_tasks=5), SerialBackend)
    assert isinstance(make_backend("local", workers=4, n_tasks=1), SerialBackend)
    assert isinstance(make_backend("local", workers=1, n_tasks=5, here=True), SerialBackend)
    for here in (False, True):
        many = make_backend("local", workers=2, n_tasks=5, here=here)
        try:
            assert isinstance(many, LocalBackend)
        finally:
            many.close()
    with pytest.raises(ValueError, match="backend must be 'local' or 'ray', got 'dask'"):
        make_backend("dask")
    with pytest.raises(ValueError, match="needs backend 'ray'"):
        make_backend("local", address="auto")


def test_stopping_a_busy_pool_ends_its_processes_and_its_manager_thread() -> None:
    """Nothing of the pool is left for the interpreter's exit hook to race with."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    running = pool.submit(time.sleep, 60)
    deadline = time.monotonic() + 60
    while not running.running():
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.05)
    processes = list(pool._processes.values())
    manager = pool._executor_manager_thread
    assert manager is not None
    assert manager.is_alive()
    t0 = time.monotonic()
    stop_pool(pool)
    assert time.monotonic() - t0 < 10  # not the 60 s task
    assert not any(p.is_alive() for p in processes)
    assert not manager.is_alive()


class _ClosingPool:
    """A pool whose wake-up pipe closes as a task is submitted (CPython 3.11's race), with
    the backend stopped (Ctrl-C, the batch's end) at that moment or not."""

    def __init__(self, backend: LocalBackend, *, stopping: bool) -> None:
        self.backend, self.stopping = backend, stopping

    def submit(self, *args: object, **kwargs: object) -> None:
        if self.stopping:
            self.backend._stopped = True
        raise OSError(9, "Bad file descriptor")


@pytest.mark.parametrize("stopping", [False, True])
def test_a_pool_closing_under_the_feeder_fails_its_tasks_without_a_thread_traceback(
    monkeypatch: pytest.MonkeyPatch, stopping: bool
) -> None:
    """The feeder thread takes an OSError from submit as the pool shut down: the tasks fail
    with it (or, when the backend is being stopped, nothing happens), and no thread prints
    a traceback."""
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    backend = LocalBackend(1)
    backend._pool = _ClosingPool(backend, stopping=stopping)  # type: ignore[assignment]
    for key in ("a", "b"):
        backend._add(Call(key, abs, (-1,), "g"))
    backend._idle.release()
    feeder = threading.Thread(target=backend._feed)
    feeder.start()
    feeder.join(5)
    assert not feeder.is_alive()
    assert raised == []
    failed = []
    while not backend._results.empty():
        failed.append(backend._results.get_nowait())
    if stopping:
        assert failed == []
    else:
        assert sorted(key for key, _, _ in failed) == ["a", "b"]
        assert all(isinstance(exc, OSError) for _, _, exc in failed)
