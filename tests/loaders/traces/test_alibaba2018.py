"""Alibaba cluster-trace-v2018 batch_task loader: DAGs, granularity, options, instances."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import dag, dag_measures
from schedlab.jobset import JobSet
from schedlab.loaders.traces.alibaba2018 import MACHINE_CPU, TRACE_MACHINES, read_alibaba2018
from schedlab.loaders.traces.transform import TraceOptions
from schedlab.registry import loaders
from tests.alibaba2018_helpers import (
    DAG,
    GOOD,
    INSTANCES,
    QUIRKS,
    column,
    csv_file,
    same_load,
)
from tests.loader_helpers import sample_lines

# -- granularity on a hand-made DAG ----------------------------------------------------------------
# j_1: M1 (10 s, 2 instances), M2 (5 s), R3_1_2 (20 s, 3 instances), J4_3 (1 s)
# j_2: task_<base64> (60 s, 4 instances), MergeTask (10 s): independent tasks
# j_3: M1 Running (dropped), R2_1 (15 s): its parent was dropped


def test_task_granularity_hand_computed() -> None:
    r = read_alibaba2018(DAG)
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)
    assert r.report.dropped == {"status_Running": 1}
    assert r.report.fixed == {"dropped_parent_removed": 1}
    assert column(r, "arrival") == [0, 0, 10, 30, 100, 160, 205]  # start_time - 100
    assert column(r, "duration") == [10, 5, 20, 1, 60, 10, 15]
    assert column(r, "cpu") == [1.0, 0.5, 2.0, 1.0, 0.5, 1.0, 1.0]  # plan_cpu / 100 cores
    assert column(r, "mem") == [0.5, 0.2, 1.0, 0.3, 0.1, 0.2, 0.2]
    assert column(r, "parents") == [[], [], [0, 1], [2], [], [], []]
    assert column(r, "dag") == [1, 1, 1, 1, 2, 2, 3]  # j_<n>
    assert r.jobs.meta.machines == TRACE_MACHINES  # the trace's own cluster by default
    assert tuple(r.jobs.machine_capacity) == (MACHINE_CPU, 100.0)
    assert r.jobs.meta.units == ("core", "normalized memory")
    assert sample_lines(r, "status_Running") == [7]
    assert r.report.samples.get_column("raw").to_list() == ["M1,1,j_3,1,Running,300,0,100,0.2"]


def test_instance_granularity_copies_each_task() -> None:
    r = read_alibaba2018(DAG, granularity="instance")
    assert len(r.jobs) == 2 + 1 + 3 + 1 + 4 + 1 + 1
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)  # the report counts file rows
    assert column(r, "duration") == [10, 10, 5, 20, 20, 20, 1, 60, 60, 60, 60, 10, 15]
    # the DAG stays between tasks: each instance names its parent tasks once
    assert column(r, "task") == [0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 6]
    assert column(r, "parents") == [[], [], [], [0, 1], [0, 1], [0, 1], [2], [], [], [], [], [], []]
    assert column(r, "dag") == [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3]
    g = dag.graph(r.jobs.jobs)
    assert g.n_edges == 7
    assert g.task_rows.tolist() == [2, 1, 3, 1, 4, 1, 1]
    paths = dag_measures.critical_paths(r.jobs.jobs, g)
    assert paths.get_column("critical_path").to_list() == [31, 60, 15]


def test_instance_granularity_keeps_edges_inside_each_jobset() -> None:
    r = read_alibaba2018(DAG, granularity="instance", options=TraceOptions(jobset_size=4))
    jobs = r.jobs.jobs  # R3_1_2's instances are split over jobsets 0 and 1
    assert column(r, "jobset") == [0] * 4 + [1] * 4 + [2] * 4 + [3]
    assert column(r, "parents")[3:7] == [[0, 1], [], [], [2]]  # M1 and M2 are in jobset 0 only
    assert r.report.fixed["parent_outside_jobset_removed"] == 1  # (jobset 1, R3_1_2)
    dag.graph(jobs)


def test_overlapping_windows_keep_each_jobsets_own_parents() -> None:
    options = TraceOptions(jobset_size=4, windows=3, seed=1)  # 4 start rows of 7: overlaps
    r = read_alibaba2018(DAG, options=options, source_ids=True)
    jobs = r.jobs.jobs
    assert jobs.get_column("source_id").n_unique() < jobs.height  # rows repeat across windows
    wanted = {"j_1/R3_1_2": {"j_1/M1", "j_1/M2"}, "j_1/J4_3": {"j_1/R3_1_2"}}
    for _, part in r.jobs.split():
        name = dict(zip(part["job_id"], part["source_id"], strict=True))
        for sid, ps in zip(part["source_id"], part["parents"].to_list(), strict=True):
            assert {name[p] for p in ps} == wanted.get(sid, set()) & set(name.values())


def test_instance_granularity_cap() -> None:
    r = read_alibaba2018(DAG, granularity="instance", max_instances=2)
    assert len(r.jobs) == 2 + 1 + 2 + 1 + 2 + 1 + 1
    assert r.report.fixed["instances_capped"] == 2  # R3_1_2 (3) and task_... (4)


def test_job_granularity_critical_path() -> None:
    r = read_alibaba2018(DAG, granularity="job")
    # j_1: M1 -> R3 -> J4 = 10 + 20 + 1 (M2 -> R3 -> J4 = 26 is shorter); j_2: independent
    # tasks, the longest one; j_3: R2_1 alone (its parent is not kept)
    assert column(r, "duration") == [31, 60, 15]
    assert column(r, "arrival") == [0, 100, 205]
    assert column(r, "cpu") == [2.0, 1.0, 1.0]  # the largest per-instance demand
    assert column(r, "mem") == [1.0, 0.2, 0.2]
    assert column(r, "source_id") == ["j_1", "j_2", "j_3"]
    assert (r.report.rows_read, r.report.rows_kept) == (8, 7)  # task rows merged into jobs


def test_job_granularity_total_work() -> None:
    r = read_alibaba2018(DAG, granularity="job", job_duration="total_work")
    assert column(r, "duration") == [10 * 2 + 5 + 20 * 3 + 1, 60 * 4 + 10, 15]
    cpu = column(r, "cpu")
    assert cpu[0] == pytest.approx((1.0 * 20 + 0.5 * 5 + 2.0 * 60 + 1.0 * 1) / 86)
    assert cpu[1] == pytest.approx((0.5 * 240 + 1.0 * 10) / 250)
    assert column(r, "mem")[0] == pytest.approx((0.5 * 20 + 0.2 * 5 + 1.0 * 60 + 0.3 * 1) / 86)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"granularity": "tasks"}, "granularity"),
        ({"job_duration": "longest"}, "job_duration"),
        ({"demand": "used"}, "instances="),
        ({"max_instances": 0}, "max_instances"),
        ({"statuses": "Terminatd"}, "did you mean 'Terminated'"),
        ({"statuses": ()}, "at least one"),
    ],
)
def test_invalid_choices(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_alibaba2018(DAG, **kwargs)


# -- DAG name quirks, each counted -----------------------------------------------------------------


def test_quirks_each_counted() -> None:
    r = read_alibaba2018(QUIRKS, source_ids=True)
    assert r.report.rows_kept == r.report.rows_read == 28
    assert r.report.fixed == {
        "self_dependency_removed": 1,  # M5_5
        "duplicate_parent_removed": 1,  # R6_1_1
        "missing_parent_removed": 1,  # J7_1_99
        "stg_suffix_stripped": 1,  # J8_1_Stg4
        "truncated_task_name": 2,  # the two 50-character names
        "truncated_parent_dropped": 1,  # ..._23_1 (not ..._23_)
        "cyclic_dependency_removed": 1,  # R1_2 <-> R2_1
        "unrecognized_task_name": 1,  # weird-name
    }
    parents = dict(zip(column(r, "source_id"), column(r, "parents"), strict=True))
    ids = dict(zip(column(r, "source_id"), column(r, "job_id"), strict=True))
    assert parents["j_10/M5_5"] == []
    assert parents["j_10/R6_1_1"] == parents["j_10/J7_1_99"] == parents["j_10/J8_1_Stg4"] == [0]
    cut = next(k for k in parents if k.startswith("j_20/R5_"))
    trail = next(k for k in parents if k.startswith("j_20/J30_"))
    wanted = [ids["j_20/M100"], *(ids[f"j_20/M{t}"] for t in range(10, 24))]
    assert parents[cut] == parents[trail] == wanted  # the cut "_1" is gone, "_23_" is kept
    assert parents["j_20/R1_5"] == [ids[cut]]  # so no false cycle 5 -> 1 -> 5
    assert parents["j_21/R1_2"] == [ids["j_21/R2_1"]]
    assert parents["j_21/R2_1"] == []  # the edge closing the cycle is removed
    assert parents["job-x/R2_1"] == [ids["job-x/M1"]]  # non-j_<n> job names still group


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(1, 8), max_size=4),  # parents of task k+1
        min_size=1,
        max_size=8,
    )
)
def test_random_dags_come_out_acyclic(tmp_path_factory: pytest.TempPathFactory, spec) -> None:
    lines = [
        f"{'R' if ps else 'M'}{k + 1}{''.join(f'_{p}' for p in ps)},1,j_7,1,Terminated,"
        f"{k},{k + 5},100,0.1\n"
        for k, ps in enumerate(spec)
    ]
    path = tmp_path_factory.mktemp("dag") / "batch_task.csv"
    path.write_text("".join(lines))
    r = read_alibaba2018(path)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(spec)))
    edges = [
        (p, c) for c, ps in zip(column(r, "job_id"), column(r, "parents"), strict=True) for p in ps
    ]
    graph.add_edges_from(edges)
    assert nx.is_directed_acyclic_graph(graph)
    # every kept edge was named, and only cycles lose valid edges
    task_of = {j: int(n.split("_")[0][1:]) for j, n in enumerate(_names(spec))}
    for p, c in edges:
        assert task_of[p] in spec[c]
    named = nx.DiGraph(
        (p, k + 1) for k, ps in enumerate(spec) for p in ps if p != k + 1 and p <= len(spec)
    )
    removed = r.report.fixed.get("cyclic_dependency_removed", 0)
    assert (removed > 0) == (not nx.is_directed_acyclic_graph(named))


def _names(spec) -> list[str]:
    return [f"{'R' if ps else 'M'}{k + 1}" for k, ps in enumerate(spec)]


def test_parquet_round_trip_keeps_parents(tmp_path: Path) -> None:
    r = read_alibaba2018(DAG)
    r.jobs.write_parquet(tmp_path / "jobs.parquet")
    back = JobSet.read_parquet(tmp_path / "jobs.parquet")
    assert back.jobs.equals(r.jobs.jobs)
    assert back.jobs.schema["parents"] == pl.List(pl.Int64)


def test_registered_and_loadable_from_the_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from schedlab.cli import main

    assert loaders.load("alibaba2018") is read_alibaba2018
    out = tmp_path / "jobs.parquet"
    args = ["load", "alibaba2018", str(DAG), "-o", str(out), "--no-cache", "-p", "granularity=job"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert JobSet.read_parquet(out).jobs.get_column("duration").to_list() == [31, 60, 15]


# -- options ---------------------------------------------------------------------------------------


def test_window_and_time_step() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(start=10, end=160, time_step=10))
    assert r.report.dropped == {"status_Running": 1, "outside_window": 4}
    assert column(r, "arrival") == [0, 2, 9]  # (start_time - 100 - 10) // 10
    assert column(r, "duration") == [2, 1, 6]  # ceil(20/10), ceil(1/10), ceil(60/10)
    assert column(r, "parents") == [[], [0], []]  # R3's parents arrived before the window


def test_scaling_to_slots_and_machines() -> None:
    r = read_alibaba2018(DAG, options=TraceOptions(slots_per_machine=10, machines=2))
    assert r.jobs.meta.capacity == (20.0, 20.0)
    assert r.jobs.meta.units == ("slot", "slot")
    assert column(r, "cpu")[2] == pytest.approx(2.0 * 10 / MACHINE_CPU)
    assert column(r, "mem")[2] == pytest.approx(1.0 * 10 / 100)


def test_a_job_must_fit_on_one_machine_however_many(tmp_path: Path) -> None:
    path = csv_file(tmp_path, GOOD + "M2,1,j_1,1,Terminated,10,20,20000,0.5\n")  # 200 cores
    assert read_alibaba2018(path).report.dropped == {"exceeds_capacity": 1}
    three = read_alibaba2018(path, options=TraceOptions(machines=3))
    assert three.report.dropped == {"exceeds_capacity": 1}
    assert three.jobs.meta.machines == 3
    assert three.jobs.meta.capacity == (3 * MACHINE_CPU, 300.0)
    bigger = read_alibaba2018(path, machine_cpu=256.0, options=TraceOptions(machines=1))
    assert bigger.report.rows_kept == 2


def test_sample_is_reproducible_and_keeps_parents_inside() -> None:
    opts = TraceOptions(sample=4, seed=7)
    a, b = read_alibaba2018(QUIRKS, options=opts), read_alibaba2018(QUIRKS, options=opts)
    assert len(a.jobs) == 4
    assert a.report.dropped == {"not_sampled": 24}
    same_load(a, b)
    sampled = [
        read_alibaba2018(QUIRKS, options=TraceOptions(sample=4, seed=s), source_ids=True)
        for s in range(5)
    ]
    assert len({tuple(column(s, "source_id")) for s in sampled}) > 1
    for s in sampled:
        ids = set(column(s, "job_id"))
        assert all(set(p) <= ids for p in column(s, "parents"))


def test_split_by_window_and_by_count() -> None:
    by_window = read_alibaba2018(DAG, options=TraceOptions(jobset_window=100))
    assert column(by_window, "jobset") == [0, 0, 0, 0, 1, 1, 2]
    assert column(by_window, "arrival") == [0, 0, 10, 30, 0, 60, 5]
    assert by_window.jobs.meta.arrival_window == 100
    by_count = read_alibaba2018(QUIRKS, options=TraceOptions(jobset_size=3))
    assert by_count.jobs.jobs.group_by("jobset").len()["len"].max() == 3
    assert by_count.report.fixed["parent_outside_jobset_removed"] > 0
    for _, jobs in by_count.jobs.split():  # parents never cross jobsets
        ids = set(jobs.get_column("job_id"))
        assert all(set(p) <= ids for p in jobs.get_column("parents"))


# -- batch_instance.csv ----------------------------------------------------------------------------


def test_instances_give_usage_and_instance_durations() -> None:
    used = read_alibaba2018(DAG, instances=INSTANCES, demand="used")
    assert column(used, "cpu")[:3] == pytest.approx([0.9, 0.5, 1.7])  # mean cpu_avg / 100
    assert column(used, "mem")[:3] == pytest.approx([0.4, 0.2, 0.9])
    assert used.report.fixed["usage_missing_plan_kept"] == 5
    prov = used.jobs.meta.provenance["alibaba2018"]["instances"]
    assert (prov["rows_read"], prov["rows_used"], prov["tasks_with_instances"]) == (7, 5, 2)
    assert prov["skipped"] == {"not_terminated": 1, "wrong_field_count": 1}
    per_instance = read_alibaba2018(DAG, instances=INSTANCES, granularity="instance")
    assert column(per_instance, "duration")[:6] == [9, 9, 5, 18, 18, 18]  # mean instance time
