"""The multi-cluster model (Liu et al., ICPP'20, §4.4, §5): FIFO with halting, elasticity,
deadlines, actions, and the invariants every episode keeps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from schedlab.errors import InfeasibleJobError, JobSetError, SimulationError
from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.liu_baselines import MAF, RAN, RR
from schedlab.simulator.check import InvalidScheduleError
from schedlab.simulator.multicluster import kernels as k
from schedlab.simulator.multicluster.check import check_run
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.jobs import execution_times
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.run import run_policy
from tests.liu_helpers import jobset

TWO = MultiClusterConfig(capacities=(10, 10), hetero=(100, 50), elastic=(), slots=3)


def drive(model: MultiClusterModel, choose: Callable[[MultiClusterModel, int], int]) -> list[float]:
    """Run every env to its end with ``choose(model, env) -> action``; the rewards."""
    rewards = [float(model.reset().sum())]
    while not model.done.all():
        active = np.flatnonzero(~model.done)
        rewards += model.step(np.array([choose(model, int(b)) for b in active]), active).tolist()
    return rewards


def to_cluster(plan: dict[int, int]) -> Callable[[MultiClusterModel, int], int]:
    """Dispatch the buffer head to ``plan[job row]``."""

    def choose(model: MultiClusterModel, b: int) -> int:
        row = int(model.snapshot().visible[b, 0])
        return 1 + plan[row] * model.config.slots

    return choose


def test_fifo_with_halting_prioritises_halting_jobs_and_does_not_block() -> None:
    js = jobset([
        {"arrival": 0, "request": [6, 6], "standard_time": 5},   # A
        {"arrival": 1, "request": [6, 6], "standard_time": 5},   # B halts behind A
        {"arrival": 2, "request": [3, 3], "standard_time": 10},  # C fits beside A: no blocking
        {"arrival": 5, "request": [2, 2], "standard_time": 5},   # D new at 5, after halting B
    ])  # fmt: skip
    model = MultiClusterModel.from_jobset(js, TWO)
    drive(model, to_cluster(dict.fromkeys(range(4), 0)))
    p = model.placements()
    assert p.start.tolist() == [0, 5, 2, 10]
    assert p.finish.tolist() == [5, 10, 12, 15]
    check_run(model)


def test_halting_jobs_retry_in_arrival_order_not_dispatch_order() -> None:
    js = jobset([
        {"arrival": 0, "request": [10, 10], "standard_time": 5},
        {"arrival": 1, "request": [8, 8], "standard_time": 5},  # F
        {"arrival": 1, "request": [8, 8], "standard_time": 5},  # G, dispatched before F
    ])  # fmt: skip
    model = MultiClusterModel.from_jobset(js, TWO)

    def choose(m: MultiClusterModel, b: int) -> int:
        visible = m.snapshot().visible[b]
        q = 1 if visible[1] >= 0 else 0  # the later job first when two are buffered
        return 1 + q

    drive(model, choose)
    assert model.dispatch_times().tolist() == [0, 2, 1]  # one dispatch per moment
    assert model.placements().start.tolist() == [0, 5, 10]


def test_elastic_cluster_expands_when_busy_and_returns_in_stages() -> None:
    config = MultiClusterConfig(
        capacities=(10, 10), hetero=(100, 50), elastic=(1,), elastic_step=5, elastic_limit=10,
        elastic_window=3,
    )  # fmt: skip
    js = jobset([{"arrival": 0, "request": [10, 10], "standard_time": 20, "hetero": 50}])
    model = MultiClusterModel.from_jobset(js, config)
    drive(model, to_cluster({0: 1}))
    # busy at 0 -> +5 at 1; 10/15 < 95% for a window -> -5 at 4; busy again -> +5 at 7; ...
    assert model.elastic_log(0, 1).tolist() == [
        [1, 5], [4, 0], [7, 5], [10, 0], [13, 5], [16, 0], [19, 5],
    ]  # fmt: skip
    assert model.elastic_log(0, 0).size == 0  # not elastic
    check_run(model)


def test_elastic_expansion_stops_at_the_limit_and_never_cuts_running_executors() -> None:
    config = MultiClusterConfig(
        capacities=(10, 10), hetero=(100, 100), elastic=(0,), elastic_step=5, elastic_limit=10,
        elastic_window=3,
    )  # fmt: skip
    js = jobset([
        {"arrival": 0, "request": [10, 10], "standard_time": 30},
        {"arrival": 2, "request": [5, 5], "standard_time": 30},
        {"arrival": 5, "request": [5, 5], "standard_time": 30},
    ])  # fmt: skip
    model = MultiClusterModel.from_jobset(js, config)
    drive(model, to_cluster(dict.fromkeys(range(3), 0)))
    log = model.elastic_log(0, 0)
    assert log[:, 1].max() == 10  # the limit
    assert log[:2].tolist() == [[1, 5], [4, 10]]
    assert model.placements().start.tolist() == [0, 2, 5]  # each start used the expansion
    check_run(model)


def test_deadlines_count_waiting_and_streaming_executions_run_back_to_back() -> None:
    js = jobset([
        {"arrival": 0, "request": [6, 6], "standard_time": 4, "executions": 3,
         "category": "streaming", "deadline": 5},  # K
        {"arrival": 2, "request": [5, 5], "standard_time": 6, "category": "general"},  # L
    ])  # fmt: skip
    model = MultiClusterModel.from_jobset(js, TWO)
    rewards = drive(model, to_cluster({0: 0, 1: 0}))
    log = model.executions()
    assert log.request_time.tolist() == [0, 4, 14, 2]
    assert log.start.tolist() == [0, 10, 14, 4]  # K's second execution waits for L
    assert log.finish.tolist() == [4, 14, 18, 10]
    assert log.missed.tolist() == [False, True, False, False]  # 10 steps > deadline 5
    assert sum(rewards) == -1.0  # the return is -TMDL
    assert model.snapshot().misses[0].tolist() == [1, 0]
    check_run(model)


def test_improper_heterogeneity_misses_without_waiting() -> None:
    js = jobset(
        [{"arrival": 0, "request": [2, 2], "hetero": 100, "sensitivity": 1, "deadline": 10}]
    )
    model = MultiClusterModel.from_jobset(js, TWO)
    drive(model, to_cluster({0: 1}))  # η = 50, clamped to 90: round(10 · 100 / 90) = 11 > 10
    log = model.executions()
    assert (log.finish - log.start).tolist() == [11]
    assert log.missed.tolist() == [True]
    assert not log.waited.any()


def test_execution_time_is_proportional_inside_the_sensitivity_range_only() -> None:
    std, h, sen = np.array([10, 10]), np.array([80, 80]), np.array([1, 5])
    config = MultiClusterConfig(capacities=(1, 1, 1, 1), hetero=(100, 60, 85, 40), elastic=())
    times = execution_times(std, h, sen, config)
    # sen 1: range 70..90 -> 100 counts as 90, 60 as 70, 85 itself, 40 as 70
    assert times[0].tolist() == [9, 11, 9, 11]
    # sen 5: range 30..130 -> every factor itself
    assert times[1].tolist() == [8, 13, 9, 20]


def test_void_and_invalid_actions_dispatch_nothing_and_time_advances() -> None:
    js = jobset([{"arrival": 0, "request": [2, 2]}])
    model = MultiClusterModel.from_jobset(js, TWO)
    mask = model.action_mask()
    assert mask.shape == (1, 1 + 2 * 3)
    assert mask[0].tolist() == [True, True, False, False, True, False, False]
    model.step(np.array([0]))  # void
    model.step(np.array([3]))  # buffer position 2 is empty: acts as void
    assert model.snapshot().now[0] == 2
    model.step(np.array([4]))  # 1 + 1·3 + 0: the job to cluster 1
    assert model.dispatch_times().tolist() == [2]
    assert model.placements().target.tolist() == [1]


def test_a_policy_that_never_dispatches_hits_the_time_limit() -> None:
    js = jobset([{"arrival": 0, "request": [2, 2]}])
    model = MultiClusterModel.from_jobset(js, TWO)

    def void_forever() -> None:
        while True:
            model.step(np.array([0]))

    with pytest.raises(SimulationError, match="keeps answering void"):
        void_forever()


def test_history_is_oldest_first_with_zeros_before_the_episode() -> None:
    js = jobset([
        {"arrival": 0, "request": [5, 5], "standard_time": 3},
        {"arrival": 6, "request": [2, 2]},
    ])  # fmt: skip
    config = MultiClusterConfig(capacities=(10, 10), hetero=(100, 50), elastic=(), history=15)
    model = MultiClusterModel.from_jobset(js, config)
    model.step(np.array([1]))  # job 0 to cluster 0 at 0; the model stops at 6 (next arrival)
    h = model.snapshot().history(8)
    assert h.shape == (1, 2, 8)
    assert h[0, 0].tolist() == [0, 0, 0.5, 0.5, 0.5, 0, 0, 0]  # moments -2 .. 5
    assert not h[0, 1].any()


@pytest.fixture(scope="module")
def generated() -> MultiClusterModel:
    gen = LiuMultiClusterGenerator(n_jobs=150)
    js = gen.generate_rates([gen.natural_rate()], n_jobsets=3, seed=5)
    return MultiClusterModel.from_jobset(js)


@pytest.mark.parametrize("policy", [RAN(), RR(), MAF()], ids=lambda p: p.name)
def test_every_episode_keeps_the_invariants(generated: MultiClusterModel, policy: object) -> None:
    model = run_policy(generated, policy)
    assert model.done.all()
    assert (model.placements().finish > model.placements().start).all()
    check_run(model)  # every job finished, capacity incl. elasticity, FIFO timing, deadlines


def test_the_check_catches_a_cluster_over_capacity(generated: MultiClusterModel) -> None:
    model = run_policy(generated, MAF())
    log = model.executions()
    busy = np.argmax(log.executors)  # make its execution start one step before it did
    first = model.jobs.exec_bounds[log.job[busy]] == busy
    model._ex[busy, k.E_START] -= 1
    model._ex[busy, k.E_FINISH] -= 1
    if first:
        model._job[log.job[busy], k.DISPATCH] -= 1
    with pytest.raises(InvalidScheduleError):
        check_run(model)


def test_reset_replays_the_same_episodes_and_envs_step_independently(
    generated: MultiClusterModel,
) -> None:
    first = run_policy(generated, RAN()).placements()
    again = run_policy(generated, RAN()).placements()
    np.testing.assert_array_equal(first.start, again.start)
    generated.reset()
    before = generated.snapshot().now.copy()
    generated.step(np.array([1]), np.array([1]))
    after = generated.snapshot().now
    assert after[0] == before[0]
    assert after[2] == before[2]
    assert after[1] > before[1]


def test_jobsets_that_do_not_fit_the_clusters_are_refused() -> None:
    js = jobset([{"arrival": 0, "request": [11, 2]}])
    with pytest.raises(InfeasibleJobError, match=r"requests 11 executors on cluster 0"):
        MultiClusterModel.from_jobset(js, TWO)
    three = MultiClusterConfig(capacities=(10, 10, 10), hetero=(1, 1, 1), elastic=())
    with pytest.raises(JobSetError, match="made for 2 clusters"):
        MultiClusterModel.from_jobset(jobset([{"arrival": 0, "request": [1, 1]}]), three)
    plain = jobset([{"arrival": 0, "request": [1, 1]}])
    bare = type(plain)(plain.jobs.drop("requests"), plain.meta)
    with pytest.raises(JobSetError, match=r"needs job columns \['requests'\]"):
        MultiClusterModel.from_jobset(bare, TWO)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hetero": (1,)}, "one heterogeneity factor per cluster"),
        ({"elastic": (7,)}, "elastic clusters must be distinct"),
        ({"elastic_threshold": 0.0}, "elastic_threshold"),
        ({"slots": 0}, "slots and history"),
    ],
)
def test_bad_configs_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MultiClusterConfig(**kwargs)
