"""The config of Liu et al.'s value learning (:mod:`schedlab.policies.liu_value`): every setting
of a training run, written as its ``config.json``.

The paper leaves unsaid ε and its schedule, the MAF share of perturbations, the updates per
episode, the LSTM size, β and the ``P`` of Eq. 1 and the objective weights; the defaults here are
documented in :mod:`schedlab.policies.liu_value`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.params import Count, NonNegative, Share, composed
from schedlab.policies.training import RunConfig
from schedlab.simulator.multicluster.values import ValueParams


@dataclass(frozen=True, kw_only=True, slots=True)
class LiuTrainConfig(RunConfig):
    """Everything that determines a training run (written as ``config.json``; validation,
    checkpoints, seed and threads as :class:`~schedlab.policies.training.RunConfig`, validated
    and checkpointed every 50 episodes)."""

    label: str = "rl-lsfc"
    """Name of the trained policy in results."""
    network: Literal["lsfc", "fc"] = "lsfc"
    """RL-LSFC's LSTM + shared FC + three heads, or RL-FC's fully connected net."""
    weights: tuple[float, float, float] = (1.0, 0.5, 5.0)
    """Objective weights ``w`` of ``Σ w_k v_k`` (RL-LSFCb: ``(1, 0.5, 2.5)``)."""
    lstm: Count = 32
    """LSTM hidden units (RL-LSFC)."""
    workload_params: dict[str, Any] = field(default_factory=dict)
    """Parameters of the ``liu-multicluster`` generator (e.g. ``{"b": 33}``)."""
    episodes: Count = 1500
    """Training episodes (Liu's E)."""
    envs: Count = 4
    """Episodes simulated together per round."""
    buffer: Count = 50_000
    """Knowledge buffer capacity, decisions (K)."""
    batch: Count = 2_000
    """Decisions per update (B)."""
    updates_per_episode: Count = 2
    """Adam steps per training episode."""
    lr: NonNegative = 1e-4
    """Adam learning rate until ``lr_switch`` episodes."""
    lr_late: NonNegative = 1e-5
    """Adam learning rate afterwards."""
    lr_switch: Count = 1000
    """Episode at which the learning rate drops."""
    epsilon: Share = 0.5
    """Initial probability of perturbing an action."""
    epsilon_end: Share = 0.05
    """Final probability of perturbing an action."""
    epsilon_decay: Count = 1000
    """Episodes over which ε falls linearly to ``epsilon_end``."""
    guide: Share = 0.5
    """Probability that a perturbation is MAF's action (else uniformly random)."""
    values: ValueParams = composed(ValueParams)
    """β and the ``P`` of Eq. 1: the fields of
    :class:`~schedlab.simulator.multicluster.values.ValueParams` (``beta``, ``p_m_ih``,
    ``p_m_ic``, ``p_psi_ih``, ``p_psi_ic``) are this config's own settings."""
    eval_episodes: Count = 50
    """Held-out validation episodes."""
    eval_every: Count = 50
    checkpoint_every: Count = 50
    """Write ``last.pt`` and ``buffer.pt`` (for ``resume``) every this many episodes."""

    def epsilon_at(self, episode: int) -> float:
        """ε for the round starting at ``episode`` (0-based)."""
        frac = min(1.0, episode / max(self.epsilon_decay, 1))
        return self.epsilon + (self.epsilon_end - self.epsilon) * frac

    def lr_at(self, episode: int) -> float:
        """Learning rate after ``episode`` episodes."""
        return self.lr if episode < self.lr_switch else self.lr_late

    def generator(self) -> LiuMultiClusterGenerator:
        """The workload generator."""
        from schedlab.registry import generators

        gen: LiuMultiClusterGenerator = generators.create(
            "liu-multicluster", self.workload_params, where="workload_params (-p)"
        )
        return gen
