"""``schedlab export --format swf|batsim``: one schedule as an SWF log and as Batsim's
``_jobs.csv``, read back by ``schedlab load swf`` and opened with evalys."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.errors import ResultsError
from schedlab.evaluation.allocation import allocate, procset
from schedlab.evaluation.schedules import schedules
from schedlab.evaluation.timeline import timeline
from schedlab.jobset import JobSet
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.reports.export import export_results
from schedlab.reports.export_formats import BATSIM_COLUMNS, whole_units
from schedlab.results import Results
from schedlab.simulator.run import simulate

EVALYS_WARNINGS = ("pandas.errors.Pandas4Warning", "FutureWarning", "SyntaxWarning")
"""evalys 4.0.7 uses pandas features that pandas 3 deprecates; its warnings are not ours."""


def ignoring_evalys_warnings(test: Callable[..., None]) -> Callable[..., None]:
    """``test`` with :data:`EVALYS_WARNINGS` ignored."""
    for category in EVALYS_WARNINGS:
        test = pytest.mark.filterwarnings(f"ignore::{category}")(test)
    return test


KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
TWO_DAYS = TraceOptions(end=2 * 86_400.0)


@pytest.fixture(scope="module")
def kth() -> tuple[JobSet, Results]:
    """The first two days of the bundled KTH-SP2 log (one jobset), under FCFS+EASY and SJF+EASY
    with the users' requests, jobs killed at them."""
    js = read_swf(KTH, options=TWO_DAYS).jobs
    policies = [make_policy("fcfs+easy"), make_policy("sjf+easy")]
    return js, simulate(js, policies, {"slots": None})


def evalys_workload(path: Path) -> object:
    """evalys' SWF reader. evalys 4.0.7 passes ``delim_whitespace=True`` to pandas.read_csv,
    which pandas 3 removed; the shim hands it ``sep=r"\\s+"`` instead (the same parse). It also
    leaves the file open, so its ResourceWarning is silenced."""
    from evalys.workload import Workload

    original = pd.read_csv

    def read_csv(*args: object, delim_whitespace: bool = False, **kwargs: object) -> object:
        if delim_whitespace:
            kwargs["sep"] = r"\s+"
        return original(*args, **kwargs)

    pd.read_csv = read_csv
    try:
        with warnings.catch_warnings():  # evalys leaves the header file open: collect it here
            warnings.simplefilter("ignore", ResourceWarning)
            workload = Workload.from_csv(str(path))
            gc.collect()
        return workload
    finally:
        pd.read_csv = original


def test_swf_export_reads_back_to_the_same_jobs(
    kth: tuple[JobSet, Results], tmp_path: Path
) -> None:
    js, res = kth
    out = export_results(res, tmp_path / "sjf.swf", format="swf", jobs=js, policy="sjf+easy")
    assert set(out) == {"data"}
    text = out["data"].read_text()
    assert "; UnixStartTime: " in text
    assert "; MaxProcs: 100" in text
    back = read_swf(out["data"], options=TraceOptions()).jobs.jobs
    sim = res.table.filter(pl.col("policy") == "sjf+easy").sort("job_id")
    orig = js.jobs.sort("job_id")
    assert back.height == orig.height
    # the same jobs in the same order (by trace id), with the run time they ran
    back = back.sort("source_id")
    orig = orig.sort("source_id")
    for col in ("arrival", "procs", "estimate", "user", "arrival_s"):
        assert back[col].to_list() == orig[col].to_list(), col
    ran = sim.sort(pl.col("job_id")).join(orig.select("job_id", "source_id"), on="job_id")
    assert back["duration"].to_list() == ran.sort("source_id")["duration"].to_list()
    killed = ran.filter(pl.col("killed"))
    assert killed.height > 0  # the window holds jobs killed at their request: status 0
    statuses = [int(line.split()[10]) for line in text.splitlines() if not line.startswith(";")]
    assert statuses.count(0) == killed.height


@ignoring_evalys_warnings
def test_evalys_opens_the_swf_export(kth: tuple[JobSet, Results], tmp_path: Path) -> None:
    js, res = kth
    path = export_results(res, tmp_path / "a.swf", format="swf", jobs=js, policy="fcfs+easy")
    w = evalys_workload(path["data"])
    sim = res.table.filter(pl.col("policy") == "fcfs+easy").sort("arrival_s", "job_id")
    df = w.df
    # evalys reads the first job line as a header (header=0): it sees every job but the first
    assert len(df) == sim.height - 1
    np.testing.assert_allclose(df["waiting_time"].to_numpy(), sim["wait_s"].to_numpy()[1:])
    np.testing.assert_allclose(df["execution_time"].to_numpy(), sim["run_s"].to_numpy()[1:])
    assert w.MaxProcs == 100
    assert w.UnixStartTime > 800_000_000  # the log's 1996 start


