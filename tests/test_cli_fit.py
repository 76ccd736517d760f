"""``schedlab fit`` and ``schedlab generate fitted --model`` on the bundled KTH-SP2 log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.traces import bundled
from tests.cli_helpers import run_fail, run_ok


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fit_cli")
    result, _ = load_trace("swf", bundled("kth-sp2"), options=TraceOptions(time_step=60.0))
    result.jobs.write_parquet(folder / "kth.parquet")
    out = run_ok(
        "fit",
        str(folder / "kth.parquet"),
        "-o",
        str(folder / "fit"),
        "--family",
        "lognormal",
        "--family",
        "weibull",
        "--family",
        "lognormal_mix2",
        "--check-jobsets",
        "6",
        "--seed",
        "1",
    )
    assert "wrote" in out
    assert "Kendall tau" in out
    return folder


def test_fit_writes_model_and_report(fitted: Path) -> None:
    fit = fitted / "fit"
    model = json.loads((fit / "model.json").read_text())
    assert model["schema_version"] == 1
    assert model["resources"] == ["procs"]
    assert model["time_step_seconds"] == 60.0
    assert model["durations"]["family"] in ("lognormal", "weibull", "lognormal_mix2")
    assert model["arrivals"]["kind"] == "nhpp"  # 11 months with a clear daily cycle
    assert model["source"]["loader"] == "swf"
    for name in (
        "fit_report.html",
        "fit_report.md",
        "duration_candidates.csv",
        "arrival_models.csv",
        "demands.csv",
        "check_summary.csv",
        "duration_qq.png",
        "duration_ccdf.png",
        "arrival_profile.png",
        "check_ecdf.png",
    ):
        assert (fit / name).is_file(), name
    html = (fit / "fit_report.html").read_text()
    assert "data:image/png;base64," in html
    assert "Heuristics: trace vs synthetic" in html


def test_generate_fitted_with_model_option(fitted: Path) -> None:
    jobs = fitted / "jobs.parquet"
    out = run_ok(
        "generate",
        "fitted",
        "--model",
        str(fitted / "fit" / "model.json"),
        "--load",
        "0.9",
        "--jobsets",
        "40",
        "--seed",
        "3",
        "-o",
        str(jobs),
    )
    assert "pooled realised load" in out
    js = JobSet.read_parquet(jobs)
    assert js.resources == ("procs",)
    assert js.meta.provenance["generator"] == "fitted"
    assert js.meta.provenance["loads"] == [0.9]
    assert 0.5 < offered_load(js)["load"].item() < 1.5  # 40 heavy-tailed jobsets: near 0.9


def test_model_option_errors(fitted: Path, tmp_path: Path) -> None:
    model = str(fitted / "fit" / "model.json")
    out = run_fail("generate", "deeprm", "--model", model, "--load", "0.5", "-o", "x.parquet")
    assert "--model is a parameter of the `fitted` generator" in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "workload_model", "schema_version": 7}')
    out = run_fail(
        "generate",
        "fitted",
        "--model",
        str(bad),
        "--load",
        "0.5",
        "-o",
        str(tmp_path / "x.parquet"),
    )
    assert "schema_version: 7 is not supported" in out
    assert str(bad) in out
