"""Queue disciplines (strict, EASY, conservative backfilling) over job orders and placement rules:
hand-worked schedules, what each discipline promises on random jobsets, spec strings, and the
bundled KTH-SP2 log replayed whole."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import ParameterError
from schedlab.jobset import JobSet
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import make_policy, parse_policy
from schedlab.simulator.check import check_discipline, check_schedule
from schedlab.simulator.config import ClusterConfig, job_times
from schedlab.simulator.run import run_policy
from tests.strategies import jobsets

WHOLE = ClusterConfig(slots=None)
KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"


@pytest.fixture(scope="module")
def kth() -> JobSet:
    """The bundled KTH-SP2 log, whole, in seconds (requests as estimates)."""
    return read_swf(KTH).jobs


def pool(rows: list[tuple[int, int, float]], capacity: float = 10.0) -> JobSet:
    """One jobset on one pool of ``capacity`` processors: rows ``(arrival, run, procs)``."""
    frame = pl.DataFrame(
        {"jobset": [0] * len(rows), "job_id": list(range(len(rows))),
         "arrival": [r[0] for r in rows], "duration": [r[1] for r in rows],
         "procs": [float(r[2]) for r in rows]},
        schema_overrides={"jobset": pl.Int32},
    )  # fmt: skip
    from schedlab.jobset import JobSetMeta

    return JobSet.create(frame, JobSetMeta(resources=("procs",), capacity=(capacity,)))


# The issue's example: a naive EASY backfills job 3 at 1002 and pushes the head (job 2) to 1502.
ISSUE = [(1000, 100, 6), (1001, 10, 10), (1002, 500, 4), (1003, 50, 4)]


@pytest.mark.parametrize(
    ("spec", "starts"),
    [
        ("fcfs", [1000, 1502, 1002, 1100]),  # greedy: jobs 3 and 4 pass the head, which waits
        ("fcfs+strict", [1000, 1100, 1110, 1110]),
        ("fcfs+easy", [1000, 1100, 1110, 1003]),
        ("fcfs+conservative", [1000, 1100, 1110, 1003]),
    ],
)
def test_hand_worked_schedules(spec: str, starts: list[int]) -> None:
    js = pool(ISSUE)
    s = run_policy(js, make_policy(spec), WHOLE)
    assert s.start.tolist() == starts
    check_schedule(js, s.start, s.machine)


def test_conservative_compresses_and_keeps_every_reservation() -> None:
    """After an early end, waiting jobs move earlier in order, never later: B, reserved at 50
    on arrival, backfills at 10 when R1 ends 90 s before its estimate, and A follows B (rebuilding
    every reservation in order instead would put A at 50 and B at 150, past its reservation).
    pyss (Mu'alem & Feitelson's conservative) gives the same."""
    rows = [(0, 10, 100, 1), (0, 50, 50, 1), (1, 100, 100, 2), (2, 50, 50, 1)]  # R1 R2 A B
    frame = pool([(a, run, procs) for a, run, _, procs in rows], capacity=2.0).jobs
    js = JobSet.create(frame.with_columns(estimate=pl.Series([r[2] for r in rows])),
                       pool([], 2.0).meta)  # fmt: skip
    for engine in ("fast", "step"):
        s = run_policy(js, make_policy("fcfs+conservative"), WHOLE, engine=engine)
        assert s.start.tolist() == [0, 0, 60, 10]
        assert s.reserved.tolist() == [0, 0, 100, 50]
        check_discipline(js, s.start, "conservative", reserved=s.reserved)


def test_conservative_protects_every_waiting_job_easy_only_the_head() -> None:
    # 10 procs. Job 1 holds 6 until 10. Job 2 (8 procs) is the head, reserved at 10, leaving 2
    # free then. Job 3 needs all 10, after job 2 (20). Job 4 (2 procs, 50 s) arrives at 3: EASY
    # backfills it (it uses only the 2 the head leaves free), which pushes job 3 to 53;
    # conservative has reserved job 3 at 20, so job 4 waits until job 3 is done (30).
    rows = [(0, 10, 6), (1, 10, 8), (2, 10, 10), (3, 50, 2)]
    easy = run_policy(pool(rows), make_policy("fcfs+easy"), WHOLE).start.tolist()
    conservative = run_policy(pool(rows), make_policy("fcfs+conservative"), WHOLE).start.tolist()
    assert easy == [0, 10, 53, 3]
    assert conservative == [0, 10, 20, 30]


def test_easy_uses_capacity_the_head_will_not_need() -> None:
    # 10 procs. Job 1: 8 procs for 100 s. Head job 2 needs 6 (reserved at 100, leaving 4 then).
    # Job 3 needs 2 for 1000 s: it fits now (2 free) and the 2 it takes are among the 4 the
    # head leaves free at 100, so EASY starts it now although it ends long after 100.
    rows = [(0, 100, 8), (1, 10, 6), (2, 1000, 2)]
    s = run_policy(pool(rows), make_policy("fcfs+easy"), WHOLE)
    assert s.start.tolist() == [0, 100, 2]
    assert s.reserved is not None
    assert s.reserved[1] == 100


def test_orders_rank_by_the_estimate_unless_clairvoyant() -> None:
    # Two jobs wait behind a full machine; the shorter by estimate is the longer by run time.
    frame = pool([(0, 10, 10), (1, 5, 10), (2, 3, 10)]).jobs.with_columns(
        pl.Series("estimate", [10, 2, 50])
    )
    js = JobSet.create(frame, pool([(0, 1, 1)]).meta)
    extend = ClusterConfig(slots=None, overrun="extend")
    by_estimate = run_policy(js, make_policy("sjf+easy"), extend).start.tolist()
    clairvoyant = run_policy(js, make_policy("sjf+easy:clairvoyant=true"), extend).start.tolist()
    assert by_estimate == [0, 10, 15]  # job 1 (estimate 2) first
    assert clairvoyant == [0, 13, 10]  # job 2 (runs 3) first
    # killed at its estimate, job 1 runs 2 steps, and the clairvoyant order sees those 2
    assert run_policy(js, make_policy("sjf+easy"), WHOLE).start.tolist() == [0, 10, 12]
    killed = run_policy(js, make_policy("sjf+easy:clairvoyant=true"), WHOLE).start.tolist()
    assert killed == [0, 10, 12]


@settings(max_examples=60, deadline=None)
@given(
    js=jobsets(max_jobsets=2, max_jobs=12, integer=True),
    order=st.sampled_from(["fcfs", "sjf", "hrrn", "tetris"]),
    discipline=st.sampled_from(["strict", "easy", "conservative"]),
    machines=st.integers(1, 3),
    rule=st.sampled_from(["firstfit", "bestfit"]),
)
def test_disciplines_keep_their_promises(js, order, discipline, machines, rule) -> None:
    """Feasible, every job starts, and (estimates exact) what each discipline promises."""
    config = ClusterConfig(slots=None, machines=machines)
    policy = make_policy(f"{order}+{discipline}+{rule}")
    s = run_policy(js, policy, config)
    check_schedule(js, s.start, s.machine, machines=machines)
    check_discipline(js, s.start, discipline, reserved=s.reserved,
                     in_arrival_order=order == "fcfs")  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(
    js=jobsets(max_jobsets=2, max_jobs=14, integer=True),
    factors=st.lists(st.sampled_from([0.5, 1.0, 1.5, 3.0]), min_size=28, max_size=28),
    order=st.sampled_from(["fcfs", "sjf", "hrrn", "tetris"]),
    discipline=st.sampled_from(["strict", "easy", "conservative"]),
    machines=st.integers(1, 3),
    rule=st.sampled_from(["firstfit", "bestfit", "worstfit"]),
)
def test_compiled_disciplines_match_the_readable_ones(
    js, factors, order, discipline, machines, rule
) -> None:
    """The compiled disciplines and the step engine's readable ones give the same starts,
    machines and reservations, with estimates above and below the run times."""
    factor = pl.Series(factors[: js.jobs.height], dtype=pl.Float64)
    estimate = (pl.col("duration") * factor).ceil().cast(pl.Int64).clip(lower_bound=1)
    js = JobSet.create(js.jobs.with_columns(estimate.alias("estimate")), js.meta)
    config = ClusterConfig(slots=None, machines=machines)
    policy = make_policy(f"{order}+{discipline}+{rule}")
    fast, step = run_policy(js, policy, config), run_policy(js, policy, config, engine="step")
    np.testing.assert_array_equal(fast.start, step.start)
    np.testing.assert_array_equal(fast.machine, step.machine)
    np.testing.assert_array_equal(fast.reserved, step.reserved)
    check_schedule(js, fast.start, fast.machine, machines=machines)


def random_jobsets(
    seed: int, sets: int = 40, n: int = 25, factors: tuple[float, ...] = (0.5, 1, 1, 1.5, 3)
) -> JobSet:
    """``sets`` busy jobsets of ``n`` jobs on 2 resources of capacity 10 per machine, integer
    demands, run times 1-12 and estimates ``factors`` times them (rounded up)."""
    rng = np.random.default_rng(seed)
    size = sets * n
    run = rng.integers(1, 13, size)
    frame = pl.DataFrame({
        "jobset": np.repeat(np.arange(sets, dtype=np.int32), n),
        "job_id": np.tile(np.arange(n), sets),
        "arrival": np.sort(rng.integers(0, 30, (sets, n)), axis=1).ravel(),
        "duration": run,
        "estimate": np.maximum(1, np.ceil(run * rng.choice(factors, size))),
        "cpu": rng.integers(1, 11, size).astype(float),
        "mem": rng.integers(0, 8, size).astype(float),
    })  # fmt: skip
    from schedlab.jobset import JobSetMeta

    return JobSet.create(frame, JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 10.0)))


@pytest.mark.parametrize("discipline", ["strict", "easy", "conservative"])
def test_compiled_disciplines_match_the_readable_ones_on_busy_queues(discipline: str) -> None:
    """Seeded busy jobsets (queues of tens of jobs) on 1 and 3 machines, every order and rule."""
    for k, (order, rule) in enumerate(itertools.product(
        ["fcfs", "sjf", "hrrn", "tetris"], ["firstfit", "bestfit", "worstfit"]
    )):  # fmt: skip
        machines = 1 + 2 * (k % 2)
        js = random_jobsets(k, factors=(0.5, 1, 1, 1.5, 3) if k % 3 else (1, 1.5, 3))
        config = ClusterConfig(slots=None, machines=machines)
        policy = make_policy(f"{order}+{discipline}+{rule}")
        fast, step = run_policy(js, policy, config), run_policy(js, policy, config, engine="step")
        for name in ("start", "machine", "reserved"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(step, name), err_msg=name)
        check_schedule(js, fast.start, fast.machine, machines=machines)
        check_discipline(js, fast.start, discipline, reserved=fast.reserved,
                         in_arrival_order=order == "fcfs")  # fmt: skip


def test_check_discipline_catches_a_broken_promise() -> None:
    js = pool(ISSUE)
    with pytest.raises(Exception, match="strict: job row 2 started at 1002"):
        check_discipline(js, np.array([1000, 1100, 1002, 1502]), "strict")
    with pytest.raises(Exception, match="easy: job row 1 started at 1502, after its reservation"):
        check_discipline(js, np.array([1000, 1502, 1002, 1003]), "easy",
                         reserved=np.array([1000, 1100, 10**9, 10**9]))  # fmt: skip


def test_spec_strings_name_discipline_and_rule_in_any_order() -> None:
    assert parse_policy("sjf+easy+bestfit") == ("sjf", {"queue": "easy", "placement": "bestfit"})
    assert parse_policy("sjf+bestfit+easy") == ("sjf", {"placement": "bestfit", "queue": "easy"})
    assert parse_policy("fcfs+conservative") == ("fcfs", {"queue": "conservative"})
    assert make_policy("sjf+easy+bestfit").name == "sjf+easy+bestfit"
    assert make_policy("fcfs:queue=strict").name == "fcfs+strict"
    with pytest.raises(ParameterError, match="two queue disciplines, 'easy' and 'strict'"):
        parse_policy("fcfs+easy+strict")
    with pytest.raises(ParameterError, match="two placement rules, 'align' and 'bestfit'"):
        parse_policy("fcfs+bestfit:placement=align")
    with pytest.raises(ParameterError, match="queue discipline 'easy' is repeated; name one"):
        parse_policy("fcfs+easy+easy+easy")
    # a typo after '+' is named as such, never taken for a placement rule
    with pytest.raises(ParameterError, match=r"'easyy' is neither .* did you mean 'easy'"):
        parse_policy("jobscore+easyy:jobscore-kth")
    with pytest.raises(ParameterError, match=r"'bestfitt' is neither .* did you mean 'bestfit'"):
        parse_policy("sjf+easy+bestfitt")
    with pytest.raises(ValueError, match="no job order to queue by"):
        run_policy(pool(ISSUE), make_policy("random+easy"), WHOLE)
    with pytest.raises(ValueError, match="fast and step engines, not batched"):
        run_policy(pool(ISSUE), make_policy("fcfs+easy"), WHOLE, engine="batched")


@pytest.mark.parametrize("discipline", ["strict", "easy", "conservative"])
def test_a_job_larger_than_the_machine_stalls_its_jobset_not_the_loop(discipline: str) -> None:
    """The kernel reports a jobset whose waiting job can never start (a JobSet refuses such a job
    at creation, so this calls the kernel directly) and still schedules the other jobsets."""
    from schedlab.simulator.cluster import backfill_steps, disciplines
    from schedlab.simulator.cluster.disciplines import STALLED
    from schedlab.simulator.cluster.dispatch import arrival_order

    arrival, run = np.array([0, 1, 0]), np.array([3, 2, 4])
    demand = np.array([[4.0], [12.0], [6.0]])  # job 1 needs more than the machine's 10
    empty = np.zeros(0, np.int64)
    no_dag = (arrival, np.zeros(3, np.int64), empty, empty, empty, empty)
    out, status = disciplines.run_jobsets(
        disciplines.jobs(arrival, run, run, run, demand), np.array([0, 2, 3]),
        disciplines.setting(np.array([10.0]), 1, arrival_order, 0, 0.0, True),
        disciplines.DISCIPLINES[discipline], no_dag,
    )  # fmt: skip
    assert status.tolist() == [STALLED, 0]
    assert out.start.tolist() == [0, -1, 0]
    readable = backfill_steps.schedule_jobset(
        arrival[:2], run[:2], run[:2], run[:2], demand[:2], np.array([10.0]), 1,
        make_policy(f"fcfs+{discipline}"), disciplines.DISCIPLINES[discipline],
    )  # fmt: skip
    assert readable[0].tolist() == [0, -1]
    assert readable[4] == STALLED


@pytest.mark.slow
def test_kth_replayed_whole_under_each_discipline(kth) -> None:
    """The bundled KTH-SP2 log on its own machine (100 processors, requests as estimates): every
    schedule feasible and keeping its promise; with jobs running their recorded run times
    (``overrun="extend"``, as the independent replay of issue 25 ran them) FCFS-EASY's longest
    wait is 262,194 s, the value that replay gave, and strict FCFS's average wait 389,852 s
    (390,083 s, that replay's figure, with the processors read from the allocation, field 5)."""
    arrival = kth.jobs.get_column("arrival").to_numpy()
    waits = {}
    extend = ClusterConfig(slots=None, overrun="extend")
    for spec in ("fcfs+strict", "fcfs+easy", "fcfs+conservative", "sjf+easy"):
        s = run_policy(kth, make_policy(spec), extend)
        check_schedule(kth, s.start, s.machine, overrun="extend")
        check_discipline(kth, s.start, spec.split("+")[1], in_arrival_order=spec[:4] == "fcfs")
        waits[spec] = s.start - arrival
        killed = run_policy(kth, make_policy(spec), WHOLE)  # jobs end by their requests
        check_discipline(kth, killed.start, spec.split("+")[1], reserved=killed.reserved,
                         in_arrival_order=spec[:4] == "fcfs",
                         runtime=job_times(kth, "kill")[0])  # fmt: skip
    assert waits["fcfs+easy"].max() == 262_194
    assert round(waits["fcfs+strict"].mean()) == 389_852
    allocated = read_swf(KTH, procs="allocated").jobs
    strict = run_policy(allocated, make_policy("fcfs+strict"), extend).start
    assert round((strict - allocated.jobs.get_column("arrival").to_numpy()).mean()) == 390_083
    assert waits["fcfs+easy"].mean() < waits["fcfs+conservative"].mean() < 10_000
