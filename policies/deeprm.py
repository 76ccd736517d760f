"""A trained DeepRM policy (Mao et al. 2016, §3) behind the common Policy protocol, and its
checkpoints.

A checkpoint is a ``torch.save`` of plain data, read back with ``torch.load(weights_only=True)``:
``{"format": "schedlab.deeprm", "version": 1, "spec": JSON text, "state_dict": {...}}``. The spec
holds what is needed to rebuild the network and check that it fits the cluster it is asked to
schedule: network name and size, observation geometry, action masking, objective (and the
training config, for the record). Training also writes the spec as ``config.json`` beside it.

Shipped policies live in ``policies/checkpoints/<name>/`` (``deeprm:deeprm-0.7`` names one;
:mod:`schedlab.policies.shipped` finds them without torch).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch

from schedlab.errors import SchedlabError
from schedlab.policies.base import ParamsMixin, QueueNamed, Sampling, policy_fields
from schedlab.policies.checkpointed import Checkpointed
from schedlab.policies.networks import Logits, make_network
from schedlab.policies.shipped import resolve_checkpoint as resolve_checkpoint  # re-exported
from schedlab.simulator.cluster.batched import AgentQueue
from schedlab.simulator.views.deeprm_image import DeepRMImage, ObsGeometry, SparseObs

FORMAT, VERSION = "schedlab.deeprm", 1
Module = TypeVar("Module", bound=torch.nn.Module)


class CheckpointError(SchedlabError, ValueError):
    """A checkpoint is missing, unreadable, or does not fit the network or cluster."""


def save_checkpoint(
    path: str | os.PathLike[str], net: torch.nn.Module, spec: dict[str, Any], *, fmt: str = FORMAT
) -> None:
    """Write ``net``'s state_dict and ``spec`` (JSON-native) to ``path`` atomically, tagged
    with the format ``fmt`` of the policy family."""
    from schedlab.io import write_bytes_atomic

    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    payload = {"format": fmt, "version": VERSION, "spec": json.dumps(spec), "state_dict": state}
    buffer = io.BytesIO()  # torch's own writer reports a full disk as a short write, no cause
    torch.save(payload, buffer)
    write_bytes_atomic(path, buffer.getvalue())


def read_checkpoint(
    path: str | os.PathLike[str], *, fmt: str = FORMAT
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(spec, state_dict)`` of a checkpoint of format ``fmt``; :class:`CheckpointError` says
    what is wrong."""
    p = Path(path)
    if not p.is_file():
        msg = f"{p}: no such checkpoint file"
        raise CheckpointError(msg)
    try:
        payload = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a corrupt or foreign file
        msg = f"{p}: not a readable checkpoint ({type(exc).__name__}: {str(exc)[:200]})"
        raise CheckpointError(msg) from exc
    if not isinstance(payload, dict) or payload.get("format") != fmt:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        msg = f"{p}: expected a {fmt} checkpoint, found format {found!r}"
        raise CheckpointError(msg)
    if payload.get("version") != VERSION:
        msg = f"{p}: checkpoint version {payload.get('version')!r}, this schedlab reads {VERSION}"
        raise CheckpointError(msg)
    try:
        spec = json.loads(payload["spec"])
        state = dict(payload["state_dict"])
    except (KeyError, TypeError, json.JSONDecodeError, RecursionError) as exc:
        msg = f"{p}: checkpoint spec or state_dict is malformed ({type(exc).__name__})"
        raise CheckpointError(msg) from exc
    return spec, state


def geometry_from_spec(spec: dict[str, Any]) -> ObsGeometry:
    """The observation geometry a checkpoint was trained on."""
    return ObsGeometry.from_json(spec["geometry"])


def build_network(
    path: str | os.PathLike[str], build: Callable[[], Module], state: dict[str, Any]
) -> Module:
    """The network ``build()`` makes (from the spec of the checkpoint ``path``) with the
    checkpoint's weights ``state``, in eval mode; :class:`CheckpointError` if the spec builds
    nothing or the weights do not fit."""
    try:
        net = build()
        net.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        msg = f"{path}: the weights do not fit the network its spec describes ({why})"[:400]
        raise CheckpointError(msg) from exc
    net.eval()
    return net


