"""Precedence of DAG workloads in schedules: check_precedence and the violation counts."""

from __future__ import annotations

import polars as pl
import pytest

from schedlab.simulator.check import (
    InvalidScheduleError,
    check_precedence,
    precedence_table,
    precedence_violations,
)
from tests.dag_helpers import earliest_finish, jobset, random_dag_jobs


def _diamond(**columns: list) -> pl.DataFrame:
    """0 -> (1, 2) -> 3, durations 1, 2, 3, 1."""
    base = {"jobset": [0] * 4, "job_id": [0, 1, 2, 3], "arrival": [0] * 4,
            "duration": [1, 2, 3, 1], "cpu": [1.0] * 4, "parents": [[], [0], [0], [1, 2]],
            "dag": [0] * 4}  # fmt: skip
    base.update(columns)
    return pl.DataFrame(base, schema_overrides={"parents": pl.List(pl.Int64)})


def test_earliest_schedule_keeps_precedence() -> None:
    js = jobset(_diamond())
    start, finish = [0, 1, 1, 4], [1, 3, 4, 5]
    check_precedence(js, start, finish)
    v = precedence_violations(js, start, finish)
    assert (v.edges, v.violated_edges, v.jobs_with_parents, v.violating_jobs) == (4, 0, 3, 0)
    assert v.first is None


def test_violation_names_the_earliest_job_and_counts() -> None:
    js = jobset(_diamond())
    start, finish = [0, 0, 1, 3], [1, 2, 4, 4]  # job 1 starts with its parent; 3 before 2 ends
    v = precedence_violations(js, start, finish)
    assert (v.violated_edges, v.violating_jobs) == (2, 2)
    assert v.first == (1, 0, 0, 1)
    with pytest.raises(
        InvalidScheduleError,
        match=r"jobset 0, job_id 1 started at step 0 before its parent job_id 0 finished at step "
        r"1: 2 of 4 edges violated, by 2 of the 3 jobs with parents",
    ):
        check_precedence(js, start, finish)


def test_an_instance_waits_for_every_instance_of_its_parent_task() -> None:
    js = jobset(_diamond(task=[8, 8, 9, 9], parents=[[], [], [8], [8]], duration=[1, 4, 1, 1]))
    order = js.jobs.get_column("job_id").to_list()
    assert order == [0, 1, 2, 3]
    v = precedence_violations(js, [0, 0, 2, 4], [1, 4, 3, 5])  # row 2 starts before row 1 ends
    assert (v.edges, v.violated_edges, v.violating_jobs) == (2, 1, 1)
    assert v.first == (2, 2, 1, 4)


def test_no_parents_nothing_to_violate() -> None:
    js = jobset(_diamond().drop("parents"))
    v = precedence_violations(js, [0] * 4, [1, 2, 3, 1])
    assert (v.edges, v.violated_edges, v.jobs_with_parents) == (0, 0, 0)


@pytest.mark.parametrize("seed", range(4))
def test_earliest_schedules_of_random_dags_pass(seed: int) -> None:
    js = jobset(random_dag_jobs(seed, instances=2))
    finish = earliest_finish(js.jobs)
    start = [f - d for f, d in zip(finish, js.jobs["duration"], strict=True)]
    check_precedence(js, start, finish)
    late = [s + 1 if p else s for s, p in zip(start, js.jobs["parents"].to_list(), strict=True)]
    check_precedence(js, late, [s + d for s, d in zip(late, js.jobs["duration"], strict=True)])


def test_precedence_table_per_policy() -> None:
    js = jobset(_diamond())
    table = pl.DataFrame({"policy": ["a"] * 4 + ["b"] * 4, "jobset": [0] * 8,
                          "job_id": [3, 2, 1, 0] * 2, "start": [4, 1, 1, 0, 3, 1, 0, 0],
                          "finish": [5, 4, 3, 1, 4, 4, 2, 1]})  # fmt: skip
    out = precedence_table(js, table)
    assert out.rows() == [("a", 4, 0, 3, 0), ("b", 4, 2, 3, 2)]
    with pytest.raises(InvalidScheduleError, match="policy 'a': results do not hold every job"):
        precedence_table(js, table.head(3))
