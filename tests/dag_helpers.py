"""Random DAG workloads and brute-force references for the DAG tests."""

from __future__ import annotations

import functools

import numpy as np
import polars as pl

from schedlab.jobset import JobSet, JobSetMeta

META = JobSetMeta(resources=("cpu",), capacity=(4.0,))


def random_dag_jobs(
    seed: int, *, n_jobsets: int = 2, dags: int = 4, tasks: int = 8, instances: int = 1
) -> pl.DataFrame:
    """Jobs of random DAG jobs: task ``i`` of a dag waits for a random subset of its earlier
    tasks; each task has 1..``instances`` rows (a ``task`` column when ``instances > 1``);
    job ids and task keys are shuffled, so neither follows the topological order."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for k in range(n_jobsets):
        n_rows, n_tasks = 0, 0
        keys = rng.permutation(10 * dags * tasks)
        for d in range(int(rng.integers(1, dags + 1))):
            mine: list[int] = []
            for _ in range(int(rng.integers(1, tasks + 1))):
                key = int(keys[n_tasks])
                n_tasks += 1
                some = [p for p in mine if rng.random() < 0.4]
                for _ in range(int(rng.integers(1, instances + 1))):
                    rows.append({"jobset": k, "task": key, "parents": some, "dag": 100 * k + d,
                                 "duration": int(rng.integers(1, 6))})  # fmt: skip
                    n_rows += 1
                mine.append(key)
        ids = rng.permutation(n_rows)
        for r, i in zip(rows[len(rows) - n_rows :], ids, strict=True):
            r["job_id"] = int(i)
    frame = pl.DataFrame(rows, schema_overrides={"parents": pl.List(pl.Int64)})
    frame = frame.with_columns(pl.lit(0).alias("arrival"), pl.lit(1.0).alias("cpu"))
    if instances == 1:  # task keys are job ids
        ids = frame.select("jobset", "task", "job_id")
        mapping = {(k, t): j for k, t, j in ids.rows()}
        frame = frame.with_columns(
            pl.Series("parents", [[mapping[(k, p)] for p in ps] for k, ps in
                                  zip(frame["jobset"], frame["parents"].to_list(), strict=True)],
                      dtype=pl.List(pl.Int64))
        ).drop("task")  # fmt: skip
    return frame


def jobset(frame: pl.DataFrame) -> JobSet:
    return JobSet.create(frame, META)


def _keyed(jobs: pl.DataFrame) -> tuple[dict, dict, list[int]]:
    """Rows per (jobset, task key), rows naming each (jobset, task key), and durations."""
    key = jobs["task"].to_list() if "task" in jobs.columns else jobs["job_id"].to_list()
    rows: dict = {}
    named: dict = {}
    lists = jobs["parents"].to_list()
    for r, (k, t, ps) in enumerate(zip(jobs["jobset"], key, lists, strict=True)):
        rows.setdefault((k, t), []).append(r)
        for p in ps or []:
            named.setdefault((k, p), []).append(r)
    return rows, named, [int(d) for d in jobs["duration"]]


def brute_ranks(jobs: pl.DataFrame) -> list[int]:
    """Upward rank of every row by recursion over the definition (rows in ``jobs`` order)."""
    key = jobs["task"].to_list() if "task" in jobs.columns else jobs["job_id"].to_list()
    sets = jobs["jobset"].to_list()
    _, named, dur = _keyed(jobs)

    @functools.cache
    def rank(r: int) -> int:
        return dur[r] + max((rank(c) for c in named.get((sets[r], key[r]), [])), default=0)

    return [rank(r) for r in range(jobs.height)]


def earliest_finish(jobs: pl.DataFrame) -> list[int]:
    """Finish of every row with unlimited machines, every row starting as soon as its parent
    tasks have finished (from time 0)."""
    sets, parents = jobs["jobset"].to_list(), jobs["parents"].to_list()
    rows, _, dur = _keyed(jobs)

    @functools.cache
    def finish(r: int) -> int:
        waits = [q for p in parents[r] or [] for q in rows[(sets[r], p)]]
        return dur[r] + max((finish(q) for q in waits), default=0)

    return [finish(r) for r in range(jobs.height)]
