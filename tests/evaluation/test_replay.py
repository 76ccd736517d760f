"""Statistics of a workload replayed as one jobset: blocks of time, block bootstrap, tests paired
by block; and the clock that puts a trace's steps on the calendar."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.evaluation import compare as cmp
from schedlab.evaluation.analysis import AnalysisConfig
from schedlab.evaluation.clock import clock
from schedlab.evaluation.keys import policy_order
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.replay import DAY, WEEK, block_length, replay, replay_conditions
from schedlab.jobset import JobSet
from schedlab.loaders.traces.options import TraceOptions
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.results import Results
from schedlab.simulator.run import simulate

KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"


@pytest.fixture(scope="module")
def three_weeks() -> tuple[JobSet, Results]:
    """The first three weeks of KTH-SP2 as one jobset, under FCFS+EASY and SJF+EASY."""
    js = read_swf(KTH, options=TraceOptions(end=21 * DAY)).jobs
    return js, simulate(js, [make_policy("fcfs+easy"), make_policy("sjf+easy")], {"slots": None})


CFG = AnalysisConfig(
    reference="fcfs+easy",
    primary="wait",
    secondary=("bounded_slowdown", "max_wait"),
    n_resamples=400,
)


def test_block_length_follows_the_log() -> None:
    assert block_length(10 * WEEK, "s")[0] == WEEK
    assert block_length(3 * WEEK, "s") == (DAY, "a day: the log is too short for weekly blocks")
    assert block_length(100.0, "steps")[0] == pytest.approx(10.0)
    assert block_length(10 * WEEK, "s", 3600.0)[0] == 3600.0  # the settings win


def test_replay_gives_block_intervals_and_block_tests(three_weeks: tuple[JobSet, Results]) -> None:
    _, res = three_weeks
    pj = per_jobset(res, bsld_threshold=CFG.bounded_slowdown_threshold)
    assert replay_conditions(pj) == [(None,)]
    r = replay(res, pj, CFG, policy_order(res))
    assert r is not None
    d = r.design.row(0, named=True)
    assert d["block_length"] == DAY
    assert d["n_blocks"] <= 21
    assert 0.0 <= d["crossing"] <= 1.0
    assert d["paired"]  # one comparison needs 6 blocks
    s = {(x["policy"], x["metric"]): x for x in r.summary.iter_rows(named=True)}
    for p in ("fcfs+easy", "sjf+easy"):
        row = s[(p, "wait")]
        whole = pj.filter(pl.col("policy") == p).get_column("wait").item()
        assert row["value"] == pytest.approx(whole)  # the whole log's mean
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        assert row["ci_low"] < row["ci_high"]  # a real interval, not a point
        assert s[(p, "max_wait")]["ci_low"] is None  # tails: the value only
    sjf = s[("sjf+easy", "wait")]
    ref = s[("fcfs+easy", "wait")]
    assert sjf["ratio"] == pytest.approx(sjf["value"] / ref["value"])
    assert sjf["ratio_low"] <= sjf["ratio"] <= sjf["ratio_high"]
    blocks = r.blocks.pivot(on="policy", index="block", values="wait").sort("block")
    x, y = blocks["sjf+easy"].to_numpy(), blocks["fcfs+easy"].to_numpy()
    assert (sjf["wins"], sjf["ties"], sjf["losses"]) == cmp.wins_ties_losses(x, y)
    assert sjf["p"] == pytest.approx(cmp.wilcoxon_pair(x, y).p)
    assert sjf["p_holm"] == pytest.approx(sjf["p"])  # one comparison
    q = r.quantiles.filter((pl.col("policy") == "sjf+easy") & (pl.col("metric") == "wait"))
    assert q.get_column("mean").item() == pytest.approx(sjf["value"])
    again = replay(res, pj, CFG, policy_order(res))
    assert again is not None
    assert again.summary.equals(r.summary)  # seeded


def test_few_blocks_give_no_test(three_weeks: tuple[JobSet, Results]) -> None:
    _, res = three_weeks
    pj = per_jobset(res)
    weekly = AnalysisConfig(reference="fcfs+easy", primary="wait", replay_block=WEEK)
    r = replay(res, pj, weekly, policy_order(res))
    assert r is not None
    assert not r.design.get_column("paired").item()  # 3 weeks: a Wilcoxon needs 6
    assert r.summary.get_column("p").null_count() == r.summary.height
    assert r.summary.filter(pl.col("policy") == "sjf+easy").get_column("ratio")[0] is not None


def test_many_jobsets_are_not_a_replay(three_weeks: tuple[JobSet, Results]) -> None:
    _, res = three_weeks
    two = pl.concat([res.table, res.table.with_columns(jobset=pl.lit(1, pl.Int32))])
    assert replay(Results(two, res.meta), per_jobset(Results(two, res.meta)), CFG, []) is None


def test_clock_puts_steps_on_the_calendar(three_weeks: tuple[JobSet, Results]) -> None:
    js, _ = three_weeks
    c = clock(js.meta.to_json(), 0)
    assert c.step == 1.0
    assert c.zone == "Europe/Stockholm"
    first = js.jobs.get_column("arrival").min()
    # the log's first kept job, on its header's clock: UnixStartTime + its submit time
    assert c.origin == pytest.approx(843_480_031 + 599_850 - first)
    windows = read_swf(KTH, options=TraceOptions(end=2 * DAY, jobset_window=DAY)).jobs
    day = clock(windows.meta.to_json(), 1)
    assert day.origin == pytest.approx(np.float64(843_480_031 + 599_850 + DAY))
    sized = read_swf(KTH, options=TraceOptions(end=2 * DAY, jobset_size=50)).jobs
    assert clock(sized.meta.to_json(), 1).origin is None  # where a count cut it: no date
    assert clock({"time_step_seconds": None}).step is None