@ignoring_evalys_warnings
def test_evalys_opens_the_batsim_export(kth: tuple[JobSet, Results], tmp_path: Path) -> None:
    from evalys.jobset import JobSet as EvalysJobSet

    js, res = kth
    path = export_results(res, tmp_path / "a_jobs.csv", format="batsim", jobs=js, policy="sjf+easy")
    table = pl.read_csv(path["data"])
    assert tuple(table.columns) == BATSIM_COLUMNS
    ev = EvalysJobSet.from_csv(str(path["data"]))
    assert ev.MaxProcs <= 100
    assert len(ev.df) == table.height
    # evalys' processor count per job is what the schedule held
    np.testing.assert_array_equal(
        ev.df["proc_alloc"].to_numpy(), table["requested_number_of_resources"].to_numpy()
    )
    # its utilisation (processors in use after each event) is our timeline's, event by event
    load = ev.utilisation["load"]
    s = schedules(res, js).select(policies=["sjf+easy"])
    tl = timeline(s)
    ours = dict(zip(tl["time"].to_list(), (tl["util_procs"] * 100).round(6).to_list(), strict=True))
    for t, v in load.items():
        assert ours[int(t)] == pytest.approx(v), t


def test_allocation_never_holds_a_processor_twice(kth: tuple[JobSet, Results]) -> None:
    js, res = kth
    s = schedules(res, js).select(policies=["fcfs+easy"]).jobs
    ranges = allocate(s, "procs", 100.0)
    held = (
        ranges.with_columns(n=pl.col("last") - pl.col("first") + 1)
        .group_by("row")
        .agg(pl.col("n").sum())
    )
    procs = s["procs"].to_numpy()
    assert (
        held.sort("row")["n"].to_list()
        == procs[held.sort("row")["row"].to_numpy()].astype(int).tolist()
    )
    busy: dict[int, list[tuple[int, int]]] = {}
    start, finish = s["start"].to_numpy(), s["finish"].to_numpy()
    for row, first, last in ranges.iter_rows():
        for u in range(first, last + 1):
            busy.setdefault(u, []).append((start[row], finish[row]))
    for spans in busy.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert procset(ranges.head(2), 3)[2] == ""


def test_a_schedule_must_be_named_and_whole(kth: tuple[JobSet, Results], tmp_path: Path) -> None:
    js, res = kth
    with pytest.raises(ResultsError, match=r"name one with --policy .*fcfs\+easy, sjf\+easy"):
        export_results(res, tmp_path / "x.swf", format="swf", jobs=js)
    with pytest.raises(ResultsError, match="policy 'sjf' is not in the results"):
        export_results(res, tmp_path / "x.swf", format="swf", jobs=js, policy="sjf")
    frame = pl.DataFrame({"job_id": [0, 1], "cpu": [1.0, 0.5]})
    with pytest.raises(ResultsError, match=r"job 1 demands 0\.5 cpu: SWF and Batsim count whole"):
        whole_units(frame, "cpu")
    with pytest.raises(ResultsError, match="needs the jobs' demands"):
        export_results(
            Results(res.table, {**res.meta, "jobset": {}}),
            tmp_path / "x.swf",
            format="swf",
            policy="sjf+easy",
        )


def test_cli_exports_a_schedule(kth: tuple[JobSet, Results], tmp_path: Path) -> None:
    js, res = kth
    res.write_parquet(tmp_path / "r.parquet")
    js.write_parquet(tmp_path / "j.parquet")
    out = tmp_path / "s.swf"
    args = ["export", str(tmp_path / "r.parquet"), "--jobs", str(tmp_path / "j.parquet")]
    run = CliRunner().invoke(
        main, [*args, "--format", "swf", "--policy", "sjf+easy", "-o", str(out)]
    )
    assert run.exit_code == 0, run.output
    assert f"wrote {out}" in run.output
    assert out.is_file()
    bad = CliRunner().invoke(main, [*args, "--format", "batsim", "-o", str(tmp_path / "b.csv")])
    assert bad.exit_code != 0
    assert "name one with --policy" in bad.output
