"""Behaviour cloning of a heuristic: demonstrations replay the expert's list schedule, duplicates
are removed, and the cloned policy reproduces SJF on held-out jobsets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.policies.imitation import (
    ImitationError,
    agreement,
    clone,
    deduplicate,
    demonstrate,
    split,
)
from schedlab.policies.networks import Logits, make_network
from schedlab.policies.policy_gradient import (
    image_view,
)
from schedlab.registry import make_policy
from schedlab.simulator.cluster.batched import BatchedEngine
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import schedule
from schedlab.simulator.views.deeprm_image import DeepRMImage
from tests.strategies import deeprm_jobset, heuristic_names

SMALL = ClusterConfig(slots=3, horizon=8, backlog_view=8)


def _engine(jobset, config: ClusterConfig = SMALL, repeats: int = 1) -> BatchedEngine:
    return BatchedEngine.from_jobset(jobset, config, repeats=repeats)


# -- demonstrations --------------------------------------------------------------------------
@pytest.mark.parametrize("name", heuristic_names())
def test_replaying_the_expert_labels_gives_its_list_schedule(name: str) -> None:
    jobset = deeprm_jobset(1.3, n_jobsets=5, seed=11)
    engine = _engine(jobset)
    expert = make_policy(name)
    demos = demonstrate(engine, expert, DeepRMImage())
    replayed = engine.all_starts()
    if name != "random":  # Random draws its uniforms per decision in another order
        np.testing.assert_array_equal(replayed, schedule(jobset, expert, SMALL))
    assert demos.mask[np.arange(len(demos)), demos.actions].all()
    starts = (demos.actions > 0).sum()
    assert starts == len(jobset)  # one decision per start, the rest are voids
    assert (demos.actions == 0).any()


def test_an_expert_action_the_agent_cannot_take_is_refused() -> None:
    class Bad:
        name, view = "bad", DeepRMImage()

        def reset(self, *, seed=None) -> None:
            pass

        def act_batch(self, obs, *, mask):
            return np.where(mask.all(axis=1), 1, np.argmin(mask, axis=1))

    with pytest.raises(ImitationError, match="expert 'bad' chose action"):
        demonstrate(_engine(deeprm_jobset(1.3, n_jobsets=3, seed=1)), Bad(), DeepRMImage())


def test_duplicates_removed_and_split_nine_to_one() -> None:
    engine = _engine(deeprm_jobset(0.9, n_jobsets=6, seed=3), repeats=3)
    demos = demonstrate(engine, make_policy("sjf"), DeepRMImage())
    distinct, conflicts = deduplicate(demos)
    assert len(distinct) <= len(demos) // 3 + 1  # each jobset replayed 3 times identically
    assert conflicts == 0  # SJF's choice is a function of the image
    train_part, test_part = split(distinct, np.random.default_rng(0))
    assert len(train_part) + len(test_part) == len(distinct)
    assert len(test_part) == round(0.1 * len(distinct))
    with pytest.raises(ValueError, match="holdout"):
        split(distinct, np.random.default_rng(0), holdout=1.0)


# -- cloning SJF ---------------------------------------------------------------------------
THRESHOLD = 0.85


@pytest.fixture(scope="module")
def cloned():
    """A CNN cloned from SJF on a small cluster (M = 3, T = 8), and its result."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the trainer does: faster than 2 on a small shared machine
    torch.manual_seed(0)
    gen = DeepRMGenerator(window=20)
    engine = _engine(gen.generate(0.9, n_jobsets=200, seed=1))
    geometry = DeepRMImage().geometry(engine.snapshot())
    distinct, _ = deduplicate(demonstrate(engine, make_policy("sjf"), image_view(geometry)))
    rng = np.random.default_rng(0)
    train_part, test_part = split(distinct, rng)
    logits_fn = Logits(make_network("cnn-plus", geometry), geometry)
    result = clone(
        logits_fn,
        train_part,
        test_part,
        threshold=THRESHOLD,
        max_epochs=20,
        batch_size=128,
        lr=3e-3,
        rng=rng,
    )
    torch.set_num_threads(threads)
    return logits_fn, result, gen


def test_cloning_reaches_the_threshold_and_reports_its_curve(cloned) -> None:
    _, result, _ = cloned
    assert result.reached
    assert result.accuracy >= THRESHOLD
    curve = result.curve
    assert curve["test_accuracy"][-1] == pytest.approx(result.accuracy)
    assert curve["test_accuracy"][-1] > curve["test_accuracy"][0]
    assert (curve["samples_per_s"] > 0).all()
    assert curve.height < 20  # stopped when the threshold was reached


def test_cloned_policy_reproduces_sjf_on_held_out_jobsets(cloned) -> None:
    logits_fn, _, gen = cloned
    held_out = gen.generate(0.9, n_jobsets=20, seed=2)
    agree = agreement(logits_fn, held_out, make_policy("sjf"), SMALL)
    assert agree["decision_accuracy"] >= THRESHOLD
    assert agree["same_start"] > 0.5  # free-running: most jobs start when SJF starts them
    assert agree["slowdown_learner"] < 1.15 * agree["slowdown_expert"]
