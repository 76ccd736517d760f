"""Liu's baselines RAN, RR and MAF (ICPP'20, §5): hand-checked choices and the contract."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.policies.check import check_policy
from schedlab.policies.liu_baselines import MAF, RAN, RR, least_request
from schedlab.registry import make_policy
from schedlab.simulator.multicluster.views import QueueObs

CAPACITY = [800.0, 1200.0, 1500.0, 1800.0, 2300.0]


def _obs(jobsets: list[int], occupation: list[float], usual: list[list[int]]) -> QueueObs:
    """Every env with the same clusters; buffer of ``len(usual)`` jobs (M = 4)."""
    n, m = len(jobsets), 4
    req = np.zeros((n, m, 5), dtype=np.int64)
    req[:, : len(usual)] = usual
    visible = np.where(np.arange(m) < len(usual), np.arange(m), -1)[None].repeat(n, 0)
    worker = np.where(visible >= 0, req.mean(axis=2), np.inf)
    return QueueObs(
        envs=np.arange(n), jobset=np.asarray(jobsets), capacity=np.array([CAPACITY] * n),
        occupation=np.array([occupation] * n), visible=visible, usual=req, worker=worker,
    )  # fmt: skip


def test_baselines_pick_the_least_worker_request_first_on_ties() -> None:
    obs = _obs([0], [0.0] * 5, [[300] * 5, [100, 200, 100, 300, 400], [220] * 5, [220] * 5])
    assert least_request(obs).tolist() == [1]  # mean 220 ties with jobs 2, 3: the first wins
    tie = _obs([0], [0.0] * 5, [[300] * 5, [220] * 5, [220] * 5])
    assert least_request(tie).tolist() == [1]


def test_maf_maximises_free_capacity_over_the_request() -> None:
    obs = _obs([0], [0.5, 0.0, 0.9, 0.2, 0.6], [[300] * 5, [100, 200, 100, 300, 400]])
    # (1 - RO)·CAP/ER = 4, 6, 1.5, 4.8, 2.3 -> cluster 1; job 1; M = 4
    assert MAF().act_batch(obs).tolist() == [1 + 1 * 4 + 1]
    busy = _obs([0], [0.5, 0.9, 0.9, 0.2, 0.6], [[100, 200, 100, 300, 400]])
    assert MAF().act_batch(busy).tolist() == [1 + 3 * 4]  # 4, 0.6, 1.5, 4.8, 2.3 -> cluster 3


def test_rr_cycles_from_a_random_start_per_episode() -> None:
    obs = _obs([7, 8], [0.0] * 5, [[1] * 5])
    rr = RR()
    rr.reset()
    got = np.array([rr.clusters(obs, np.zeros(2, dtype=int)) for _ in range(7)])
    starts = [np.random.default_rng([0, j]).integers(5) for j in (7, 8)]
    for k, start in enumerate(starts):
        assert got[:, k].tolist() == [(start + t) % 5 for t in range(7)]
    rr.reset()
    assert rr.clusters(obs, np.zeros(2, dtype=int)).tolist() == got[0].tolist()


def test_ran_draws_one_stream_per_episode() -> None:
    obs = _obs([3], [0.0] * 5, [[1] * 5])
    ran = RAN(seed=9)
    ran.reset()
    got = [int(ran.clusters(obs, np.zeros(1, dtype=int))[0]) for _ in range(20)]
    rng = np.random.default_rng([9, 3])
    assert got == [int(rng.integers(5)) for _ in range(20)]
    assert len(set(got)) > 1


@pytest.mark.parametrize("policy", [RAN(), RR(), MAF(window=50)], ids=lambda p: p.name)
def test_baselines_pass_the_policy_check(policy: object) -> None:
    check_policy(policy)


def test_baselines_are_made_by_name() -> None:
    maf = make_policy("liu-maf:window=30")
    assert isinstance(maf, MAF)
    assert maf.window == 30
    assert maf.name == "liu-maf:window=30"
    assert make_policy("liu-rr").name == "liu-rr"