def load_network(path: str | os.PathLike[str]) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The network of a checkpoint, weights loaded, in eval mode; and its spec."""
    spec, state = read_checkpoint(path)
    try:
        geometry = geometry_from_spec(spec)
        net = make_network(spec["network"], geometry, **spec.get("network_kwargs", {}))
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"{path}: checkpoint spec cannot build a network ({type(exc).__name__}: {exc})"
        raise CheckpointError(msg) from exc
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    if expected != found:
        diff = sorted(set(expected.items()) ^ set(found.items()))[:4]
        msg = (
            f"{path}: weights do not match the network its spec describes "
            f"({spec.get('network')}, geometry {geometry.to_json()}); differing "
            f"(name, shape): {diff}"
        )
        raise CheckpointError(msg)
    net.load_state_dict(state)
    net.eval()
    return net, spec


@policy_fields
class DeepRMPolicy(Checkpointed[Logits], Sampling, QueueNamed, ParamsMixin):
    """A trained policy network acting on the DeepRM image (or Chen et al.'s reshaped one).

    Attributes
    ----------
    checkpoint : str
        A ``.pt`` file written by ``schedlab train``, a run directory, or a shipped name.
    greedy : bool
        Take the most probable action; by default sample from the policy, which is what
        REINFORCE optimises and what the reference code evaluates (an argmax policy can starve
        jobs whose allocation is never the single most probable action).
    seed : int
        Seed of the sampling: ``default_rng([seed, jobset])`` when one jobset is run at a time;
        on a batch of jobsets one stream ``default_rng(seed)`` draws one uniform per active
        jobset and decision step, in jobset order (same JobSet and seed, same schedule).
    queue : ``"greedy"``, ``"strict"`` or ``"easy"``
        Queue discipline the network chooses under (:mod:`schedlab.simulator.cluster.batched`):
        by default any allocation within the horizon; ``strict`` only the earliest-arrived
        waiting job, now; ``easy`` the jobs EASY backfilling would start now. Named as
        ``deeprm+easy`` (``deeprm+easy:deeprm-0.7`` in a spec). Batched engine only.
    """

    key: ClassVar[str] = "deeprm"
    models: ClassVar[frozenset[str]] = frozenset({"cluster"})
    transient: ClassVar[tuple[str, ...]] = ("_loaded", "_table")

    checkpoint: str
    greedy: bool = False
    seed: int = 0
    queue: AgentQueue = "greedy"

    def __post_init__(self) -> None:
        self.reset()  # the sampling stream of ``seed``
        self._loaded: tuple[Logits, dict[str, Any]] | None = None
        self._table: torch.Tensor | None = None

    def _load(self, path: Path) -> tuple[Logits, dict[str, Any]]:
        net, spec = load_network(path)
        logits_fn = Logits(net, geometry_from_spec(spec))
        with torch.no_grad():
            self._table = logits_fn.table()  # the weights never change here
        return logits_fn, spec

    @property
    def geometry(self) -> ObsGeometry:
        """The image geometry the network was trained on (it acts only on that cluster shape)."""
        return geometry_from_spec(self.spec)

    @property
    def view(self) -> DeepRMImage:
        """The image the network was trained on (its layout and backlog shown)."""
        g = self.geometry
        return DeepRMImage(layout=g.layout, backlog_view=g.backlog_view)

    def act_batch(self, obs: SparseObs, *, mask: np.ndarray) -> np.ndarray:
        """Actions (int64, shape ``(N,)``; 0 = void, ``1 + i·M + q`` = slot ``q`` on machine
        ``i``) for a batch of images whose valid actions are ``mask``."""
        logits_fn, spec = self._model()
        if obs.geometry != logits_fn.geometry:
            msg = (
                f"policy {self.checkpoint} was trained on observations {logits_fn.geometry} but "
                f"this cluster gives {obs.geometry}; use the same --slots, --horizon, machines "
                "and capacity"
            )
            raise CheckpointError(msg)
        with torch.no_grad():
            logits = logits_fn(obs, self._table).double().numpy()
        if spec.get("mask_invalid", True):
            logits = np.where(mask, logits, -np.inf)
        if self.greedy:
            best: np.ndarray = logits.argmax(axis=1)
            return best
        return sample_actions(logits, self._rng)


class DeepRMPlusPolicy(DeepRMPolicy):
    """A DeepRM_Plus checkpoint (Guo et al. 2021, the CNN of Table I, ``schedlab train
    deeprm-plus``); the same policy as :class:`DeepRMPolicy`, under the name users look for. Any
    checkpoint of ``schedlab train`` loads here (the network is read from the checkpoint)."""

    key: ClassVar[str] = "deeprm-plus"


def sample_actions(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row from ``softmax(logits)`` (-inf = excluded), by inverse CDF; int64."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    c = np.cumsum(p, axis=1)
    n: int = logits.shape[0]
    u = rng.random(n)[:, None] * c[:, -1:]
    actions: np.ndarray = np.minimum((c < u).sum(axis=1), logits.shape[1] - 1)
    return actions
