"""Conservative backfilling's fast path (static orders, first fit: persistent per-machine
profiles, compression only where it can move a job) against the general compiled path and the
readable step engine: the same starts, machines and first reservations for every input."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.simulator.check import check_discipline, check_schedule
from schedlab.simulator.cluster import backfill
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import Schedule, run_policy
from tests.simulator.test_precedence import busy_dags
from tests.strategies import jobsets

KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
STATIC = ("fcfs", "sjf", "f1")
FIELDS = ("start", "machine", "reserved")


def general(js: JobSet, policy: Any, config: ClusterConfig) -> Schedule:
    """The schedule of the general compiled path (the fast one switched off)."""
    with pytest.MonkeyPatch.context() as patch:
        run = backfill.run_jobsets
        patch.setattr(backfill, "run_jobsets", lambda *a: run(*a, False))
        return run_policy(js, policy, config)


def same(a: Schedule, b: Schedule, what: str) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"{what} {name}")


def with_estimates(js: JobSet, factor: np.ndarray) -> JobSet:
    """``js`` with estimates ``factor`` times the run times (rounded up, at least 1)."""
    duration = js.jobs.get_column("duration").to_numpy()
    estimate = np.maximum(1, np.ceil(duration * factor)).astype(np.int64)
    return JobSet.create(js.jobs.with_columns(pl.Series("estimate", estimate)), js.meta)


def trace_shaped(n: int, machines: int, seed: int, factors: tuple[float, ...]) -> JobSet:
    """``n`` jobs shaped as the 1M-job benchmark's (lognormal run times, 0.5-8 of 96 cores,
    0.1-2 % of memory, offered load 1.2) for ``machines`` machines, estimates ``factors``
    times the run times."""
    rng = np.random.default_rng(seed)
    duration = np.maximum(1, np.round(rng.lognormal(np.log(60), 1.5, n))).astype(np.int64)
    cpu = rng.choice([0.5, 1.0, 2.0, 4.0, 8.0, 48.0], n, p=[0.3, 0.3, 0.2, 0.1, 0.05, 0.05])
    mem = rng.uniform(0.1, 2.0, n)
    span = (duration * cpu).sum() / (machines * 96.0) / 1.2
    frame = pl.DataFrame({
        "jobset": np.zeros(n, np.int32), "job_id": np.arange(n, dtype=np.int64),
        "arrival": np.sort(rng.uniform(0, span, n)).astype(np.int64), "duration": duration,
        "estimate": np.maximum(1, np.ceil(duration * rng.choice(factors, n))).astype(np.int64),
        "cpu": cpu, "mem": mem,
    })  # fmt: skip
    meta = JobSetMeta(resources=("cpu", "mem"), capacity=(machines * 96.0, machines * 100.0),
                      machines=machines)  # fmt: skip
    return JobSet.create(frame, meta)


@settings(max_examples=150, deadline=None)
@given(
    js=jobsets(max_jobsets=3, max_jobs=12, max_arrival=10, max_duration=8),
    order=st.sampled_from(STATIC),
    machines=st.integers(1, 4),
    factors=st.lists(st.sampled_from([0.3, 0.5, 1.0, 1.0, 1.5, 3.0]), min_size=1, max_size=40),
    overrun=st.sampled_from(["extend", "kill"]),
)
def test_fast_path_matches_the_readable_and_the_general_one(
    js: JobSet, order: str, machines: int, factors: list[float], overrun: str
) -> None:
    factor = np.resize(np.array(factors), len(js))
    js = with_estimates(js, factor)
    config = ClusterConfig(slots=None, machines=machines, overrun=overrun)
    policy = make_policy(f"{order}+conservative")
    fast = run_policy(js, policy, config)
    same(fast, run_policy(js, policy, config, engine="step"), "step")
    same(fast, general(js, policy, config), "general")


@pytest.mark.parametrize(("seed", "machines"), [(0, 3), (1, 7), (2, 20), (3, 5)])
def test_fast_path_matches_the_general_one_on_trace_shaped_queues(seed: int, machines: int) -> None:
    """Thousands of jobs, queues of hundreds, estimates exact (as the benchmark's) or off both
    ways, jobs run past their estimates or killed at them."""
    for factors, overrun in itertools.product(
        [(1.0,), (0.5, 1.0, 1.0, 2.0, 4.0)], ["extend", "kill"]
    ):  # fmt: skip
        if factors == (1.0,) and overrun == "kill":
            continue
        js = trace_shaped(1500 + 500 * seed, machines, seed, factors)
        config = ClusterConfig(slots=None, overrun=overrun)
        for order in ("fcfs", "sjf") if seed % 2 else ("fcfs", "f1"):
            policy = make_policy(f"{order}+conservative")
            fast = run_policy(js, policy, config)
            same(fast, general(js, policy, config), f"{order} {factors} {overrun}")
            check_schedule(js, fast.start, fast.machine, overrun=overrun)
            if factors == (1.0,):
                check_discipline(js, fast.start, "conservative", reserved=fast.reserved,
                                 in_arrival_order=order == "fcfs")  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_fast_path_matches_the_general_one_on_dags(seed: int) -> None:
    js = busy_dags(seed, instances=2, spread=1)
    for rule, order in itertools.product(("dag", "trace"), ("fcfs", "sjf")):
        config = ClusterConfig(slots=None, release=rule)
        policy = make_policy(f"{order}+conservative")
        fast, slow = run_policy(js, policy, config), general(js, policy, config)
        same(fast, slow, f"{rule} {order}")
        np.testing.assert_array_equal(fast.ready, slow.ready)


# sha256 of start, machine, reserved (int64, in that order) from the kernel before the fast path.
KTH_SHA256 = {
    "fcfs+conservative": "2f1a22763e79896ca41d64b6c3bb7a38bd2cc0eb5cdbaaa571ce49722aea09d4",
    "sjf+conservative": "90ba2bb6224b5e21d9ef5b1ba468cc45356d0d4b6289eeaf43dbf6cf2973278f",
}


@pytest.mark.parametrize("spec", sorted(KTH_SHA256))
def test_kth_replayed_whole_as_before(spec: str) -> None:
    """The bundled KTH-SP2 log whole (requests as estimates, jobs ending early): the schedule
    recorded from the general path before the fast one existed."""
    s = run_policy(read_swf(KTH).jobs, make_policy(spec), ClusterConfig(slots=None))
    digest = hashlib.sha256()
    for a in (s.start, s.machine, s.reserved):
        digest.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    assert digest.hexdigest() == KTH_SHA256[spec]
