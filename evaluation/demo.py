"""The DeepRM study of ``schedlab demo`` (and ``make run``) as an experiment spec.

Every heuristic (the registry's ``heuristic`` tag, in registration order), plus every shipped
DeepRM checkpoint (``policies/checkpoints/<name>/best.pt``) as an optional learned policy, on
the DeepRM workload at offered loads 10%–190%, 100 jobsets per load, reference Tetris*.
:func:`demo_spec` writes the spec as TOML so the run is reproducible with
``schedlab experiment run out/spec.toml -o out/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

from schedlab.registry import policies

DEMO_LOADS = tuple(round(0.1 + 0.2 * i, 1) for i in range(10))
"""10%, 30%, ..., 190%."""


def shipped_checkpoints() -> list[str]:
    """Names of the shipped DeepRM checkpoints (folders ``deeprm-*`` holding ``best.pt``; a
    shipped folder is named after its policy, e.g. ``liu-lsfc`` is a ``liu-rl`` network), sorted."""
    root = resources.files("schedlab.policies") / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(
        d.name
        for d in root.iterdir()
        if d.is_dir() and d.name.startswith("deeprm-") and (d / "best.pt").is_file()
    )


def demo_spec(
    *,
    jobsets: int = 100,
    seed: int = 0,
    loads: Sequence[float] = DEMO_LOADS,
    slots: int = 10,
    horizon: int = 20,
    checkpoints: Sequence[str] | None = None,
) -> str:
    """TOML text of the DeepRM study.

    Parameters
    ----------
    jobsets
        Jobsets per load.
    seed
        Seed of the workload and of the bootstrap.
    loads
        Offered loads (fractions of capacity).
    slots, horizon
        Visible job slots M and horizon T (steps).
    checkpoints
        Shipped checkpoint names to add as optional ``deeprm`` policies; default
        :func:`shipped_checkpoints`.
    """
    names = shipped_checkpoints() if checkpoints is None else list(checkpoints)
    learned = "".join(
        f'\n    {{ spec = "deeprm:checkpoint={n}", name = {json.dumps(n)}, optional = true }},'
        for n in names
    )
    pols = ", ".join(json.dumps(h) for h in policies.names(tag="heuristic"))
    focus = min(loads, key=lambda x: abs(x - 1.3))
    return f"""# The DeepRM study (seed 000 §4): written by `schedlab demo`.
# Re-run with: schedlab experiment run spec.toml -o <dir>; report: schedlab report <dir> -o <out>
policies = [
    {pols},{learned}
]

[experiment]
name = "deeprm_study"
description = "DeepRM workload: every heuristic vs offered load"
seed = {int(seed)}
reference = "tetris"

[cluster]
slots = {int(slots)}
horizon = {int(horizon)}

[[workloads]]
name = "deeprm"
generator = "deeprm"
loads = {json.dumps([float(x) for x in loads])}
jobsets = {int(jobsets)}
seed = {int(seed)}

[metrics]
primary = "slowdown"
secondary = ["completion", "bounded_slowdown", "p95_slowdown"]
bounded_slowdown_threshold = 10

[report]
title = "DeepRM workload: heuristics vs load"
focus_load = {float(focus)}
"""
