"""DAG shapes of a trace (evaluation/fitting/dags.py), the shape model's file, `schedlab fit`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.errors import WorkloadModelError
from schedlab.evaluation.fitting.dags import dag_shape_summary, fit_dag_shape
from schedlab.jobset import JobSet
from schedlab.loaders.generators.dag_jobs import DagGenerator
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.workload.dag_shape import DagShape
from tests.cli_helpers import run_ok


def test_fork_joins_fit_exactly() -> None:
    js = DagGenerator(shape="fork_join", size=3).generate(0.8, n_jobsets=10, seed=0)
    fit = fit_dag_shape(js)
    assert fit.model.depth == (0.0, 0.0, 1.0)
    assert fit.model.width == pytest.approx((2 / 3, 0.0, 1 / 3))  # levels of 1, 3, 1 tasks
    assert fit.model.parents == pytest.approx((0.75, 0.0, 0.25))  # 3 tasks with 1, the join 3
    summary = dag_shape_summary(fit).rows_by_key("quantity", named=True, unique=True)
    assert summary["tasks per job"]["mean"] == summary["tasks per job"]["model_mean"] == 5.0
    assert summary["width"]["max"] == 3


def test_needs_dags() -> None:
    js = DagGenerator().generate(0.8, n_jobsets=2, seed=0)
    with pytest.raises(ValueError, match="has no DAGs"):
        fit_dag_shape(JobSet.create(js.jobs.drop("dag"), js.meta))


def test_model_file_round_trip_and_errors(tmp_path: Path) -> None:
    model = DagShape(depth=(0.5, 0.5), width=(1.0,), parents=(1.0,), source={"x": 1})
    path = tmp_path / "dag_shape.json"
    model.save(path)
    assert DagShape.load(path) == model
    doc = json.loads(path.read_text())
    doc["kind"] = "other"
    with pytest.raises(WorkloadModelError, match="kind: expected 'schedlab-dag-shape'"):
        DagShape.from_json(doc, source="x.json")


@pytest.fixture(scope="module")
def trace(v2018_dags: Path) -> JobSet:
    return read_alibaba2018(v2018_dags, options=TraceOptions(time_step=10)).jobs


def test_real_sample_shapes(trace: JobSet) -> None:
    fit = fit_dag_shape(trace)
    summary = dag_shape_summary(fit).rows_by_key("quantity", named=True, unique=True)
    assert summary["tasks per job"]["n"] == 2112
    assert summary["tasks per job"]["mean"] == pytest.approx(54_994 / 2112)
    assert summary["parents per task"]["n"] == 40_412  # every task with parents is below level 0
    assert summary["parents per task"]["mean"] == pytest.approx(61_548 / 40_412)
    assert (summary["depth"]["max"], summary["width"]["max"]) == (54, 132)
    assert sum(fit.model.depth) == pytest.approx(1.0)


def test_fit_cli_writes_the_dag_shape(trace: JobSet, tmp_path: Path) -> None:
    trace.write_parquet(tmp_path / "ali.parquet")
    out = run_ok("fit", str(tmp_path / "ali.parquet"), "-o", str(tmp_path / "fit"),
                 "--family", "lognormal", "--no-check")  # fmt: skip
    assert "DAG shapes of 2,112 jobs" in out
    assert "depth: mean 5.09, median 4, p95 10, max 54" in out
    shape = tmp_path / "fit" / "dag_shape.json"
    assert (tmp_path / "fit" / "dag_shape.csv").is_file()
    assert "DAG shapes" in (tmp_path / "fit" / "fit_report.md").read_text()
    out = run_ok("generate", "dag", "-p", "shape=fitted", "-p", f"shape_model={shape}",
                 "--load", "0.9", "--jobsets", "20", "--seed", "1",
                 "-o", str(tmp_path / "gen.parquet"))  # fmt: skip
    assert "wrote" in out
    assert "parents" in JobSet.read_parquet(tmp_path / "gen.parquet").jobs.columns
