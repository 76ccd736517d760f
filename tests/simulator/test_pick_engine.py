"""The pick engine (issue 37): an agent that always picks the job a heuristic's order puts
first gets exactly the schedule ``simulate`` gives that heuristic under the same discipline
(greedy, strict, EASY), on KTH-SP2 windows (real requests, jobs killed at them) and on
multi-machine, two-resource jobsets whose estimates are off both ways."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.evaluation.metrics import per_jobset
from schedlab.jobset import JobSet
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.pick.engine import PickConfig, PickEngine
from schedlab.simulator.run import run_policy, simulate
from tests.simulator.pick_helpers import (
    kth_windows,
    order_picks,
    run_picks,
    with_estimates,
)
from tests.strategies import deeprm_jobset

QUEUES = ["greedy", "strict", "easy"]


@pytest.fixture(scope="module")
def kth() -> JobSet:
    return kth_windows()


def _spec(order: str, queue: str) -> str:
    return order if queue == "greedy" else f"{order}+{queue}"


def _assert_same(js: JobSet, order: str, queue: str, config: ClusterConfig, visible: int) -> None:
    policy = make_policy(_spec(order, queue))
    pick = PickConfig(
        visible=visible, queue=queue, machines=config.machines, overrun=config.overrun
    )
    engine = PickEngine.for_jobsets(js, pick)
    run_picks(engine, order_picks(engine, policy))
    want = run_policy(
        js, policy, ClusterConfig(slots=None, machines=config.machines, overrun=config.overrun)
    )
    got = engine.placements()
    np.testing.assert_array_equal(got.start, want.start)
    np.testing.assert_array_equal(got.target, want.machine)


@pytest.mark.parametrize("queue", QUEUES)
@pytest.mark.parametrize("order", ["fcfs", "sjf", "wfp3", "unicep", "f1"])
def test_heuristic_picks_give_the_heuristics_schedule_on_kth(kth, order, queue) -> None:
    _assert_same(kth, order, queue, ClusterConfig(), visible=256)


@pytest.mark.parametrize("queue", QUEUES)
def test_fcfs_picks_need_no_more_than_one_visible_job(kth, queue) -> None:
    """Candidates are shown in arrival order, so FCFS is exact whatever K."""
    _assert_same(kth, "fcfs", queue, ClusterConfig(), visible=1)


@pytest.mark.parametrize("overrun", ["kill", "extend"])
@pytest.mark.parametrize("machines", [1, 3])
@pytest.mark.parametrize("queue", QUEUES)
@pytest.mark.parametrize("order", ["fcfs", "sjf"])
def test_machines_resources_and_overruns(order, queue, machines, overrun) -> None:
    js = with_estimates(deeprm_jobset(1.3, n_jobsets=3, seed=machines), seed=7)
    _assert_same(js, order, queue, ClusterConfig(machines=machines, overrun=overrun), 64)


def test_return_is_minus_the_mean_bounded_slowdown_of_the_report(kth) -> None:
    """Rewards sum to minus the window's mean bounded slowdown (τ = 10 s), the metric
    ``schedlab report`` computes from the same schedule (in seconds)."""
    engine = PickEngine.for_jobsets(kth, PickConfig(queue="easy"))
    returns = np.asarray(engine.reset(), dtype=np.float64)
    active = np.flatnonzero(~engine.done)
    while active.size:
        returns[active] += engine.step(np.ones(active.size, np.int64), active)
        active = active[~engine.done[active]]
    means = engine.window_means()["bounded_slowdown"]
    np.testing.assert_allclose(-returns, means, rtol=1e-9)
    report = per_jobset(simulate(kth, [make_policy("fcfs+easy")], ClusterConfig(slots=None)))
    np.testing.assert_allclose(means, report.get_column("bounded_slowdown").to_numpy(), rtol=1e-3)


def test_wait_and_utilisation_rewards(kth) -> None:
    for objective in ("wait", "utilisation"):
        engine = PickEngine.for_jobsets(kth, PickConfig(queue="easy", objective=objective))
        total = np.asarray(engine.reset(), dtype=np.float64)
        while not engine.done.all():
            total += engine.step(np.ones(engine.n_envs, np.int64))
        if objective == "wait":
            np.testing.assert_allclose(-total * 3600, engine.window_means()["wait"], rtol=1e-9)
        else:
            assert ((total > 0) & (total <= 1)).all()


def test_every_job_starts_once_and_masks_mark_the_candidates(kth) -> None:
    engine = PickEngine.for_jobsets(kth, PickConfig(visible=8, queue="easy"))
    engine.reset()
    rng = np.random.default_rng(0)
    while not engine.done.all():
        mask = engine.action_mask()
        assert mask[:, 0].all()
        cn = engine.state.cn
        np.testing.assert_array_equal(mask[:, 1:].sum(axis=1), np.minimum(cn, 8))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        engine.step(actions)
    start = engine.placements().start
    assert (start >= kth.jobs.get_column("arrival").to_numpy()).all()


def test_bad_configs_and_dag_workloads_are_refused(kth) -> None:
    with pytest.raises(ValueError, match="visible must be >= 1"):
        PickConfig(visible=0)
    with pytest.raises(ValueError, match=r"queue: 'conservative' is not one of"):
        PickConfig(queue="conservative")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tau must be > 0"):
        PickConfig(tau=0)
    dag = kth.jobs.head(3).with_columns(parents=[[], [], []])
    with pytest.raises(ValueError, match="does not model DAG precedence"):
        PickEngine(JobSet(dag, kth.meta), PickConfig(), 1)
