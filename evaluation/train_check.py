"""``check_trainer``: does a registered trainer keep the trainer contract?

Like scikit-learn's ``check_estimator``, one call runs a trainer of
:data:`schedlab.registry.trainers` the ways schedlab uses it, at its smallest size
(:attr:`~schedlab.policies.training.Trainer.small`), and checks what the contract
(:mod:`schedlab.policies.training`) promises:

1. **alone**: a run directory with ``config.json`` (its selection), ``curve.csv``,
   ``baselines.json`` (``initial`` among them), ``best.pt``, ``final.pt`` and the resume state; a
   :class:`~schedlab.policies.training.TrainResult` whose best value is the best of its curve in
   the metric's direction;
2. **resumed once**: one more training step from the saved state, the earlier curve kept;
3. **as a sweep of 2 seeds** (:func:`~schedlab.evaluation.train_sweep.run_sweep`, on
   ``backend``), then resumed: both runs complete, then both skipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import SchedlabError
from schedlab.evaluation import train_sweep as ts
from schedlab.evaluation.sweep_runs import plan_sweep
from schedlab.params import build, flat, updated
from schedlab.policies.training import STATE, TrainResult, read_selection

RUN_FILES = ("config.json", "curve.csv", "baselines.json", "best.pt", "final.pt", STATE)
"""What every run directory holds once trained."""


class TrainerCheckError(SchedlabError, AssertionError):
    """A trainer breaks the trainer contract (the message says how)."""


def _require(ok: bool, name: str, what: str) -> None:
    if not ok:
        raise TrainerCheckError(f"trainer {name!r}: {what}")


def check_run(name: str, result: Any, out: Path, budget: int) -> None:
    """The files and the result of one training run of ``budget`` steps in ``out``."""
    _require(
        isinstance(result, TrainResult),
        name,
        f"train returned {type(result).__name__}, not a TrainResult",
    )
    missing = [f for f in RUN_FILES if not (out / f).is_file()]
    _require(not missing, name, f"{out} lacks {missing}")
    sel = result.selection
    _require(read_selection(out) == sel, name, "config.json's selection is not the result's")
    curve = result.curve
    _require(
        {sel.metric, sel.step} <= set(curve.columns),
        name,
        f"the curve has no {sel.metric!r} or {sel.step!r} column",
    )
    _require(
        curve[sel.step].max() == budget,
        name,
        f"the curve ends at {sel.step} {curve[sel.step].max()}, not {budget}",
    )
    values = curve[sel.metric].drop_nulls()
    best = values.max() if sel.higher_is_better else values.min()
    _require(
        values.len() > 0 and math.isclose(result.best_value, best),
        name,
        f"best_value {result.best_value} is not the curve's best {best}",
    )
    _require("initial" in result.baselines, name, "baselines lack 'initial'")


def check_trainer(name: str, out: str | Path, *, backend: str = "local") -> None:
    """Train ``name`` alone, resume it once, and train it as a resumed 2-seed sweep on
    ``backend``, all in ``out`` (see the module docstring).

    Raises
    ------
    TrainerCheckError
        Naming the first promise the trainer breaks.
    """
    from schedlab.registry import trainers

    trainer, out = trainers.load(name), Path(out)
    config = build(trainer.config, dict(trainer.small))
    steps = int(flat(config)[trainer.budget])
    single = out / "single"
    check_run(name, trainer.train(config, single, progress=False), single, steps)
    before = _metric_values(single)
    more = updated(config, **{trainer.budget: steps + 1})
    resumed = trainer.train(more, single, resume=True, progress=False)
    check_run(name, resumed, single, steps + 1)
    after = resumed.curve.head(len(before))[resumed.selection.metric].to_list()
    _require(after == before, name, "resuming changed the curve of the steps already trained")

    runs = plan_sweep(trainer.config, flat(config), [0, 1], {}, owner=f"trainer {name!r}")
    kw: dict[str, Any] = {
        "base": flat(config),
        "backend": backend,
        "progress": False,
        "workers": 1 if backend == "local" else None,
    }
    outcome = ts.run_sweep(name, runs, out / "sweep", **kw)
    _require(not outcome.failures, name, f"sweep runs failed: {outcome.failures}")
    _require(
        outcome.tables.summary["seeds"].to_list() == [2],
        name,
        "the sweep's summary does not count 2 seeds",
    )
    missing = [
        f"{r.name}/{f}"
        for r in runs
        for f in RUN_FILES
        if not (out / "sweep" / r.name / f).is_file()
    ]
    _require(not missing, name, f"the sweep's run directories lack {missing}")
    again = ts.run_sweep(name, runs, out / "sweep", resume=True, **kw)
    _require(again.skipped == 2 and again.ran == 0, name, "a resumed complete sweep trained again")


def _metric_values(run_dir: Path) -> list[float | None]:
    """The selection metric of ``run_dir``'s curve, step by step."""
    return pl.read_csv(run_dir / "curve.csv")[read_selection(run_dir).metric].to_list()
