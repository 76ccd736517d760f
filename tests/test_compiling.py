"""Every compiled function of schedlab is announced by a name a user reads, never by its module
path, when it compiles."""

from __future__ import annotations

import re
from pathlib import Path

from schedlab.compiling import KERNELS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schedlab", "traces", "loaders", "simulator", "policies", "evaluation", "reports")


def compiled_modules() -> list[str]:
    """Modules (dotted, under ``schedlab``) that define a numba-compiled function."""
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if re.search(r"@numba\.(njit|jit)\b", path.read_text()):
                parts = path.relative_to(ROOT).with_suffix("").parts
                found.append(".".join(parts if parts[0] == "schedlab" else ("schedlab", *parts)))
    return sorted(found)


def test_every_compiled_module_has_a_name_for_users() -> None:
    modules = compiled_modules()
    assert "schedlab.simulator.cluster.easy" in modules  # the scan finds them
    unnamed = [m for m in modules if not any(m.startswith(prefix) for prefix in KERNELS)]
    assert unnamed == []
