"""Conservative backfilling's compiled rule (persistent per-machine profiles, compression only
where it can move a job) against the readable step engine for every job order and placement
rule, and against the schedules recorded from the general compiled path it replaced."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy
from schedlab.simulator.check import check_discipline, check_schedule
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import Schedule, run_policy
from tests.simulator.test_precedence import busy_dags
from tests.strategies import jobsets

KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"
ORDERS = ("fcfs", "sjf", "f1", "wfp3", "unicep", "hrrn", "packer", "tetris")
RULES = ("firstfit", "bestfit", "worstfit", "align")
FIELDS = ("start", "machine", "reserved")


def same(a: Schedule, b: Schedule, what: str) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"{what} {name}")


def digest(s: Schedule) -> str:
    """sha256 of start, machine, reserved (int64, in that order)."""
    h = hashlib.sha256()
    for a in (s.start, s.machine, s.reserved):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()


def with_estimates(js: JobSet, factor: np.ndarray) -> JobSet:
    """``js`` with estimates ``factor`` times the run times (rounded up, at least 1)."""
    duration = js.jobs.get_column("duration").to_numpy()
    estimate = np.maximum(1, np.ceil(duration * factor)).astype(np.int64)
    return JobSet.create(js.jobs.with_columns(pl.Series("estimate", estimate)), js.meta)


def on_grid(js: JobSet) -> JobSet:
    """``js`` with its demands rounded to multiples of 1/1024, where float64 sums and
    differences are exact. The compiled rule skips the compressions that exact arithmetic shows
    would move nothing; the readable one runs them, and a demand within rounding of ``EPS`` of
    the free capacity (1e-9 of a resource, say) can then move by a rounding error alone."""
    grid = [(pl.col(r) * 1024).round() / 1024 for r in js.meta.resources]
    return JobSet.create(js.jobs.with_columns(grid), js.meta)


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
    order=st.sampled_from(ORDERS),
    rule=st.sampled_from(RULES),
    machines=st.integers(1, 4),
    factors=st.lists(st.sampled_from([0.3, 0.5, 1.0, 1.0, 1.5, 3.0]), min_size=1, max_size=40),
    overrun=st.sampled_from(["extend", "kill"]),
)
def test_compiled_rule_matches_the_readable_one(
    js: JobSet, order: str, rule: str, machines: int, factors: list[float], overrun: str
) -> None:
    factor = np.resize(np.array(factors), len(js))
    js = on_grid(with_estimates(js, factor))
    config = ClusterConfig(slots=None, machines=machines, overrun=overrun)
    policy = make_policy(f"{order}+conservative:placement={rule}")
    same(run_policy(js, policy, config), run_policy(js, policy, config, engine="step"), "step")


@pytest.mark.parametrize(
    ("order", "rule"),
    [("wfp3", "bestfit"), ("tetris", "align"), ("sjf", "worstfit"), ("fcfs", "firstfit")],
)
def test_compiled_rule_matches_the_readable_one_on_a_busy_queue(order: str, rule: str) -> None:
    """A few hundred jobs on 5 machines, estimates off both ways: queues of tens of jobs."""
    js = trace_shaped(240, 5, 7, (0.5, 1.0, 2.0, 4.0))
    config = ClusterConfig(slots=None, overrun="kill")
    policy = make_policy(f"{order}+conservative:placement={rule}")
    fast = run_policy(js, policy, config)
    same(fast, run_policy(js, policy, config, engine="step"), f"{order} {rule}")
    check_schedule(js, fast.start, fast.machine, overrun="kill")


# sha256 of start, machine, reserved of trace_shaped(1500, 8, 1, (0.5, 1, 2, 4)) killed at the
# estimates, recorded from the general compiled path (a profile of all machines rebuilt at every
# decision) before this rule replaced it for every order and placement.
TRACE_SHA256 = {
    "fcfs+firstfit": "4d2906306c151b1e58d0c8e9262602057da28b9775ec7cc36ec4eaef25620dfa",
    "fcfs+bestfit": "afaa147a2c753423b5645247f4758a484d3423537fad53beb7e2c7dae371930d",
    "fcfs+worstfit": "3eac5041a879e4ea11087eb8a17aa5c29009c853406074f6f728277fb5b13f25",
    "fcfs+align": "b56f7f3dc26670c8571d7f6b56d0d598bbabf8f2168be397c1bf45d4c3321c0c",
    "sjf+firstfit": "5d178d5e3f7a8585c280790fc4a07fbdd3c9967fb14b39dc6deeea5ebdd4a6a6",
    "sjf+bestfit": "f3ca142f1d71e796e7089e77756a99db10131697df300d4236018dc62dd9dcd6",
    "sjf+worstfit": "e2b9337e78fe4ed5868ac9a124658845151d530049846ac9beabb29d92685463",
    "sjf+align": "f9c2c80c8d28dff57cba758f7e54ce8449b62b0b22a94daf0e38567741a26e85",
    "wfp3+firstfit": "f90a51f1842e5e680799f3aafd6f796c74ba2c70f2b4ea29834036f61bea871f",
    "wfp3+bestfit": "cc50bd27c30f64424bc0e55172b6aa5cab1a6faede67038604af6c106f63884b",
    "wfp3+worstfit": "83c7b4d1eaa63606f923621fb964f5eda5e7426b1aa9b72a50a8fad61432bf47",
    "wfp3+align": "618c4df979a0649b745322799dc8c624b5fa1aad0b850a38c983017a9595d5ec",
    "unicep+firstfit": "cd41f270947bbf4140f6537b886013f439a249dd71786890f040d92566aca43d",
    "unicep+bestfit": "256be1fdc35b02ce7f804dae573211aa10b3003224cedf7cbff246d132713117",
    "unicep+worstfit": "83c7b4d1eaa63606f923621fb964f5eda5e7426b1aa9b72a50a8fad61432bf47",
    "unicep+align": "618c4df979a0649b745322799dc8c624b5fa1aad0b850a38c983017a9595d5ec",
    "tetris+firstfit": "c9842e2bfb7b4de3e27a3e2443a8d6e65276e0e6861edc9e5aa3bd326d9f570a",
    "tetris+bestfit": "f73fc8b1b4eb65a2258c9dc3a8c138b8f518602598e50a13ab1c9f68eabcd49c",
    "tetris+worstfit": "ceb6b99c3f06465b1472b74f45afd78f4dac1b08416d8564498626c03ed5caa4",
    "tetris+align": "c69c70804c43c763f77756b44cb43da0b7c542405c17ae19ccb063db53bba49e",
}


def test_trace_shaped_queues_as_the_general_path_scheduled_them() -> None:
    js = trace_shaped(1500, 8, 1, (0.5, 1.0, 2.0, 4.0))
    config = ClusterConfig(slots=None, overrun="kill")
    for spec, expected in TRACE_SHA256.items():
        order, rule = spec.split("+")
        s = run_policy(js, make_policy(f"{order}+conservative+{rule}"), config)
        assert digest(s) == expected, spec
        check_schedule(js, s.start, s.machine, overrun="kill")


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_estimates_keep_every_first_reservation(seed: int) -> None:
    js = trace_shaped(1500, 3 + 4 * seed, seed, (1.0,))
    for order in ("fcfs", "sjf", "wfp3"):
        s = run_policy(js, make_policy(f"{order}+conservative"), ClusterConfig(slots=None))
        check_schedule(js, s.start, s.machine)
        check_discipline(js, s.start, "conservative", reserved=s.reserved,
                         in_arrival_order=order == "fcfs")  # fmt: skip


@pytest.mark.parametrize("seed", range(2))
def test_dags_match_the_readable_rule(seed: int) -> None:
    js = busy_dags(seed, instances=2, spread=1)
    for release in ("dag", "trace"):
        config = ClusterConfig(slots=None, release=release)
        for order in ("fcfs", "hrrn"):
            policy = make_policy(f"{order}+conservative+bestfit")
            fast, slow = (
                run_policy(js, policy, config),
                run_policy(js, policy, config, engine="step"),
            )
            same(fast, slow, f"{release} {order}")
            np.testing.assert_array_equal(fast.ready, slow.ready)


# sha256 of start, machine, reserved (int64, in that order) from the kernel before the fast path.
KTH_SHA256 = {
    "fcfs+conservative": "2f1a22763e79896ca41d64b6c3bb7a38bd2cc0eb5cdbaaa571ce49722aea09d4",
    "sjf+conservative": "90ba2bb6224b5e21d9ef5b1ba468cc45356d0d4b6289eeaf43dbf6cf2973278f",
}


@pytest.mark.parametrize("spec", sorted(KTH_SHA256))
def test_kth_replayed_whole_as_before(spec: str) -> None:
    """The bundled KTH-SP2 log whole (requests as estimates, jobs ending early): the schedule
    recorded before conservative backfilling had one compiled path (general and fast then)."""
    s = run_policy(read_swf(KTH).jobs, make_policy(spec), ClusterConfig(slots=None))
    digest = hashlib.sha256()
    for a in (s.start, s.machine, s.reserved):
        digest.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    assert digest.hexdigest() == KTH_SHA256[spec]
