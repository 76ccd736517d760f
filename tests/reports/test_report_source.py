"""A report folder names its source (report-source.json); a report of another study is refused
there unless forced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.errors import OutputError
from schedlab.reports.report_source import (
    MARKER,
    check_report_folder,
    record_report_source,
    recorded_source,
)


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    a.touch()
    b.touch()
    return a, b


@pytest.fixture
def recorded(tmp_path: Path, sources: tuple[Path, Path]) -> tuple[Path, Path, Path]:
    """``(out, a, b)``: the folder ``tmp_path/out`` recording source ``a`` (``b``: another)."""
    a, b = sources
    out = tmp_path / "out"
    record_report_source(out, a)
    return out, a, b


def test_a_new_or_empty_folder_takes_any_report(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    a, _ = sources
    check_report_folder(tmp_path / "new", a)
    (tmp_path / "empty").mkdir()
    check_report_folder(tmp_path / "empty", a)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    check_report_folder(tmp_path / "other", a)  # neither a report nor an experiment


def test_the_same_source_may_redraw_its_report(
    tmp_path: Path, recorded: tuple[Path, Path, Path]
) -> None:
    out, a, _ = recorded
    (out / "report.html").write_text("<html>")
    check_report_folder(out, a)
    check_report_folder(out, tmp_path / "." / "a.parquet")  # another spelling of the same file
    assert recorded_source(out) == a.resolve()


def test_another_source_is_refused_unless_forced(recorded: tuple[Path, Path, Path]) -> None:
    out, a, b = recorded
    said = (
        rf"{out} holds the report of {a} \({MARKER}\); a report of {b} would replace it: "
        "choose another -o, or pass --force"
    )
    with pytest.raises(OutputError, match=said):
        check_report_folder(out, b)
    check_report_folder(out, b, force=True)


def test_the_marker_is_relative_so_a_moved_tree_keeps_its_source(
    tmp_path: Path, recorded: tuple[Path, Path, Path]
) -> None:
    out, a, _ = recorded
    marker = json.loads((out / MARKER).read_text())
    assert marker["source"] == "../a.parquet"
    assert marker["kind"] == "results"
    moved = tmp_path / "moved"
    moved.mkdir()
    a.rename(moved / "a.parquet")
    out.rename(moved / "out")
    check_report_folder(moved / "out", moved / "a.parquet")


def test_an_experiment_directory_is_refused_to_other_sources(
    tmp_path: Path, sources: tuple[Path, Path]
) -> None:
    a, _ = sources
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "spec.json").write_text(json.dumps({"name": "deeprm_study"}))
    said = r"holds experiment 'deeprm_study' \(its spec.json, runs and report\); a report of "
    with pytest.raises(OutputError, match=said + r".*a.parquet would replace it"):
        check_report_folder(exp, a)
    check_report_folder(exp, exp)  # its own report (schedlab demo)
    record_report_source(exp, exp)
    assert json.loads((exp / MARKER).read_text())["source"] == "."
    check_report_folder(exp, exp)


@pytest.mark.parametrize("name", ["report.html", "report.md"])
def test_a_report_of_unknown_source_is_refused(
    tmp_path: Path, sources: tuple[Path, Path], name: str
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / name).write_text("a report written by the Python API")
    with pytest.raises(OutputError, match=r"holds a report whose source is not recorded"):
        check_report_folder(tmp_path / "out", sources[0])
    (tmp_path / "out" / MARKER).write_text("{not json")
    with pytest.raises(OutputError, match=rf"holds a report whose {MARKER} cannot be read"):
        check_report_folder(tmp_path / "out", sources[0])
