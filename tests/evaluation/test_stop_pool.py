"""Stopping a worker pool leaves nothing running behind it."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from schedlab.evaluation.executors import stop_pool


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
