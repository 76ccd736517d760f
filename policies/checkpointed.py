"""What a policy acting with a trained network shares: its checkpoint (a file, a run directory
or a shipped name, :func:`~schedlab.policies.shipped.resolve_checkpoint`), read on first use and
dropped when the policy is pickled, and the checkpoint's spec. Nothing here needs torch; each
policy reads its own format (:meth:`Checkpointed._load`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Generic, TypeVar

from schedlab.policies.base import Reloaded
from schedlab.policies.shipped import resolve_checkpoint

Net = TypeVar("Net")
"""What a checkpoint is read into: the network, or a callable wrapping it."""


class Checkpointed(Reloaded, Generic[Net]):
    """A policy whose network is read from ``checkpoint`` on first use (:meth:`_model`)."""

    checkpoint: str
    _loaded: tuple[Net, dict[str, Any]] | None

    def _load(self, path: Path) -> tuple[Net, dict[str, Any]]:
        """The network of the checkpoint file ``path`` and its spec."""
        raise NotImplementedError

    def _model(self) -> tuple[Net, dict[str, Any]]:
        if self._loaded is None:
            self._loaded = self._load(resolve_checkpoint(self.checkpoint))
        return self._loaded

    @property
    def spec(self) -> dict[str, Any]:
        """The checkpoint's spec (the network, what it was trained on, the training config)."""
        return self._model()[1]
