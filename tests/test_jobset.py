"""JobSet validation, casting, ordering and offered load (design.md §2, §3)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from schedlab import io
from schedlab.errors import InfeasibleJobError, JobSetError, SchedlabError
from schedlab.jobset import MAX_SPAN, JobSet, JobSetMeta, offered_load, validate
from tests.strategies import SCHEMA

META = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 4.0), units=("core", "GiB"))


def _jobs(**overrides: list) -> pl.DataFrame:
    """Four valid jobs in two jobsets; ``overrides`` replace whole columns."""
    cols: dict[str, list] = {
        "jobset": [0, 0, 1, 1],
        "job_id": [0, 1, 0, 1],
        "arrival": [0, 4, 1, 2],
        "duration": [2, 1, 3, 1],
        "cpu": [5.0, 10.0, 2.0, 1.0],
        "mem": [1.0, 2.0, 4.0, 4.0],
    }
    cols.update(overrides)
    return pl.DataFrame(cols)


def test_valid_input_is_cast_to_schema_and_sorted() -> None:
    raw = pl.DataFrame(
        {
            "jobset": pl.Series([1, 0, 1, 0, 0], dtype=pl.Int64),
            "job_id": pl.Series([7, 2, 3, 1, 0], dtype=pl.Int32),
            "arrival": pl.Series([5, 3, 5, 3, 9], dtype=pl.UInt16),
            "duration": [1.0, 2.0, 3.0, 4.0, 5.0],  # integer-valued floats are accepted
            "cpu": [1, 2, 3, 4, 10],  # integers become float64 demands
            "mem": [0.5, 0.5, 0.5, 0.5, 4.0],
            "load": [1, 1, 1, 1, 1],
        }
    )
    js = JobSet.create(raw, META)
    assert js.jobs.schema == pl.Schema({**SCHEMA, "load": pl.Float64})
    # sorted by (jobset, arrival, job_id)
    assert js.jobs.select("jobset", "arrival", "job_id").rows() == [
        (0, 3, 1),
        (0, 3, 2),
        (0, 9, 0),
        (1, 5, 3),
        (1, 5, 7),
    ]
    assert js.jobs.get_column("duration").to_list() == [4, 2, 5, 3, 1]
    assert js.jobs.get_column("cpu").to_list() == [4.0, 2.0, 10.0, 3.0, 1.0]
    assert len(js) == 5
    assert js.jobset_ids == [0, 1]
    assert js.resources == ("cpu", "mem")
    np.testing.assert_array_equal(js.capacity, [10.0, 4.0])
    assert js.demands().shape == (5, 2)
    np.testing.assert_array_equal(js.demands()[2], [10.0, 4.0])
    assert {k: f.height for k, f in js.split()} == {0: 3, 1: 2}


def test_validate_returns_cast_frame_without_sorting() -> None:
    out = validate(_jobs(jobset=[1, 1, 0, 0]), META)
    assert out.schema["jobset"] == pl.Int32
    assert out.get_column("jobset").to_list() == [1, 1, 0, 0]


def test_missing_required_column() -> None:
    with pytest.raises(JobSetError, match=r"missing required column\(s\) \['duration'\]"):
        JobSet.create(_jobs().drop("duration"), META)


def test_missing_resource_column() -> None:
    with pytest.raises(JobSetError, match=r"missing required column\(s\) \['mem'\]"):
        JobSet.create(_jobs().drop("mem"), META)


BAD_VALUES = [
    pytest.param(
        {"arrival": ["0", "4", "soon", "2"]},
        r"column 'arrival' value 'soon' at row 2 \(jobset 1, job_id 0\)",
        id="non_numeric_arrival",
    ),
    pytest.param(
        {"mem": ["1", "2", "4", "lots"]},
        r"column 'mem' value 'lots' at row 3 \(jobset 1, job_id 1\)",
        id="non_numeric_demand",
    ),
    pytest.param(
        {"duration": [2.0, 1.0, 2.5, 1.0]},
        r"column 'duration' value 2.5 at row 2 \(jobset 1",
        id="fractional_time_not_truncated",
    ),
    pytest.param(
        {"jobset": [0, 0, 1, 2**40]},
        rf"column 'jobset' value {2**40} at row 3",
        id="jobset_id_overflowing_int32",
    ),
    pytest.param(
        {"duration": [2, 1, None, 1]},
        r"column 'duration' has a missing value at row 2 \(jobset 1, job_id 0\)",
        id="null_duration",
    ),
    pytest.param(
        {"arrival": [0, -3, 1, 2]},
        r"column 'arrival' value -3 at row 1 \(jobset 0, job_id 1\) must be >= 0",
        id="negative_arrival",
    ),
    pytest.param(
        {"duration": [2, 1, 3, 0]},
        r"column 'duration' value 0 at row 3 \(jobset 1, job_id 1\) must be >= 1 time step",
        id="zero_duration",
    ),
]
"""Column overrides of :func:`_jobs` with one bad value, and the error naming column, value, row."""


@pytest.mark.parametrize(("overrides", "match"), BAD_VALUES)
def test_bad_value_names_column_value_and_row(overrides: dict[str, list], match: str) -> None:
    with pytest.raises(JobSetError, match=match):
        JobSet.create(_jobs(**overrides), META)


def test_negative_jobset_id() -> None:
    with pytest.raises(JobSetError, match=r"column 'jobset' value -1 at row 0"):
        JobSet.create(_jobs(jobset=[-1, 0, 1, 1]), META)


@pytest.mark.parametrize(
    ("value", "shown"), [(-0.5, "-0.5"), (math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")]
)
def test_bad_demand(value: float, shown: str) -> None:
    jobs = _jobs(cpu=[5.0, 10.0, value, 1.0])
    with pytest.raises(
        JobSetError,
        match=rf"column 'cpu' value {shown} at row 2 \(jobset 1, job_id 0\) must be finite",
    ):
        JobSet.create(jobs, META)


def test_duplicate_job_id_within_jobset() -> None:
    jobs = _jobs(job_id=[0, 1, 5, 5])
    with pytest.raises(JobSetError, match=r"job_id 5 is not unique within jobset 1 \(row 2"):
        JobSet.create(jobs, META)


def test_same_job_id_in_different_jobsets_is_fine() -> None:
    js = JobSet.create(_jobs(job_id=[0, 1, 0, 1]), META)
    assert js.jobs.get_column("job_id").to_list() == [0, 1, 0, 1]


def test_demand_above_capacity_is_infeasible() -> None:
    jobs = _jobs(mem=[1.0, 2.0, 4.0, 4.5])
    with pytest.raises(InfeasibleJobError) as info:
        JobSet.create(jobs, META)
    assert isinstance(info.value, JobSetError)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, SchedlabError)
    msg = str(info.value)
    assert "row 3 (jobset 1, job_id 1)" in msg
    assert "mem=4.5" in msg
    assert "mem=4.0" in msg


def test_demand_equal_to_capacity_is_feasible() -> None:
    js = JobSet.create(_jobs(cpu=[10.0, 10.0, 10.0, 10.0], mem=[4.0, 4.0, 4.0, 4.0]), META)
    assert js.demands().max(axis=0).tolist() == [10.0, 4.0]


def test_capacity_count_mismatch() -> None:
    meta = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0,))
    with pytest.raises(
        JobSetError, match=r"one capacity per resource.*\('cpu', 'mem'\).*\(10.0,\)"
    ):
        JobSet.create(_jobs(), meta)


def test_no_resources() -> None:
    with pytest.raises(JobSetError, match="one capacity per resource"):
        JobSet.create(_jobs(), JobSetMeta(resources=(), capacity=()))


def test_units_count_mismatch() -> None:
    meta = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 4.0), units=("core",))
    with pytest.raises(JobSetError, match=r"units \('core',\) do not match"):
        JobSet.create(_jobs(), meta)


@pytest.mark.parametrize(("cap", "shown"), [(0.0, "0.0"), (-2.0, "-2.0"), (math.nan, "nan")])
def test_non_positive_capacity(cap: float, shown: str) -> None:
    meta = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, cap))
    with pytest.raises(JobSetError, match=rf"finite and > 0, got \(10.0, {shown}\)"):
        JobSet.create(_jobs(), meta)


# --- offered load -------------------------------------------------------------------------------
# Jobset 0: work cpu 5*2 + 10*1 = 20, mem 1*2 + 2*1 = 4, arrivals 0..4 -> span 5.
# Jobset 1: work cpu 2*3 + 1*1 = 7, mem 4*3 + 4*1 = 16, arrivals 1..2 -> span 2.
# Capacity cpu 10, mem 4.


def _loads(df: pl.DataFrame) -> list[tuple[float, ...]]:
    return [tuple(r) for r in df.rows()]


def test_offered_load_per_jobset_span_from_arrivals() -> None:
    js = JobSet.create(_jobs(), META)
    out = offered_load(js, per_jobset=True)
    assert out.columns == ["jobset", "load_cpu", "load_mem", "load"]
    assert out.get_column("jobset").to_list() == [0, 1]
    np.testing.assert_allclose(out.get_column("load_cpu"), [20 / 50, 7 / 20])
    np.testing.assert_allclose(out.get_column("load_mem"), [4 / 20, 16 / 8])
    np.testing.assert_allclose(out.get_column("load"), [0.4, 2.0])  # max over resources


def test_offered_load_pooled_span_from_arrivals() -> None:
    js = JobSet.create(_jobs(), META)
    out = offered_load(js)
    assert out.columns == ["load_cpu", "load_mem", "load"]
    assert out.height == 1
    np.testing.assert_allclose(out.row(0), [27 / 70, 20 / 28, 20 / 28])


def test_offered_load_with_arrival_window() -> None:
    meta = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 4.0), arrival_window=10)
    js = JobSet.create(_jobs(), meta)
    per = offered_load(js, per_jobset=True)
    np.testing.assert_allclose(per.get_column("load_cpu"), [0.2, 0.07])
    np.testing.assert_allclose(per.get_column("load_mem"), [0.1, 0.4])
    np.testing.assert_allclose(per.get_column("load"), [0.2, 0.4])
    pooled = offered_load(js)
    np.testing.assert_allclose(pooled.row(0), [27 / 200, 20 / 80, 0.25])


def test_offered_load_per_jobset_sorted_by_jobset() -> None:
    js = JobSet.create(_jobs(jobset=[5, 5, 2, 2]), META)
    out = offered_load(js, per_jobset=True)
    assert out.get_column("jobset").to_list() == [2, 5]
    np.testing.assert_allclose(out.get_column("load"), [2.0, 0.4])


def _long(n: int, duration: int, jobset: int = 0) -> pl.DataFrame:
    return _jobs(
        jobset=[jobset] * n, job_id=list(range(n)), arrival=[0] * n, duration=[duration] * n,
        cpu=[1.0] * n, mem=[1.0] * n,
    )  # fmt: skip


def test_spans_the_simulators_cannot_count_are_rejected(tmp_path) -> None:
    """Twelve jobs of 1e17 steps sum past 2^59 (schedlab.timebounds): the simulators' sums of
    two times would reach their "never"."""
    with pytest.raises(JobSetError, match=r"jobset 3: last arrival 0 \+ total duration 1\.2e\+18"):
        JobSet.create(_long(12, 10**17, jobset=3), META)
    path = tmp_path / "jobs.parquet"
    io.write_parquet(
        _long(12, 10**17),
        path,
        JobSetMeta(resources=META.resources, capacity=META.capacity).to_json(),
    )  # fmt: skip (written unvalidated)
    with pytest.raises(JobSetError, match=r"jobs\.parquet: jobset 0: .*exceeds"):
        JobSet.read_parquet(path)


def test_spans_up_to_the_limit_are_accepted() -> None:
    assert len(JobSet.create(_long(2, MAX_SPAN // 2), META)) == 2
    over = _long(2, MAX_SPAN // 2).with_columns(pl.Series("arrival", [0, 2**40]))
    with pytest.raises(JobSetError, match="exceeds"):
        JobSet.create(over, META)
    many = pl.concat([_long(2, MAX_SPAN // 2, jobset=k) for k in range(3)])
    assert len(JobSet.create(many, META).jobset_ids) == 3  # the bound is per jobset
