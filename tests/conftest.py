"""Shared fixtures: a private schedlab cache per test, and the real traces of ``../shared``.

The real-trace fixtures skip a test when ``../shared`` lacks the file on a developer's machine,
but fail it when the environment variable ``CI`` is set (CI has ``../shared``: a missing trace
there is a broken setup, not a reason to test less).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
"""The read-only real traces beside the project (``../shared``)."""


def shared_file(*parts: str) -> Path:
    """The path of a file of ``../shared``; skip the test if it is absent, fail under CI."""
    path = SHARED.joinpath(*parts)
    if not path.is_file():
        msg = f"{path} is not available"
        if os.environ.get("CI"):
            pytest.fail(f"{msg}, and CI must have ../shared (the real traces)", pytrace=False)
        pytest.skip(msg)
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start Ray (the ``ray_instance`` fixture) are in the slow tier."""
    for item in items:
        if "ray_instance" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def small_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two DeepRM jobsets at load 0.5 (``schedlab generate``); tests must not change it."""
    from tests.cli_helpers import run_ok

    path = tmp_path_factory.mktemp("cli") / "jobs.parquet"
    run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "2", "--seed", "4", "-o", str(path))
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets an empty schedlab cache: no test reads or writes ``~/.cache``."""
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path_factory.mktemp("schedlab-cache")))


@pytest.fixture
def warn_in_simulate(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Call with a message: from then on ``simulate`` warns it (a RuntimeWarning) before it runs."""
    import schedlab.simulator.run as run

    real = run.simulate

    def patch(message: str) -> None:
        def noisy(*args: object, **kwargs: object) -> object:
            warnings.warn(message, RuntimeWarning, 2)
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(run, "simulate", noisy)

    return patch


@pytest.fixture(scope="session")
def kth_swf() -> Path:
    """The KTH SP2 log (SWF, 28,476 jobs)."""
    return shared_file("traces", "KTH-SP2-1996-2.swf")


@pytest.fixture(scope="session")
def v2017_csv() -> Path:
    """Alibaba cluster-trace-v2017 ``batch_task`` (80,553 tasks)."""
    return shared_file("traces", "alibaba-v2017-batch_task.csv")


@pytest.fixture(scope="session")
def v2018_dags() -> Path:
    """55,874 real rows of Alibaba cluster-trace-v2018 ``batch_task`` (DAG jobs, a header)."""
    return shared_file("alibaba2018", "hliangzhao_selected_DAGs.csv")
