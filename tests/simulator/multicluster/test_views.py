"""Views of the multi-cluster: the baselines' structured state and Liu's Table 1 state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.policies.liu_baselines import MAF
from schedlab.policies.liu_networks import table1
from schedlab.policies.liu_networks import traverse as torch_traverse
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.views import (
    ClusterQueueView,
    LiuStateView,
    job_features,
    segments,
    state_size,
    traverse,
)


def test_table1_sizes() -> None:
    assert (state_size(5), job_features(5), segments(105)) == (839, 64, 10)
    with pytest.raises(ValueError, match="15 \\+ 10·k"):
        segments(100)


def test_traverse_makes_ten_overlapping_segments_of_fifteen() -> None:
    seg = traverse(np.arange(105.0))
    assert seg.shape == (10, 15)
    assert seg[0].tolist() == list(range(15))
    assert seg[9].tolist() == list(range(90, 105))
    np.testing.assert_array_equal(seg[1, :5], seg[0, 10:])  # 5-step overlaps
    np.testing.assert_array_equal(torch_traverse(torch.arange(105.0)).numpy(), seg)


@pytest.fixture(scope="module")
def midway() -> MultiClusterModel:
    """Three episodes stopped after 300 MAF decisions."""
    gen = LiuMultiClusterGenerator(n_jobs=400)
    model = MultiClusterModel.from_jobset(gen.generate_rates([0.2], n_jobsets=3, seed=2))
    maf = MAF()
    for _ in range(300):
        model.step(maf.act_batch(model.observe(maf.view)))
    return model


def test_liu_state_has_table1_layout(midway: MultiClusterModel) -> None:
    snap = midway.snapshot()
    state = midway.observe(LiuStateView())
    vec = state.vector()
    assert vec.shape == (3, 10, 839)
    assert vec.dtype == np.float32
    np.testing.assert_array_equal(state.history, snap.history(105))
    first = vec[:, 0, :155]  # cluster 1: seq, capacity, max capacity, hetero, 150, misses
    np.testing.assert_allclose(first[:, :4], [[0.2, 0.8, 0.8, 0.7]] * 3)
    np.testing.assert_array_equal(first[:, 4:154], traverse(state.history[:, 0]).reshape(3, -1))
    np.testing.assert_allclose(first[:, 154], snap.misses[:, 0] / 100)
    np.testing.assert_allclose(vec[:, 0, 2 * 155 + 2], 1.7)  # cluster 3 may grow by 200
    assert state.valid.sum() == (snap.visible >= 0).sum() > 0
    assert not vec[~state.valid][:, 775:].any()  # empty positions have no job values
    parts = [torch.from_numpy(x) for x in (state.history, state.clusters, state.jobs[:, 0])]
    np.testing.assert_allclose(table1(*parts).numpy(), vec[:, 0], rtol=1e-6)


def test_liu_state_job_part(midway: MultiClusterModel) -> None:
    state = midway.observe(LiuStateView())
    b, q = np.argwhere(state.valid)[0]
    row, jobs = state.rows[b, q], midway.jobs
    v = state.jobs[b, q]
    assert v[0] == pytest.approx((jobs.category[row] + 1) / 3)
    np.testing.assert_allclose(v[3:53], jobs.requests[row].ravel() / 1000, rtol=1e-6)
    np.testing.assert_allclose(v[53:58], jobs.standard_time[row] / 100, rtol=1e-6)
    deadline = np.where(jobs.deadline[row] < 0, -1.0, jobs.deadline[row] / 100)
    np.testing.assert_allclose(v[58:63], deadline, rtol=1e-6)


def test_queue_view_averages_occupation_over_its_window(midway: MultiClusterModel) -> None:
    snap = midway.snapshot()
    obs = midway.observe(ClusterQueueView(window=40))
    np.testing.assert_allclose(obs.occupation, snap.history(40).mean(axis=2), rtol=1e-6)
    np.testing.assert_array_equal(obs.capacity, snap.capacity)
    filled = obs.visible >= 0
    np.testing.assert_allclose(obs.worker[filled], obs.usual[filled].mean(axis=1))
    assert np.isinf(obs.worker[~filled]).all()
