"""Liu's after-the-fact action values (ICPP'20, §4.2, §4.3, Eq. 1) on a hand-worked episode."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.multicluster.model import MultiClusterModel
from schedlab.simulator.multicluster.values import ValueParams, action_values, scalarise
from tests.liu_helpers import jobset

ONE = MultiClusterConfig(capacities=(10,), hetero=(100,), elastic=())


def _episode() -> MultiClusterModel:
    """A misses its deadline on its own (IH); B waits for A and misses (IC); C waits (IC),
    general. Timeline: A 0–5; B requests 1, runs 5–6 (late: 5 > 4); C requests 2, runs 5–15."""
    js = jobset(
        [
            {"arrival": 0, "request": [10], "standard_time": 5, "deadline": 3},
            {"arrival": 1, "request": [5], "standard_time": 2, "deadline": 4, "hetero": 50},
            {"arrival": 2, "request": [2], "standard_time": 10, "category": "general"},
        ],
        n_clusters=1,
    )
    model = MultiClusterModel.from_jobset(js, ONE)
    while not model.done.all():
        model.step(np.array([1]))
    return model


def test_values_of_a_hand_worked_episode() -> None:
    model = _episode()
    log = model.executions()
    assert log.start.tolist() == [0, 5, 5]
    assert log.finish.tolist() == [5, 6, 15]
    assert log.missed.tolist() == [True, True, False]
    params = ValueParams(beta=0.5, p_m_ih=2, p_m_ic=2, p_psi_ih=3, p_psi_ic=3)
    jv = action_values(model, params)
    assert jv.ih.tolist() == [True, False, False]
    assert jv.ic.tolist() == [False, True, True]
    np.testing.assert_allclose(jv.delay, [0.0, -0.5, 0.0])
    # A: η_c/η_j = 1, m_ih = 2, one undecayed miss; B's late finish (t = 6) is after A left
    # B: η_c/η_j = 2, m_ic = 2; its miss waited: decayed by β^1 (C was dispatched after B);
    #    v3 = -ψ_ic·R = -(1/3)(-0.5) because IC happened and R <= 0
    # C: no own miss; B's waited miss at t = 6 is within C's stay, none dispatched after C
    expected = [[-2.0, 0.0, 0.0], [-2.0, -2.0, 0.5 / 3], [0.0, -2.0, 0.0]]
    np.testing.assert_allclose(jv.v, expected)
    np.testing.assert_allclose(scalarise(jv.v, (1.0, 0.5, 5.0)), [-2.0, -3.0 + 2.5 / 3, -1.0])


def test_without_decay_or_penalties_values_count_misses_and_delay() -> None:
    jv = action_values(_episode(), ValueParams(beta=1.0, p_m_ih=1, p_m_ic=1, p_psi_ih=1,
                                               p_psi_ic=1))  # fmt: skip
    np.testing.assert_allclose(jv.v, [[-1.0, 0.0, 0.0], [-2.0, -2.0, 0.5], [0.0, -1.0, 0.0]])


def test_values_need_finished_episodes_and_valid_parameters() -> None:
    js = jobset([{"arrival": 0, "request": [1]}], n_clusters=1)
    with pytest.raises(ValueError, match="once every episode has finished"):
        action_values(MultiClusterModel.from_jobset(js, ONE))
    with pytest.raises(ValueError, match="parameter 'p_m_ih' of ValueParams must be >= 1"):
        ValueParams(p_m_ih=0.5)
