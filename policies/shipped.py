"""Where a learned policy's checkpoint is: a file, a run directory or a shipped policy's name.

Shipped policies live in ``policies/checkpoints/<name>/`` (installed as package data):
``best.pt``, ``config.json``, the learning curve and a README. Nothing here needs torch, so an
experiment spec naming a checkpoint is resolved (:func:`find_checkpoint`; its file hashed) in a
light install too;
reading the weights needs the ``learned`` extra (:mod:`schedlab.policies.deeprm`).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from schedlab.errors import MissingExtraError, ParameterError, UnknownNameError
from schedlab.registry import parse_policy


def shipped(name: str) -> Path | None:
    """Path of the shipped policy ``name`` (e.g. ``"deeprm-0.7"``: its ``best.pt``), or of
    another checkpoint shipped in its folder (``"deeprm-plus-1.4/imitation.pt"``), or None."""
    folder, _, file = name.partition("/")
    if folder in ("", ".", "..") or file in (".", "..") or "/" in file:
        return None
    root = resources.files("schedlab.policies") / "checkpoints" / folder / (file or "best.pt")
    path = Path(str(root))
    return path if path.is_file() else None


def resolve_checkpoint(checkpoint: str | os.PathLike[str]) -> Path:
    """A file path, a run directory (its ``best.pt``) or a shipped policy name."""
    p = Path(checkpoint)
    if p.is_dir():
        p = p / "best.pt"
    if not p.exists() and (found := shipped(str(checkpoint))) is not None:
        return found
    return p


def checkpoint_path(spec: str) -> str | None:
    """The checkpoint a policy spec names: its ``checkpoint`` parameter, by position
    (``name:PATH,...``) or by name, as :func:`~schedlab.registry.parse_policy` reads it; None
    for a spec without one (heuristics), of an unregistered policy or with malformed options
    (their errors are reported where the policy is made), or whose options cannot be read
    without an extra that is not installed."""
    try:
        _, kwargs = parse_policy(spec)
    except (UnknownNameError, ParameterError, MissingExtraError):
        return None
    ckpt = kwargs.get("checkpoint")
    return None if ckpt is None else str(ckpt)


def find_checkpoint(ckpt: str, base_dir: Path) -> str | None:
    """Where a policy's checkpoint is: a path (absolute, or relative to the spec file's
    folder; a file or a run directory), else a shipped name (``policies/checkpoints/<name>/``,
    or a file in it, ``<name>/imitation.pt``; returned unchanged); None if neither exists."""
    p = Path(ckpt) if Path(ckpt).is_absolute() else base_dir / ckpt
    if p.exists():
        return str(p.resolve())
    return ckpt if shipped(ckpt) is not None else None
