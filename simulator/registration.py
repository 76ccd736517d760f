"""Gymnasium ids of schedlab's environments, registered without importing Gymnasium early.

``import schedlab`` calls :func:`install`: if Gymnasium is already imported the ids are
registered at once, otherwise when Gymnasium is first imported (a one-shot import hook), so
``gymnasium.make("schedlab/DeepRM-v0")`` works whichever of the two a program imports first, and
``import schedlab`` stays light.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

from schedlab.traces import KTH_TRAIN_END

ENV_IDS: dict[str, dict[str, Any]] = {
    "schedlab/DeepRM-v0": {},
    "schedlab/MultiMachine-v0": {"machines": 2, "slots": 5, "layout": "reshaped"},
    "schedlab/Pick-v0": {"window": 256, "end": KTH_TRAIN_END},  # held-out days stay unseen
}
"""Registered ids and their default arguments (:class:`~schedlab.simulator.env.ClusterEnv`
unless :data:`ENTRY_POINTS` names another class)."""
ENTRY_POINTS: dict[str, str] = {"schedlab/Pick-v0": "schedlab.simulator.pick.env:PickEnv"}
"""Ids whose environment is not :class:`~schedlab.simulator.env.ClusterEnv`: the pick
environment (:mod:`schedlab.simulator.pick.env`, windows of the bundled KTH-SP2 log)."""
CLUSTER_ENV = "schedlab.simulator.env:ClusterEnv"


def register_envs() -> None:
    """Register :data:`ENV_IDS` with Gymnasium (idempotent)."""
    import gymnasium as gym

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            entry = ENTRY_POINTS.get(env_id, CLUSTER_ENV)
            gym.register(id=env_id, entry_point=entry, kwargs=kwargs)


class _RegisterAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``gymnasium`` through the normal finders and registers the ids once it is loaded."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        register_envs()


def install() -> None:
    """Register now if Gymnasium is loaded, else when it is first imported."""
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
