"""Fixtures of the evaluation tests: one local Ray instance per test module that needs it.

Ray takes several seconds to start, so the tests of a module that need it share one instance
of 2 CPUs (no dashboard, usage statistics off, session files in a private temporary
directory), started by the first of them and shut down when the module's tests end, so no Ray
process outlives them. Every test that uses it is in the slow tier (``make test-all``). Ray is
installed by ``make venv`` (the ``ray`` extra); on a machine without it those tests are
skipped, but under CI (``CI`` set) a missing Ray fails them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[ModuleType]:
    """Ray, initialised in this process with a local instance of 2 CPUs."""
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed, and CI must test the ray backend", pytrace=False)
        pytest.skip("Ray is not installed (pip install '.[ray]')")
    from schedlab.evaluation.ray_backend import RaySession

    session = RaySession(cpus=2)
    try:
        yield session.start()
    finally:
        session.stop()
