"""Task backends of training sweeps: serial, spawned processes (results, errors, prompt stop)
and the choice between them."""

from __future__ import annotations

import os
import time

import pytest

from schedlab.evaluation.tasks import ProcessTasks, SerialTasks, make_tasks


def test_processes_run_tasks_elsewhere_and_report_errors() -> None:
    tasks = ProcessTasks(2)
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


def test_cancel_stops_running_workers_promptly() -> None:
    tasks = ProcessTasks(1)
    tasks.submit("pid", os.getpid)
    pid = next(iter(tasks.completed()))[1]
    tasks.submit("long", time.sleep, 60)
    t0 = time.monotonic()
    tasks.cancel()
    assert time.monotonic() - t0 < 5
    with pytest.raises(ProcessLookupError):  # the worker is gone (joined)
        os.kill(pid, 0)


def test_serial_tasks_run_in_order_here() -> None:
    tasks = SerialTasks()
    tasks.submit("a", os.getpid)
    tasks.submit("b", int, "x")
    tasks.submit("c", str, 3)
    got = list(tasks.completed())
    assert [k for k, _, _ in got] == ["a", "b", "c"]
    assert got[0][1] == os.getpid()
    assert isinstance(got[1][2], ValueError)
    assert got[2][1:] == ("3", None)


def test_the_backend_is_chosen_by_name_workers_and_tasks() -> None:
    assert isinstance(make_tasks("local", workers=1, n_tasks=5), SerialTasks)
    assert isinstance(make_tasks("local", workers=4, n_tasks=1), SerialTasks)
    many = make_tasks("local", workers=2, n_tasks=5)
    try:
        assert isinstance(many, ProcessTasks)
    finally:
        many.close()
    with pytest.raises(ValueError, match="backend must be 'local' or 'ray', got 'dask'"):
        make_tasks("dask")
    with pytest.raises(ValueError, match="needs backend 'ray'"):
        make_tasks("local", address="auto")
