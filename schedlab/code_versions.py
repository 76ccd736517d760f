"""What identifies the code behind a plug-in or referenced name (caches and experiment runs made
with another version of it are not reused)."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

from schedlab.registry import Registry


def code_version(registry: Registry, name: str) -> str | None:
    """What identifies the code behind ``name`` when it is not schedlab's (None for built-in
    names, which schedlab's version identifies): its origin and the SHA-256 of its module's
    source, so that caches and experiment runs made with another version are not reused."""
    entry = registry.entry(name)
    if entry.origin == "schedlab":
        return None
    module = importlib.import_module(entry.target.partition(":")[0])
    source = getattr(module, "__file__", None)
    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if source else "?"
    return f"{entry.origin} {entry.target} {digest}"
