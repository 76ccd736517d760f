"""Fixtures and helpers shared by the Alibaba cluster-trace-v2018 loader tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
DAG = DATA / "alibaba2018_dag.csv"
QUIRKS = DATA / "alibaba2018_quirks.csv"
BAD = DATA / "alibaba2018_bad.csv"
INSTANCES = DATA / "alibaba2018_instances.csv"
V2017_SMALL = DATA / "alibaba2018_given_v2017.csv"  # 6 real v2017 rows
HEADER = "task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem\n"
GOOD = "M1,1,j_1,1,Terminated,10,20,100,0.5\n"


def csv_file(tmp_path: Path, text: str, name: str = "batch_task.csv") -> Path:
    """``text`` written as ``tmp_path / name``."""
    path = tmp_path / name
    path.write_text(text)
    return path


def column(result: Any, name: str) -> list:
    """The values of column ``name`` of a load result's jobs."""
    return result.jobs.jobs.get_column(name).to_list()


def same_load(a: Any, b: Any) -> None:
    """Same jobs and the same accounting (notes about the file's layout may differ)."""
    assert a.jobs.jobs.equals(b.jobs.jobs)
    assert {**a.report.to_json(), "notes": []} == {**b.report.to_json(), "notes": []}
