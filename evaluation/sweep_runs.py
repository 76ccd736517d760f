"""The runs of a training sweep: one per (grid point, seed), their names and completion record.

:func:`parse_seeds` and :func:`parse_grid` read ``--seeds`` and ``--grid``; :func:`plan_sweep`
makes every :class:`SweepRun` (its config checked like any trainer option); a run is complete
when its directory holds the :data:`DONE` record of its config (:func:`is_complete`,
:func:`mark_complete`). :func:`sweep_record` is the sweep's ``config.json``. The sweep itself
runs in :mod:`schedlab.evaluation.train_sweep`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab import io
from schedlab.errors import ParameterError
from schedlab.param_checks import check_params
from schedlab.params import build, flat

DONE = "sweep_run.json"
"""File the sweep writes into a run directory once the run is complete."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepRun:
    """One training run of a sweep."""

    name: str
    """Its directory under the sweep directory, e.g. ``lr0.001_seed3``."""
    point: dict[str, Any]
    """The grid values of the run (config field -> value; empty without a grid)."""
    seed: int
    """Its training seed."""
    config: Any
    """The trainer's config dataclass of the run."""


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> ``[0, 1, 2, 3, 4]``; ``"0,3,7"``, ``"1-3,8"`` likewise (order kept, no
    repeats).

    Raises
    ------
    ParameterError
        A part that is not ``N`` or ``A-B`` with ``0 <= A <= B``, or a seed given twice.
    """
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None or (m[2] is not None and int(m[2]) < int(m[1])):
            msg = f"--seeds: expected N, A-B (A <= B) or a comma-separated list, got {part!r}"
            raise ParameterError(msg)
        seeds += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(seeds)) != len(seeds):
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        msg = f"--seeds: seeds {twice} are given twice in {text!r}"
        raise ParameterError(msg)
    return seeds


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["lr=0.001,0.0003", "hidden=20,40"]`` -> ``{"lr": [0.001, 0.0003], "hidden": [20,
    40]}`` (values read as JSON where they parse, else kept as text).

    Raises
    ------
    ParameterError
        An item that is not ``FIELD=V1,V2,...``, a field given twice, or ``seed`` (use seeds).
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, eq, raw = (s.strip() for s in item.partition("="))
        if not eq or not key or not raw:
            msg = f"--grid: expected FIELD=V1,V2,..., got {item!r}"
            raise ParameterError(msg)
        if key == "seed":
            msg = "--grid: sweep seeds with --seeds, not --grid seed=..."
            raise ParameterError(msg)
        if key in grid:
            msg = f"--grid: {key!r} is given twice"
            raise ParameterError(msg)
        grid[key] = [_value(v.strip()) for v in raw.split(",")]
    return grid


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_name(point: Mapping[str, Any], seed: int) -> str:
    """Directory name of a run: ``lr0.001_hidden40_seed3`` (unsafe characters -> ``-``)."""
    parts = [f"{k}{_label(v)}" for k, v in point.items()] + [f"seed{seed}"]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(parts))


def point_label(point: Mapping[str, Any], default: str) -> str:
    """``"lr=0.001, hidden=40"``; ``default`` for the one point of a sweep without grid."""
    return ", ".join(f"{k}={_label(v)}" for k, v in point.items()) or default


def plan_sweep(
    cls: type,
    base: Mapping[str, Any],
    seeds: Sequence[int],
    grid: Mapping[str, Sequence[Any]],
    *,
    owner: str,
) -> list[SweepRun]:
    """Every (grid point, seed) run: the grid's product in its order, seeds inside.

    Each run's config is ``cls(**base)`` with the point's values and the seed, checked like any
    trainer option (:func:`~schedlab.param_checks.check_params`; ``owner`` names the trainer).

    Raises
    ------
    ParameterError
        No seed, an empty grid axis, or a value the config refuses.
    """
    if not seeds:
        msg = f"{owner}: a sweep needs at least one seed"
        raise ParameterError(msg)
    if any(len(v) == 0 for v in grid.values()):
        msg = f"{owner}: every --grid field needs at least one value, got {dict(grid)}"
        raise ParameterError(msg)
    runs = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        for seed in seeds:
            fields = check_params(
                cls, {**base, **point, "seed": seed}, owner=owner, where="--grid" if point else ""
            )
            try:
                config = build(cls, fields)
            except ValueError as exc:
                raise ParameterError(f"{owner}, {point_label(point, 'base')}: {exc}") from exc
            config_point = {k: flat(config)[k] for k in point}
            runs.append(
                SweepRun(
                    name=run_name(config_point, seed), point=config_point, seed=seed, config=config
                )
            )
    return runs


def _config_json(config: Any) -> Any:
    return json.loads(json.dumps(flat(config), default=str))


def is_complete(run: SweepRun, out: Path) -> bool:
    """Whether ``run``'s directory holds a complete run of its config."""
    path = out / run.name / DONE
    try:
        done = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return bool(done.get("train_config") == _config_json(run.config))


def sweep_record(trainer: str, runs: Sequence[SweepRun], base: Mapping[str, Any]) -> dict[str, Any]:
    """The content of the sweep's ``config.json``."""
    seeds = list(dict.fromkeys(r.seed for r in runs))
    grid: dict[str, list[Any]] = {}
    for r in runs:
        for k, v in r.point.items():
            grid.setdefault(k, [])
            if v not in grid[k]:
                grid[k].append(v)
    return {
        "trainer": trainer,
        "train_config": dict(base),
        "sweep": {"seeds": seeds, "grid": grid, "runs": [r.name for r in runs]},
    }


def mark_complete(run: SweepRun, result: Any, out: Path) -> None:
    """Write the run's :data:`DONE` file: its summary, and the config it completed."""
    done = {
        "run": run.name,
        "seed": run.seed,
        "point": run.point,
        "best_value": float(result.best_value),
        "best_iteration": int(result.best_iteration),
        "seconds": float(result.seconds),
        "train_config": _config_json(run.config),
    }
    io.write_text_atomic(out / run.name / DONE, json.dumps(done, indent=2, default=str))
