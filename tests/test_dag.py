"""Precedence graphs (schedlab.dag): JobSet validation, children, ranks, critical paths."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest

from schedlab import dag, dag_measures
from schedlab.errors import JobSetError
from tests.dag_helpers import brute_ranks, earliest_finish, jobset, random_dag_jobs
from tests.strategies import jobs_frame


@pytest.mark.parametrize("instances", [1, 3])
@pytest.mark.parametrize("seed", range(12))
def test_ranks_and_critical_paths_match_brute_force(seed: int, instances: int) -> None:
    js = jobset(random_dag_jobs(seed, instances=instances))
    jobs = js.jobs
    g = dag.graph(jobs)
    rank = dag_measures.upward_rank(g, jobs.get_column("duration").to_numpy())
    assert rank.tolist() == brute_ranks(jobs)
    finish = jobs.select("jobset", "dag").with_columns(pl.Series("f", earliest_finish(jobs)))
    expected = finish.group_by("jobset", "dag").agg(pl.col("f").max()).sort("jobset", "dag")
    cp = dag_measures.critical_paths(jobs, g)
    assert cp.get_column("critical_path").to_list() == expected.get_column("f").to_list()
    assert cp.get_column("tasks").sum() == jobs.height


@pytest.mark.parametrize("instances", [1, 3])
def test_graph_counts_children_and_order(instances: int) -> None:
    jobs = jobset(random_dag_jobs(5, instances=instances, dags=6)).jobs
    g = dag.graph(jobs)
    lists = jobs.get_column("parents").to_list()
    assert g.n_parents.tolist() == [len(p) for p in lists]
    assert g.n_edges == sum(map(len, lists))
    key = jobs.get_column("task" if instances > 1 else "job_id").to_list()
    sets = jobs.get_column("jobset").to_list()
    parent, child = g.edges()
    for t, c in zip(parent.tolist(), child.tolist(), strict=True):  # each edge is a list entry
        rows = np.flatnonzero(g.task == t)
        assert key[rows[0]] in lists[c]
        assert sets[rows[0]] == sets[c]
    assert np.bincount(g.task).tolist() == g.task_rows.tolist()
    position = np.empty(jobs.height, np.int64)
    position[g.order] = np.arange(jobs.height)
    for t, c in zip(parent.tolist(), child.tolist(), strict=True):
        assert position[np.flatnonzero(g.task == t)].max() < position[c]


def _chain(**columns: list) -> pl.DataFrame:
    """Jobs 0 -> 1 -> 2 of dag 7 in jobset 0; ``columns`` replace or add whole columns."""
    base = dict(
        arrival=[0, 0, 0], duration=[1, 2, 3], cpu=[1.0] * 3, parents=[[], [0], [1]], dag=[7] * 3
    )
    jobs = jobs_frame(**base | columns)
    return jobs.cast({"parents": pl.List(pl.Int64)})


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"parents": [[], [0], [5]]}, r"jobset 0, job_id 2 \(row 2\) names parent 5, which is no"),
        ({"parents": [[2], [0], [1]]}, r"job_id \d .* dependency cycle \(job_ids (\d -> ){3}\d\)"),
        ({"parents": [[], [1], [1]]}, r"job_id 1 .* dependency cycle \(job_ids 1 -> 1\)"),
        ({"parents": [[], [0, 0], [1]]}, r"job_id 1 \(row 1\) names parent 0 twice"),
        ({"parents": [[], [0], [None]]}, r"job_id 2 \(row 2\) names a null parent"),
        ({"dag": [7, 7, 8]}, r"job_id 2 \(row 2\) in dag 8 waits for job_id 1 in dag 7"),
        ({"dag": [7, None, 7]}, r"column 'dag' has a missing value at row 1"),
        ({"jobset": [0, 0, 1]}, r"jobset 1, job_id 2 .* names parent 1, which is no task of"),
        ({"task": [4, 4, 6]}, r"job_id 1 \(row 1\) names parent 0, which is no task"),
        (
            {"task": [4, 4, 6], "parents": [[], [], [4]], "dag": [7, 8, 8]},
            r"job_id 1 \(row 1\) is in dag 8 but another row of its task is in dag 7",
        ),
    ],
)
def test_invalid_dags_are_refused_naming_the_job(columns: dict, match: str) -> None:
    with pytest.raises(JobSetError, match=match):
        jobset(_chain(**columns))


def test_instances_wait_for_every_instance_of_their_parent_tasks() -> None:
    jobs = jobset(
        _chain(task=[4, 4, 6], parents=[[], [], [4]], duration=[1, 5, 2], job_id=[0, 1, 2])
    ).jobs
    g = dag.graph(jobs)
    assert g.task_rows.tolist() == [2, 1]
    assert dag_measures.upward_rank(g, jobs.get_column("duration").to_numpy()).tolist() == [3, 7, 2]
    assert dag_measures.critical_paths(jobs, g).get_column("critical_path").to_list() == [7]


def test_critical_paths_need_the_dag_column() -> None:
    with pytest.raises(ValueError, match="need the dag column"):
        dag_measures.critical_paths(jobset(_chain().drop("dag")).jobs)


@pytest.mark.parametrize("instances", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_levels_and_shapes_match_brute_force(seed: int, instances: int) -> None:
    jobs = jobset(random_dag_jobs(seed, instances=instances)).jobs
    g = dag.graph(jobs)
    key = jobs.get_column("task" if instances > 1 else "job_id").to_list()
    sets, lists = jobs.get_column("jobset").to_list(), jobs.get_column("parents").to_list()
    level: dict = {}
    for r in g.order.tolist():  # the longest chain of tasks above each row, by its parents
        above = [level[(sets[r], p)] + 1 for p in lists[r]]
        level[(sets[r], key[r])] = max(level.get((sets[r], key[r]), 0), *above, 0)
    expected = [level[(s, k)] for s, k in zip(sets, key, strict=True)]
    assert dag_measures.levels(g).tolist() == expected
    shapes = dag_measures.shapes(jobs, g)
    dags = jobs.get_column("dag").to_list()
    per_dag: dict = {}  # (jobset, dag) -> tasks per level, each task (key) counted once
    for s, d, _task, lv in set(zip(sets, dags, key, expected, strict=True)):
        per_dag.setdefault((s, d), Counter())[lv] += 1
    want = [(sum(n.values()), max(n) + 1, max(n.values())) for _, n in sorted(per_dag.items())]
    assert shapes.select("tasks", "depth", "width").rows() == want


@pytest.mark.parametrize("instances", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_earliest_starts_match_brute_force(seed: int, instances: int) -> None:
    jobs = jobset(random_dag_jobs(seed, instances=instances)).jobs
    g = dag.graph(jobs)
    duration = jobs.get_column("duration").to_numpy()
    start = dag_measures.earliest_starts(g, np.zeros(jobs.height, np.int64), duration)
    assert (start + duration).tolist() == earliest_finish(jobs)
    late = dag_measures.earliest_starts(g, np.full(jobs.height, 100), duration)
    assert (late == start + 100).all()
