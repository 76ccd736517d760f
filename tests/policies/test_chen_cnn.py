"""Chen et al.'s CNN (2017, Table I): the pattern-lookup evaluation is the convolution."""

from __future__ import annotations

import numpy as np
import torch

from schedlab.policies.chen_cnn import ChenCNN
from schedlab.policies.networks import Logits, make_network
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.views.deeprm_image import DeepRMImage
from tests.strategies import deeprm_jobset


def test_pattern_lookup_equals_the_convolution_and_its_gradients() -> None:
    torch.manual_seed(0)
    net = ChenCNN((6, 9), 7)
    x = (torch.rand(40, 6, 9) > 0.5).float()
    x[:, :, -1] = torch.rand(40, 1)  # the extra column holds any value in [0, 1]
    fast, ref = net(x), net.reference(x)
    torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)
    weights = torch.arange(7.0)
    grads = []
    for f in (net.forward, net.reference):
        net.zero_grad()
        (f(x) * weights).sum().backward()
        grads.append([p.grad.clone() for p in net.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_network_on_engine_images_of_two_machines() -> None:
    js = deeprm_jobset(0.9, n_jobsets=3, seed=2)
    config = ClusterConfig(slots=5, machines=2)
    engine = BatchedEngine.from_jobset(js, config)
    view = DeepRMImage(layout="reshaped")
    obs = engine.observe(view)
    assert obs.geometry.shape == (20, (2 + 5) * 20 + 3 + 1)
    torch.manual_seed(1)
    net = make_network("chen-cnn", obs.geometry)
    logits = Logits(net, obs.geometry)(obs)
    assert logits.shape == (3, 2 * 5 + 1)
    with torch.no_grad():
        ref = net.reference(torch.from_numpy(obs.dense()))
    np.testing.assert_allclose(logits.detach().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
