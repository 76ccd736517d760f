"""DeepRM_Plus's network: the CNN of Table I (Guo et al.), its exact sparse first layer, each
distinct observation evaluated once, and the grouped update's per-decision gradient."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from schedlab.policies.cnn_plus import CNNPlusNet, corner_table
from schedlab.policies.networks import Logits, make_network, unique_observations
from schedlab.policies.policy_gradient import (
    collect,
    grouped_weights,
    policy_gradient_step,
)
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry
from tests.strategies import deeprm_jobset

SMALL = ClusterConfig(slots=3, horizon=8, backlog_view=8)
REFERENCE = ObsGeometry(cap_units=(10, 10))


def _random_obs(config: ClusterConfig, *, seed: int, repeats: int = 3):
    """Observations of random rollouts (with repeats) and their geometry."""
    jobset = deeprm_jobset(1.2, n_jobsets=4, seed=seed)
    engine = BatchedEngine.from_jobset(jobset, config, repeats=repeats)
    geometry = DeepRMImage().geometry(engine.snapshot())
    torch.manual_seed(seed)
    logits_fn = Logits(make_network("mlp", geometry), geometry)
    batch = collect(engine, logits_fn, np.random.default_rng(seed), mask_invalid=True, record=True)
    return batch, geometry


# -- the network ---------------------------------------------------------------------------
def test_cnn_has_the_shapes_of_table_1() -> None:
    net = make_network("cnn-plus", REFERENCE)
    assert isinstance(net, CNNPlusNet)
    x = torch.zeros(2, 1, 20, 224)
    h1 = torch.nn.functional.avg_pool2d(torch.relu(net.conv1(x)), 2)
    h2 = torch.nn.functional.avg_pool2d(torch.relu(net.conv2(h1)), 2)
    assert net.conv1(x).shape == (2, 8, 20, 224)
    assert h1.shape == (2, 8, 10, 112)
    assert h2.shape == (2, 16, 5, 56)
    assert net.fc1.in_features == 4480
    assert net.fc1.out_features == 69
    assert net(torch.zeros(3, 20, 224)).shape == (3, 11)
    assert sum(p.numel() for p in net.parameters()) == 313_383


def test_cnn_rejects_images_too_small_and_even_kernels() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        CNNPlusNet(3, 40, 5)
    with pytest.raises(ValueError, match="odd kernel"):
        CNNPlusNet(20, 40, 5, kernel=4)


def test_corners_rebuild_every_dictionary_entry() -> None:
    g = ObsGeometry(cap_units=(4, 3), slots=2, horizon=5, backlog_view=7)
    ptr, row, col, sign = corner_table(g)
    indptr, cells = g.dictionary()
    T, W = g.shape
    for e in range(g.n_entries):
        d = np.zeros((T + 1, W + 1))
        np.add.at(
            d, (row[ptr[e] : ptr[e + 1]], col[ptr[e] : ptr[e + 1]]), sign[ptr[e] : ptr[e + 1]]
        )
        image = np.zeros(T * W)
        image[cells[indptr[e] : indptr[e + 1]]] = 1
        np.testing.assert_array_equal(d.cumsum(0).cumsum(1)[:T, :W], image.reshape(T, W))


@pytest.mark.parametrize(("layout", "threads"), [("deeprm", 1), ("reshaped", 1), ("deeprm", 2)])
def test_sparse_first_layer_is_the_dense_network(layout: str, threads: int) -> None:
    """Also with the observations split over two threads (each summing its own gradient)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    batch, g = _random_obs(SMALL, seed=5)
    obs = batch.obs
    if layout == "reshaped":  # same cells, other column order: re-observe is not needed here
        g = replace(g, layout="reshaped")
        obs = type(obs)(obs.terms, obs.weights, g)
    torch.manual_seed(0)
    net = make_network("cnn-plus", g)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.3)
    grads = []
    for forward in (lambda: net(torch.from_numpy(obs.dense())), lambda: net.forward_obs(obs)):
        net.zero_grad()
        out = forward()
        (out**2).sum().backward()
        grads.append((out.detach(), [p.grad.clone() for p in net.parameters()]))
    torch.set_num_threads(previous)
    (dense, g_dense), (sparse, g_sparse) = grads
    np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-4, atol=1e-4)
    for a, b in zip(g_dense, g_sparse, strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-3 * a.abs().max())


def test_logits_evaluate_each_distinct_observation_once() -> None:
    batch, g = _random_obs(SMALL, seed=6, repeats=4)
    first, inverse = unique_observations(batch.obs)
    assert first.size < len(batch.obs)  # the 4 rollouts of a jobset start in the same state
    np.testing.assert_array_equal(batch.obs.take(first).take(inverse).terms, batch.obs.terms)
    np.testing.assert_array_equal(np.sort(np.unique(inverse)), np.arange(first.size))
    net = make_network("cnn-plus", g)
    with torch.no_grad():
        grouped = Logits(net, g)(batch.obs)
        direct = net(torch.from_numpy(batch.obs.dense()))
    np.testing.assert_allclose(grouped.numpy(), direct.numpy(), rtol=1e-4, atol=1e-5)
    masks = np.zeros((len(batch.obs), 1), dtype=bool)
    masks[0] = True
    assert unique_observations(batch.obs, extra=masks)[0].size == first.size + 1


def test_grouped_update_has_the_per_decision_gradient() -> None:
    batch, g = _random_obs(SMALL, seed=7, repeats=4)
    adv = np.random.default_rng(0).normal(size=len(batch.actions)).astype(np.float32)
    _first, counts, weights = grouped_weights(batch, adv)
    assert counts.sum() == len(batch.actions)
    np.testing.assert_allclose(weights.sum(), adv.sum(), rtol=1e-6)
    torch.manual_seed(1)
    net = make_network("cnn-plus", g)
    logits_fn = Logits(net, g)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    policy_gradient_step(logits_fn, opt, batch, adv, mask_invalid=True)
    grouped = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    logits = net(torch.from_numpy(batch.obs.dense()))
    logp = torch.log_softmax(logits.masked_fill(~torch.from_numpy(batch.mask), -torch.inf), -1)
    chosen = logp.gather(1, torch.from_numpy(batch.actions)[:, None]).squeeze(1)
    (-(chosen * torch.from_numpy(adv)).sum() / len(adv)).backward()
    for a, b in zip(grouped, (p.grad for p in net.parameters()), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-4 * b.abs().max())
