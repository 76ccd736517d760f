"""The real traces of ``../shared``: a missing file skips a test locally but fails it under CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED, shared_file


def test_missing_shared_trace_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no-such\.csv is not available"):
        shared_file("traces", "no-such.csv")


def test_missing_shared_trace_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"CI must have \.\./shared"):
        shared_file("traces", "no-such.csv")


def test_present_shared_trace_is_its_path(kth_swf: Path) -> None:
    assert kth_swf == SHARED / "traces" / "KTH-SP2-1996-2.swf"
    assert kth_swf.stat().st_size > 1_000_000
