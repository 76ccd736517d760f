"""``schedlab report`` and ``schedlab demo`` never silently replace another study's output: a
folder holding the report of another source, or another experiment, is refused before any work
unless --force (rule: :mod:`schedlab.reports.report_source`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.reports.report_source import MARKER, recorded_source
from tests.cli_helpers import run_fail, run_ok


@pytest.fixture(scope="module")
def two_results(small_jobs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Results of two studies of the same jobs: SJF vs FCFS, and Packer vs HRRN."""
    folder = tmp_path_factory.mktemp("studies")
    a, b = folder / "a.parquet", folder / "b.parquet"
    for path, pair in ((a, ("sjf", "fcfs")), (b, ("packer", "hrrn"))):
        run_ok(
            "simulate", str(small_jobs), "--policy", pair[0], "--policy", pair[1], "-o", str(path)
        )
    return a, b


def test_a_report_of_another_study_is_refused_unless_forced(
    tmp_path: Path, two_results: tuple[Path, Path]
) -> None:
    a, b = two_results
    out = tmp_path / "out"
    run_ok("report", str(a), "-o", str(out))
    assert recorded_source(out) == a.resolve()
    before = (out / "report.md").read_bytes()
    refused = run_fail("report", str(b), "-o", str(out))
    said = f"Error: {out} holds the report of {a} ({MARKER}); a report of {b} would replace it"
    assert f"{said}: choose another -o, or pass --force to replace it" in refused
    assert (out / "report.md").read_bytes() == before
    # schedlab demo refuses it too, before any work
    said = run_fail("demo", "--jobsets", "2", "-o", str(out))
    assert "holds the report of" in said
    assert "the DeepRM study of schedlab demo would replace it" in said
    assert not (out / "spec.toml").exists()
    run_ok("report", str(b), "-o", str(out), "--force")
    assert recorded_source(out) == b.resolve()
    assert "packer" in (out / "report.md").read_text(encoding="utf-8")


def test_the_default_output_does_not_replace_the_demo_study(
    tmp_path: Path, two_results: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`schedlab report RESULTS` from where `make run` wrote the DeepRM study into out/."""
    monkeypatch.chdir(tmp_path)
    study = tmp_path / "out"
    study.mkdir()
    (study / "spec.json").write_text(json.dumps({"name": "deeprm_study"}))
    (study / "report.html").write_text("<html>the DeepRM study</html>")
    refused = run_fail("report", str(two_results[0]))
    assert "Error: out holds experiment 'deeprm_study' (its spec.json, runs and report)" in refused
    assert (study / "report.html").read_text() == "<html>the DeepRM study</html>"
