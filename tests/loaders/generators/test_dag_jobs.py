"""The dag generator: chains, fork-joins and fitted shapes of DeepRM tasks, Poisson job arrivals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab import dag_measures
from schedlab.errors import WorkloadModelError
from schedlab.jobset import offered_load
from schedlab.loaders.generators.dag_jobs import DagGenerator
from schedlab.loaders.workload.dag_shape import DagShape
from schedlab.registry import generators
from tests.loader_helpers import assert_seed_reproducible


def _shapes(gen: DagGenerator, n_jobsets: int = 50) -> pl.DataFrame:
    return dag_measures.shapes(gen.generate(0.8, n_jobsets=n_jobsets, seed=3).jobs)


@pytest.mark.parametrize("size", [1, 2, 6])
def test_chain_depth_is_its_tasks(size: int) -> None:
    gen = DagGenerator(shape="chain", size=size)
    js = gen.generate(0.8, n_jobsets=20, seed=1)
    s = dag_measures.shapes(js.jobs)
    assert s.select("tasks", "depth", "width").unique().rows() == [(size, size, 1)]
    cp = dag_measures.critical_paths(js.jobs).get_column("critical_path")
    work = js.jobs.group_by("jobset", "dag").agg(pl.col("duration").sum()).sort("jobset", "dag")
    assert cp.to_list() == work.get_column("duration").to_list()  # a chain's path is all of it


@pytest.mark.parametrize("size", [1, 3, 7])
def test_fork_join_width_and_edges(size: int) -> None:
    js = DagGenerator(shape="fork_join", size=size).generate(0.8, n_jobsets=20, seed=2)
    s = dag_measures.shapes(js.jobs)
    assert s.select("tasks", "depth", "width").unique().rows() == [(size + 2, 3, size)]
    lens = js.jobs.get_column("parents").list.len().to_numpy().reshape(-1, size + 2)
    assert (lens == [0] + [1] * size + [size]).all()


def test_tasks_of_a_job_arrive_together_and_ids_are_per_jobset() -> None:
    js = DagGenerator(size=2).generate(1.0, n_jobsets=30, seed=4)
    jobs = js.jobs
    per = jobs.group_by("jobset", "dag").agg(pl.col("arrival").n_unique(), pl.len())
    assert per.get_column("arrival").max() == 1
    assert (per.get_column("len") == 4).all()
    assert jobs.group_by("jobset").agg(pl.col("job_id").min()).get_column("job_id").max() == 0


@pytest.mark.parametrize(("shape", "size"), [("chain", 3), ("fork_join", 4)])
@pytest.mark.parametrize("load", [0.5, 1.2])
def test_realised_load_matches_target(shape: str, size: int, load: float) -> None:
    gen = DagGenerator(shape=shape, size=size)  # type: ignore[arg-type]
    n = math.ceil(60_000 / (gen.window * gen.rate_for_load(load) * gen.tasks_per_job()))
    js = gen.generate(load, n_jobsets=n, seed=17)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.03)
    assert js.jobs.height == pytest.approx(60_000, rel=0.03)


def test_reproducible() -> None:
    assert_seed_reproducible(DagGenerator(shape="chain", size=3), 0.7, n_jobsets=5)


def _model(path: Path) -> Path:
    DagShape(depth=(0.5, 0.0, 0.5), width=(0.25, 0.75), parents=(0.5, 0.5)).save(path)
    return path


def test_fitted_shapes_follow_the_model(tmp_path: Path) -> None:
    gen = DagGenerator(shape="fitted", shape_model=str(_model(tmp_path / "shape.json")))
    assert gen.tasks_per_job() == pytest.approx(2 * 1.75)
    js = gen.generate(1.0, n_jobsets=400, seed=5)
    s = dag_measures.shapes(js.jobs)
    assert set(s.get_column("depth").unique().to_list()) == {1, 3}
    assert s.get_column("depth").mean() == pytest.approx(2.0, rel=0.1)
    assert s.get_column("width").max() == 2
    assert s.get_column("tasks").mean() == pytest.approx(3.5, rel=0.1)
    lens = js.jobs.get_column("parents").list.len()
    assert lens.max() == 2
    assert offered_load(js)["load"].item() == pytest.approx(1.0, rel=0.1)


def test_fitted_needs_a_valid_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs shape_model="):
        DagGenerator(shape="fitted").generate(0.5, n_jobsets=1, seed=0)
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"kind": "schedlab-dag-shape", "schema_version": 1, "depth": [0.5], '
        '"width": [1.0], "parents": [1.0]}'
    )
    with pytest.raises(WorkloadModelError, match=r"bad.json: depth: expected probabilities"):
        DagGenerator(shape="fitted", shape_model=str(bad)).generate(0.5, n_jobsets=1, seed=0)


def test_registered() -> None:
    gen = generators.make("dag", shape="chain", size=2)
    assert isinstance(gen, DagGenerator)
    assert np.isclose(gen.load_per_rate(), 2 * 1.845)
