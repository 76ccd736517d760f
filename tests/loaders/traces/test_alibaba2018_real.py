"""Alibaba cluster-trace-v2018 batch_task loader on the real 55,874-row sample: every row
accounted for, a clean DAG, ranks, names against a regex reference, jobsets that simulate."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import polars as pl
import pytest

from schedlab import dag, dag_measures
from schedlab.loaders.traces import alibaba2018_parse as parse
from schedlab.loaders.traces.alibaba2018 import read_alibaba2018
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.transform import TraceOptions
from tests.alibaba2018_helpers import same_load
from tests.dag_helpers import brute_ranks

# -- the real 55,874-row sample --------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(v2018_dags: Path) -> LoadResult:
    return read_alibaba2018(v2018_dags, source_ids=True)


@pytest.mark.slow
def test_real_sample_accounts_for_every_row(real) -> None:
    rep = real.report
    assert (rep.rows_read, rep.rows_kept) == (55_874, 54_994)
    assert rep.dropped == {"status_Failed": 36, "status_Running": 652, "status_Waiting": 192}
    assert rep.fixed == {
        "integer_written_as_float": 54_994,  # pandas wrote 1.0 and 100.0
        "truncated_task_name": 307,
        "truncated_parent_dropped": 230,
        "dropped_parent_removed": 1,
        "zero_duration_as_one_step": 650,
    }
    assert real.jobs.meta.provenance["alibaba2018"]["header_line"] is True
    assert rep.samples.get_column("raw").null_count() == 0
    assert rep.samples.sort("line").row(0, named=True)["line"] == 645


def test_real_sample_dag_is_clean(real) -> None:
    jobs = real.jobs.jobs
    graph = nx.DiGraph()
    graph.add_nodes_from(jobs.get_column("job_id").to_list())
    graph.add_edges_from(
        (p, c) for c, ps in zip(jobs["job_id"], jobs["parents"], strict=True) for p in ps
    )
    assert nx.is_directed_acyclic_graph(graph)
    assert graph.number_of_edges() == 61_548  # 61,549 distinct named edges, one to a Failed task
    job = {j: s.split("/")[0] for j, s in zip(jobs["job_id"], jobs["source_id"], strict=True)}
    assert all(job[p] == job[c] for p, c in graph.edges)


def test_real_sample_dags_and_ranks(real) -> None:
    jobs = real.jobs.jobs
    job = jobs.get_column("source_id").str.extract(r"^j_(\d+)/", 1).cast(pl.Int64)
    assert jobs.get_column("dag").to_list() == job.to_list()
    g = dag.graph(jobs)
    assert g.n_edges == 61_548
    rank = dag_measures.upward_rank(g, jobs.get_column("duration").to_numpy())
    assert rank.tolist() == brute_ranks(jobs)


def test_real_sample_names_match_a_regex_reference(v2018_dags: Path) -> None:
    """The compiled scanner's task indices and parents, against polars regexes."""
    parsed = parse.parse_tasks(v2018_dags, header=True, statuses=("Terminated",))
    ref = (
        pl.read_csv(v2018_dags, infer_schema=False)
        .filter(pl.col("status") == "Terminated")
        .select(
            pl.col("task_name").str.extract(r"^[A-Za-z]+(\d+)", 1).cast(pl.Int32).alias("idx"),
            pl.col("task_name")
            .str.replace(r"_\d+$", "", literal=False)
            .str.extract_all(r"_\d+")
            .alias("cut"),
            pl.col("task_name").str.extract_all(r"_\d+").alias("all"),
            (pl.col("task_name").str.len_bytes() >= 50).alias("truncated"),
        )
        .select(
            "idx",
            pl.when("truncated")
            .then("cut")
            .otherwise("all")
            .list.eval(pl.element().str.slice(1).cast(pl.Int32))
            .alias("parents"),
        )
    )
    assert parsed.good.get_column("idx").to_list() == ref.get_column("idx").to_list()
    assert parsed.lengths.tolist() == ref.get_column("parents").list.len().to_list()
    assert parsed.parents.tolist() == ref.get_column("parents").explode().to_list()


def test_real_sample_bundled_gzip_is_the_same(real, tmp_path, monkeypatch) -> None:
    from schedlab.traces import bundled

    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path))
    same_load(real, read_alibaba2018(bundled("alibaba2018"), source_ids=True))


def test_real_sample_windowed_and_sampled_jobsets_simulate(v2018_dags: Path) -> None:
    from schedlab.policies.heuristics import SJF
    from schedlab.simulator.run import simulate

    opts = TraceOptions(time_step=10, slots_per_machine=10, sample=2000, seed=3, jobset_size=200)
    sampled = read_alibaba2018(v2018_dags, options=opts)
    assert len(sampled.jobs) == 2000
    assert len(sampled.jobs.jobset_ids) == 10
    windowed = read_alibaba2018(
        v2018_dags,
        options=TraceOptions(
            start=3600, end=7200, time_step=10, slots_per_machine=10, jobset_window=600
        ),
    )
    assert windowed.report.rows_kept == 710
    for js in (sampled.jobs, windowed.jobs):
        table = simulate(js, [SJF()]).table
        assert table.height == len(js)
        assert (table["start"] >= table["arrival"]).all()


def test_real_sample_every_status_per_job(v2018_dags: Path) -> None:
    every = "Terminated|Failed|Running|Waiting"
    r = read_alibaba2018(v2018_dags, statuses=every, granularity="job")
    assert (r.report.rows_read, r.report.rows_kept) == (55_874, 55_469)
    assert r.report.dropped == {"missing_value": 354, "no_end_time": 51}
    assert len(r.jobs) == 2_119
