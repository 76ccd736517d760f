"""Heuristics: hand-computed schedules, registry, parameters, pickling and seeding (design.md §8).

Every hand case uses two resources of capacity 10 and is worked out on paper in the comments; the
expected starts and slowdowns are checked on both engines (the compiled list scheduler and the
step engine). Slots are 0-based; ``s0 j2`` means slot 0 holds job 2.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pytest

from schedlab import registry
from schedlab.errors import UnknownNameError
from schedlab.jobset import JobSet
from schedlab.policies.heuristics import (
    FCFS,
    HRRN,
    SJF,
    Packer,
    RandomPolicy,
    TetrisStar,
)
from schedlab.simulator.cluster.engine import Engine, Jobs
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule, simulate
from tests.strategies import deeprm_jobset, heuristic_names, jobset_from_rows

ENGINES = ("fast", "step")


@dataclass(frozen=True)
class Case:
    """A hand-computed schedule of one jobset under one policy."""

    name: str
    rows: list[tuple[int, int, float, float]]
    policy: str
    start: list[int]
    slowdown: list[float]
    slots: int = 10
    params: dict[str, Any] = field(default_factory=dict)


# "mixed": three jobs at t=0, j0 dur 3 (9,9), j1 dur 1 (3,2), j2 dur 2 (8,8); no two fit together.
# fcfs:   t0 j0 -> free (1,1). t3 j1 (lowest index) -> free (7,8), j2 no. t4 j2.   [0,3,4]
# packer: t0 dots 180/50/160 -> j0. t3 dots 50/160 -> j2, j1 (3,2) > (2,2). t5 j1. [0,5,3]
# sjf:    t0 j1 (1/1), j2 (8>7) no. t1 j2 (1/2 > 1/3) -> free (2,2). t3 j0.       [3,0,1]
# tetris: 0.5*dot/200 + 0.5/dur: t0 j0 .6167, j1 .625, j2 .65 -> j2; j1 (3,2) > (2,2).
#         t2 j0 .6167 < j1 .625 -> j1 -> free (7,8), j0 no. t3 j0.                  [3,2,0]
# hrrn:   t0 all 1.0 (tie) -> slot 0 = j0. t3 j1 1+3/1 > j2 1+3/2 -> j1. t4 j2.  [0,3,4]
# random seed 0, draws .637 .270 .041: t0 k=3 -> floor(1.91)=1 -> j1, nothing else fits.
#         t1 k=2 -> floor(.54)=0 -> j0 -> free (1,1). t4 j2.                         [1,0,4]
MIXED = [(0, 3, 9.0, 9.0), (0, 1, 3.0, 2.0), (0, 2, 8.0, 8.0)]

# "short_or_big": j0 dur 3 (6,6), j1 dur 1 (5,5), j2 dur 2 (5,5), all at t=0.
# fcfs/packer (dot 120 > 100)/hrrn (tie -> slot 0): j0 at 0, then j1 and j2 together at 3.
# sjf/tetris (j1 .75, j2 .5, j0 .467): j1 and j2 at 0, j0 at 2.
# random seed 0: k=3, floor(3*.637)=1 -> j1; j2 the only fit (.270); j0 at 2 (.041).
# random seed 2 (draws .262 .298 .814): floor(3*.262)=0 -> j0; t3 k=2 floor(.597)=0 -> j1; j2.
SHORT_OR_BIG = [(0, 3, 6.0, 6.0), (0, 1, 5.0, 5.0), (0, 2, 5.0, 5.0)]

# "waiting": j0 (arr 0, dur 4, full cluster); j1 (arr 1, dur 4), j2 (arr 2, dur 2),
# j3 (arr 4, dur 1), each (6,6) so one runs at a time. Slots: j1 s0, j2 s1, j3 s2.
# At t=4 j0 completes (resources free first) and j3 arrives (it may start at once).
# fcfs:   j1 4-8, j2 8-10, j3 10.                          [0,4,8,10]
# packer: all dots 120 -> ties -> lowest slot: as fcfs.      [0,4,8,10]
# sjf:    j3 4-5, j2 5-7, j1 7.                              [0,7,5,4]
# tetris: equal alignment, so sjf's order.                   [0,7,5,4]
# hrrn:   t4 j1 1+3/4, j2 1+2/2, j3 1+0 -> j2 4-6;
#         t6 j1 1+5/4, j3 1+2/1 -> j3 6-7; j1 7.             [0,7,4,6]
# random seed 1 (draws .512 .950 .144 .949): t0 j0; t4 k=3 floor(2.85)=2 -> j3 4-5;
#         t5 k=2 floor(.29)=0 -> j1 5-9; j2 9.               [0,5,9,4]
WAITING = [(0, 4, 10.0, 10.0), (1, 4, 6.0, 6.0), (2, 2, 6.0, 6.0), (4, 1, 6.0, 6.0)]

# "backlog": all at t=0: j0 dur 2 (10,10), j1 dur 5, j2 dur 4, j3 dur 1 (each (6,6)).
# M=2: j0 s0, j1 s1, backlog [j2, j3]; j3 (the shortest) is not visible at first.
# sjf:    t0 j0 (.5 > .2); s0 <- j2. t2 j2 (.25 > .2) 2-6; s0 <- j3. t6 j3 6-7; t7 j1.
#         [0,7,2,6]   (with M=10 j3 would start first: [1,7,3,0])
# packer: t0 j0 (200 > 120); t2 tie 120 -> s0 = j2 (not j1, which arrived first);
#         t6 tie 48 -> s0 = j3; t7 j1.  [0,7,2,6]  (M=10: tie -> s1 = j1: [0,2,7,11])
# fcfs:   t0 j0; t2 j1 (index 1 in s1) 2-7, s1 <- j3; t7 j2 7-11; t11 j3. [0,2,7,11]
# tetris: t0 j0 .75 > j1 .4; t2 j2 .425 > j1 .4; t6 j3 .62 > j1 .22; t7 j1. [0,7,2,6]
# hrrn:   t0 tie -> j0; t2 j2 1.5 > j1 1.4; t6 j3 7 > j1 2.2; t7 j1.        [0,7,2,6]
# random seed 0: t0 k=2 floor(1.27)=1 -> j1 0-5, s1 <- j2; t5 k=2 floor(.54)=0 -> j0 5-7,
#         s0 <- j3; t7 k=2 floor(.08)=0 -> j3 7-8; t8 j2.  [5,0,8,7]
BACKLOG = [(0, 2, 10.0, 10.0), (0, 5, 6.0, 6.0), (0, 4, 6.0, 6.0), (0, 1, 6.0, 6.0)]

# "tie": M=3. jA (arr 0, dur 3, full), jB (arr 0, dur 4, (6,6)), jC (arr 1, dur 4, (6,6)).
# t0: jA s0, jB s1; sjf/packer/tetris start jA, s0 frees. t1: jC takes the lowest free slot s0.
# t3: jB and jC tie under sjf/packer/tetris -> slot 0 = jC, though jB arrived first. [0,7,3]
# fcfs and hrrn (jB 1+3/4 > jC 1+2/4) pick jB.                                        [0,3,7]
# random seed 0: t0 k=2 floor(1.27)=1 -> jB 0-4; t1 jC takes s1; t4 k=2 floor(.54)=0 -> jA
#         4-7; t7 jC.  [4,0,7]
TIE = [(0, 3, 10.0, 10.0), (0, 4, 6.0, 6.0), (1, 4, 6.0, 6.0)]

# "handover": j1 arrives exactly when j0 completes and takes the whole cluster at once.
HANDOVER = [(0, 2, 10.0, 10.0), (2, 1, 10.0, 10.0)]

# "rounded_tie": j0 (2.3, 2.3) runs [0, 2); at t=1 free is (7.7, 7.7) and j1 (4.6, 7.7) in s0
# and j2 (7.7, 4.6) in s1 cannot run together. Their packing scores are equal (94.71), yet
# ``np.dot`` rounds them differently (fused multiply-add): the tie must still go to slot 0.
# packer: j1 1-4, j2 4.   tetris: equal alignment and duration, same.   sjf: equal, same.
ROUNDED_TIE = [(0, 2, 2.3, 2.3), (1, 3, 4.6, 7.7), (1, 3, 7.7, 4.6)]

CASES = [
    Case("mixed", MIXED, "fcfs", [0, 3, 4], [1, 4, 3]),
    Case("mixed", MIXED, "packer", [0, 5, 3], [1, 6, 2.5]),
    Case("mixed", MIXED, "sjf", [3, 0, 1], [2, 1, 1.5]),
    Case("mixed", MIXED, "tetris", [3, 2, 0], [2, 3, 1]),
    Case("mixed", MIXED, "hrrn", [0, 3, 4], [1, 4, 3]),
    Case("mixed", MIXED, "random", [1, 0, 4], [4 / 3, 1, 3], params={"seed": 0}),
    Case("short_or_big", SHORT_OR_BIG, "fcfs", [0, 3, 3], [1, 4, 2.5]),
    Case("short_or_big", SHORT_OR_BIG, "packer", [0, 3, 3], [1, 4, 2.5]),
    Case("short_or_big", SHORT_OR_BIG, "hrrn", [0, 3, 3], [1, 4, 2.5]),
    Case("short_or_big", SHORT_OR_BIG, "sjf", [2, 0, 0], [5 / 3, 1, 1]),
    Case("short_or_big", SHORT_OR_BIG, "tetris", [2, 0, 0], [5 / 3, 1, 1]),
    Case("short_or_big", SHORT_OR_BIG, "random", [2, 0, 0], [5 / 3, 1, 1], params={"seed": 0}),
    Case("short_or_big", SHORT_OR_BIG, "random", [0, 3, 3], [1, 4, 2.5], params={"seed": 2}),
    Case("waiting", WAITING, "fcfs", [0, 4, 8, 10], [1, 1.75, 4, 7]),
    Case("waiting", WAITING, "packer", [0, 4, 8, 10], [1, 1.75, 4, 7]),
    Case("waiting", WAITING, "sjf", [0, 7, 5, 4], [1, 2.5, 2.5, 1]),
    Case("waiting", WAITING, "tetris", [0, 7, 5, 4], [1, 2.5, 2.5, 1]),
    Case("waiting", WAITING, "hrrn", [0, 7, 4, 6], [1, 2.5, 2, 3]),
    Case("waiting", WAITING, "random", [0, 5, 9, 4], [1, 2, 4.5, 1], params={"seed": 1}),
    Case("backlog", BACKLOG, "sjf", [0, 7, 2, 6], [1, 2.4, 1.5, 7], slots=2),
    Case("backlog", BACKLOG, "sjf", [1, 7, 3, 0], [1.5, 2.4, 1.75, 1], slots=10),
    Case("backlog", BACKLOG, "packer", [0, 7, 2, 6], [1, 2.4, 1.5, 7], slots=2),
    Case("backlog", BACKLOG, "packer", [0, 2, 7, 11], [1, 1.4, 2.75, 12], slots=10),
    Case("backlog", BACKLOG, "fcfs", [0, 2, 7, 11], [1, 1.4, 2.75, 12], slots=2),
    Case("backlog", BACKLOG, "tetris", [0, 7, 2, 6], [1, 2.4, 1.5, 7], slots=2),
    Case("backlog", BACKLOG, "hrrn", [0, 7, 2, 6], [1, 2.4, 1.5, 7], slots=2),
    Case("backlog", BACKLOG, "random", [5, 0, 8, 7], [3.5, 1, 3, 8], slots=2, params={"seed": 0}),
    Case("tie", TIE, "sjf", [0, 7, 3], [1, 2.75, 1.5], slots=3),
    Case("tie", TIE, "packer", [0, 7, 3], [1, 2.75, 1.5], slots=3),
    Case("tie", TIE, "tetris", [0, 7, 3], [1, 2.75, 1.5], slots=3),
    Case("tie", TIE, "fcfs", [0, 3, 7], [1, 1.75, 2.5], slots=3),
    Case("tie", TIE, "hrrn", [0, 3, 7], [1, 1.75, 2.5], slots=3),
    Case("tie", TIE, "random", [4, 0, 7], [7 / 3, 1, 2.5], slots=3, params={"seed": 0}),
    *[
        Case("rounded_tie", ROUNDED_TIE, name, [0, 1, 4], [1, 1, 2])
        for name in ("packer", "tetris", "sjf")
    ],
    *[Case("handover", HANDOVER, name, [0, 2], [1, 1]) for name in heuristic_names()],
]


def _case_id(case: Case) -> str:
    extra = "".join(f"-{k}{v}" for k, v in case.params.items())
    return f"{case.name}-{case.policy}{extra}-M{case.slots}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_hand_computed_schedule(case: Case, engine: str) -> None:
    jobset = jobset_from_rows(case.rows)
    policy = registry.policies.make(case.policy, **case.params)
    config = ClusterConfig(slots=case.slots)
    start = schedule(jobset, policy, config, engine=engine)  # type: ignore[arg-type]
    assert start.tolist() == case.start
    table = simulate(jobset, [policy], config, engine=engine).table  # type: ignore[arg-type]
    assert table["start"].to_list() == case.start
    assert table["slowdown"].to_list() == pytest.approx(case.slowdown, rel=1e-12)


def test_random_draws_used_in_hand_cases() -> None:
    """The draws quoted in the comments above: ``default_rng([seed, jobset_id])``."""
    policy = RandomPolicy(seed=0)
    policy.reset(seed=0)
    assert policy.uniforms(4) == pytest.approx([0.637, 0.270, 0.041, 0.017], abs=5e-4)
    policy = RandomPolicy(seed=1)
    policy.reset(seed=0)
    assert policy.uniforms(4) == pytest.approx([0.512, 0.950, 0.144, 0.949], abs=5e-4)
    policy = RandomPolicy(seed=2)
    policy.reset(seed=0)
    assert policy.uniforms(3) == pytest.approx([0.262, 0.298, 0.814], abs=5e-4)


def test_hand_cases_distinguish_the_heuristics() -> None:
    """On the "mixed" case every heuristic but hrrn (== fcfs there) has its own schedule."""
    starts = {c.policy: tuple(c.start) for c in CASES if c.name == "mixed"}
    assert len(starts) == 6
    assert starts["hrrn"] == starts["fcfs"]
    assert len(set(starts.values())) == 5


@pytest.fixture(scope="module")
def deeprm() -> JobSet:
    return deeprm_jobset(1.1, n_jobsets=12, seed=7)


@pytest.mark.parametrize("engine", ENGINES)
def test_tetris_knob_one_is_packer_and_knob_zero_is_sjf(deeprm: JobSet, engine: str) -> None:
    config = ClusterConfig()
    run = lambda p: schedule(deeprm, p, config, engine=engine)  # noqa: E731
    packer, sjf = run(Packer()), run(SJF())
    assert not np.array_equal(packer, sjf)  # the comparison below has teeth
    np.testing.assert_array_equal(run(TetrisStar(knob=1.0)), packer)
    np.testing.assert_array_equal(run(TetrisStar(knob=0.0)), sjf)
    default = run(TetrisStar())
    assert not np.array_equal(default, packer)
    assert not np.array_equal(default, sjf)


# -- registry, parameters, pickling, seeding -------------------------------------------------


def test_registry_makes_every_heuristic() -> None:
    for name in heuristic_names():
        policy = registry.policies.make(name)
        assert type(policy) is registry.policies.load(name)
        assert policy.name == type(policy).key == name
    assert isinstance(registry.policies.make("SJF"), SJF)  # names are case-insensitive


def test_unknown_policy_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown policy 'sjff'; did you mean 'sjf'"):
        registry.policies.make("sjff")
    with pytest.raises(KeyError, match=r"known: .*fcfs"):  # also a KeyError, lists known names
        registry.policies.make("no-such-policy")


def test_get_params_and_repr() -> None:
    ff = {"placement": "firstfit", "queue": "greedy", "clairvoyant": False}
    assert TetrisStar().get_params() == {"knob": 0.5, **ff}
    assert TetrisStar(knob=0.25).get_params() == {"knob": 0.25, **ff}
    assert RandomPolicy(seed=3).get_params() == {"seed": 3, **ff}
    assert RandomPolicy().get_params() == {"seed": 0, **ff}
    for cls in (FCFS, SJF, Packer, HRRN):
        assert cls().get_params() == ff
    assert SJF(placement="bestfit").get_params() == {**ff, "placement": "bestfit"}
    assert SJF(queue="easy").get_params() == {**ff, "queue": "easy"}
    assert repr(TetrisStar(knob=0.25)) == (
        "TetrisStar(placement='firstfit', queue='greedy', clairvoyant=False, knob=0.25)"
    )
    assert registry.policies.make("tetris", knob=0.75).get_params() == {"knob": 0.75, **ff}


@pytest.mark.parametrize("name", heuristic_names())
def test_policy_pickles_and_schedules_the_same(name: str, deeprm: JobSet) -> None:
    policy = registry.policies.make(name)
    config = ClusterConfig()
    before = schedule(deeprm, policy, config)
    clone = pickle.loads(pickle.dumps(policy))
    assert type(clone) is type(policy)
    assert clone.get_params() == policy.get_params()
    np.testing.assert_array_equal(schedule(deeprm, clone, config), before)
    np.testing.assert_array_equal(schedule(deeprm, clone, config, engine="step"), before)


def test_random_stream_survives_pickling() -> None:
    policy = RandomPolicy(seed=4)
    policy.reset(seed=9)
    policy.uniforms(3)
    clone = pickle.loads(pickle.dumps(policy))
    np.testing.assert_array_equal(clone.uniforms(5), policy.uniforms(5))


def test_random_same_seed_same_schedule_other_seed_differs() -> None:
    jobset = deeprm_jobset(1.5, n_jobsets=20, seed=11)
    config = ClusterConfig()
    a = schedule(jobset, RandomPolicy(seed=5), config)
    np.testing.assert_array_equal(schedule(jobset, RandomPolicy(seed=5), config), a)
    b = schedule(jobset, RandomPolicy(seed=6), config)
    assert not np.array_equal(a, b)
    # reusing one policy object gives the same schedule again (reset per jobset)
    policy = RandomPolicy(seed=5)
    schedule(jobset, policy, config)
    np.testing.assert_array_equal(schedule(jobset, policy, config), a)


def test_random_jobset_schedule_does_not_depend_on_the_other_jobsets() -> None:
    jobset = deeprm_jobset(1.5, n_jobsets=6, seed=12)
    config = ClusterConfig()
    full = schedule(jobset, RandomPolicy(seed=1), config)
    ids = jobset.jobs["jobset"].to_numpy()
    alone = JobSet.create(jobset.jobs.filter(pl.col("jobset") == 4), jobset.meta)
    np.testing.assert_array_equal(schedule(alone, RandomPolicy(seed=1), config), full[ids == 4])


@pytest.mark.parametrize("cls", [registry.policies.load(n) for n in heuristic_names()])
def test_act_without_a_fitting_job_is_void(cls: type) -> None:
    jobs = Jobs(np.array([0, 0]), np.array([2, 1]), np.array([[8.0, 8.0], [4.0, 4.0]]))
    state = Engine(jobs, np.array([10.0, 10.0]), ClusterConfig(slots=2))
    policy = cls()
    assert policy.act_batch(policy.view.observe(state.snapshot()), mask=None).tolist() in (
        [1],
        [2],
    )
    state.start_now(0)  # job 0 holds 8 of 10: job 1 cannot start until step 2
    assert policy.act_batch(policy.view.observe(state.snapshot()), mask=None).tolist() == [0]
