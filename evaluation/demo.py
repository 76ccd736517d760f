"""The DeepRM study of ``schedlab demo`` (and ``make run``) as an experiment spec.

Every heuristic (the registry's ``heuristic`` tag, in registration order) but the DAG orders
(tag ``dag``: the DeepRM workload has no DAGs, where ``srjf`` is ``sjf``), plus every shipped
DeepRM checkpoint (``policies/checkpoints/<name>/best.pt``) as an optional learned policy, on
the DeepRM workload at offered loads 10%–190%, 100 jobsets per load, reference Tetris*.
:func:`demo_spec` writes the spec as TOML so the run is reproducible with
``schedlab experiment run out/spec.toml -o out/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.registry import policies

DEMO_LOADS = tuple(round(0.1 + 0.2 * i, 1) for i in range(10))
"""10%, 30%, ..., 190%."""


def shipped_checkpoints(slots: int = 10) -> list[str]:
    """Names of the shipped policies trained for the DeepRM study itself, sorted: folders with a
    ``best.pt`` whose ``config.json`` was trained on the ``deeprm`` workload with DeepRM's
    geometry (one machine, ``slots`` visible jobs). Others (Chen's two machines, DeepRM_Plus's
    Poisson workload, Liu's clusters) have their own experiment specs."""
    root = resources.files("schedlab.policies") / "checkpoints"
    if not root.is_dir():
        return []
    out = []
    for d in root.iterdir():
        if not (d.is_dir() and (d / "best.pt").is_file() and (d / "config.json").is_file()):
            continue
        config = json.loads((d / "config.json").read_text())
        geometry = config.get("geometry", {})
        if (
            config.get("train_config", {}).get("workload") == "deeprm"
            and geometry.get("machines", 1) == 1
            and geometry.get("slots") == slots
        ):
            out.append(d.name)
    return sorted(out)


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
    names = shipped_checkpoints(slots) if checkpoints is None else list(checkpoints)
    learned = "".join(
        f'\n    {{ spec = "deeprm:checkpoint={n}", name = {json.dumps(n)}, optional = true }},'
        for n in names
    )
    dag_only = set(policies.names(tag="dag"))
    pols = ", ".join(json.dumps(h) for h in policies.names(tag="heuristic") if h not in dag_only)
    focus = min(loads, key=lambda x: abs(x - 1.3))
    stats = DEFAULT_STATS
    return f"""# The DeepRM study (Mao et al. 2016, §4): written by `schedlab demo`.
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
primary = {json.dumps(stats.primary)}
secondary = {json.dumps(list(stats.secondary))}
bounded_slowdown_threshold = {stats.bounded_slowdown_threshold:g}

[report]
title = "DeepRM workload: heuristics vs load"
focus_load = {float(focus)}
"""
