"""How fast training runs converge, and how their final values compare, over training seeds.

Reads training run directories of any trainer (``curve.csv``, ``baselines.json`` and the
selection metric of ``config.json``: :mod:`schedlab.policies.training`) grouped into
**variants** (e.g. "CNN" and "MLP", each trained with several seeds) and answers the questions
the papers' learning-curve figures ask, in the metric's own direction (lower slowdown, higher
S_log are better; "iteration" is the trainer's training step):

* the **final** validation value of each run (its best validation, the checkpoint ``best.pt``
  keeps), and its mean with a Student-t confidence interval over seeds;
* **iterations and wall time to 95%**: the first iteration whose validation value achieves 95% of
  the run's total improvement over its initial policy;
* **iterations and wall time to a target**: the first validation at least as good as a level,
  e.g. the SJF baseline's validation value recorded by the run (``baselines.json``); null if
  never.

Wall time is the run's cumulative ``rollout_s + update_s + eval_s`` up to that iteration, plus
the seconds of a pre-training stage before the first iteration (DeepRM_Plus's behaviour cloning,
``imitation.json``). The policy before any update counts as iteration 0 (at the pre-training's
wall time): a cloned policy already at the SJF level reaches the target at iteration 0.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from schedlab.errors import SchedlabError
from schedlab.evaluation.settings import DEFAULT_STATS
from schedlab.policies.training import TIMES, read_baselines, read_selection


def read_curves(
    runs: Mapping[str, Sequence[str | Path]], *, metric: str | None = None
) -> pl.DataFrame:
    """Validation curves of ``runs`` (variant -> run directories), one row per validation.

    Returns
    -------
    polars.DataFrame
        ``variant``, ``run`` (directory name), ``iteration`` (the trainer's step), ``value``
        (``metric``, default the one the run selected its policy on), ``higher_is_better``,
        ``seconds`` (cumulative wall time, pre-training included), ``initial`` (the run's
        validation before training), ``pretrain_s`` (seconds of the cloning stage, 0 without)
        and one ``baseline_<name>`` column per heuristic the run validated (e.g. ``sjf``).
    """
    frames = []
    for variant, dirs in runs.items():
        for d in map(Path, dirs):
            curve_path, base_path = d / "curve.csv", d / "baselines.json"
            if not curve_path.is_file() or not base_path.is_file():
                msg = f"{d}: not a training run (no curve.csv or baselines.json)"
                raise SchedlabError(msg)
            selection = read_selection(d)
            if metric is not None:
                selection = dataclasses.replace(selection, metric=metric)
            pre = d / "imitation.json"
            pre_s = float(json.loads(pre.read_text())["seconds"]) if pre.is_file() else 0.0
            curve = pl.read_csv(curve_path).with_columns(
                seconds=pl.sum_horizontal(TIMES).cum_sum() + pre_s
            )
            base = read_baselines(d, selection)
            frames.append(
                curve.filter(pl.col(selection.metric).is_not_null()).select(
                    pl.lit(variant).alias("variant"),
                    pl.lit(d.name).alias("run"),
                    pl.col(selection.step).alias("iteration"),
                    pl.col(selection.metric).cast(pl.Float64).alias("value"),
                    pl.lit(selection.higher_is_better).alias("higher_is_better"),
                    "seconds",
                    pl.lit(float(base["initial"])).alias("initial"),
                    pl.lit(pre_s).alias("pretrain_s"),
                    *(
                        pl.lit(float(v)).alias(f"baseline_{k}")
                        for k, v in base.items()
                        if k != "initial"
                    ),
                )
            )
    return pl.concat(frames, how="diagonal_relaxed")


def _first(values: np.ndarray, hit: np.ndarray) -> float | None:
    idx = np.flatnonzero(hit)
    return float(values[idx[0]]) if idx.size else None


def per_run(curves: pl.DataFrame, *, target: str | None = "sjf") -> pl.DataFrame:
    """One row per run: ``final`` (best validation after an update), ``iterations``,
    ``it_95``/``s_95`` (to 95% of the total improvement) and ``it_target``/``s_target`` (to the
    ``baseline_<target>`` value); iteration 0 is the initial policy (module docstring)."""
    rows = []
    for (variant, run), part in curves.group_by("variant", "run", maintain_order=True):
        part = part.sort("iteration")
        higher = "higher_is_better" in part.columns and bool(part["higher_is_better"][0])
        sign = -1.0 if higher else 1.0  # on sign · value, lower is better
        initial = float(part.get_column("initial")[0])
        values = part.get_column("value").to_numpy()
        final = float(values.max() if higher else values.min())
        pre_s = float(part.get_column("pretrain_s")[0]) if "pretrain_s" in part.columns else 0.0
        value = sign * np.r_[initial, values]
        it = np.r_[0, part.get_column("iteration").to_numpy()]
        sec = np.r_[pre_s, part.get_column("seconds").to_numpy()]
        reached = value[0] - value >= 0.95 * (value[0] - sign * final) - 1e-12
        row = {
            "variant": variant,
            "run": run,
            "initial": initial,
            "final": final,
            "pretrain_s": pre_s,
            "iterations": int(it.max()),
            "it_95": _first(it, reached),
            "s_95": _first(sec, reached),
        }
        column = f"baseline_{target}"
        if target is not None and column in part.columns:
            level = float(part.get_column(column)[0])
            row |= {
                target: level,
                "it_target": _first(it, value <= sign * level),
                "s_target": _first(sec, value <= sign * level),
            }
        rows.append(row)
    out = pl.DataFrame(rows, infer_schema_length=None)
    steps = [c for c in ("it_95", "s_95", "it_target", "s_target") if c in out.columns]
    return out.with_columns(pl.col(steps).cast(pl.Float64))  # numeric even if never reached


def over_seeds(runs: pl.DataFrame, *, confidence: float = DEFAULT_STATS.confidence) -> pl.DataFrame:
    """Per variant: runs, and mean [Student-t CI over runs] of every numeric column of
    :func:`per_run` (``<col>``, ``<col>_low``, ``<col>_high``; runs that never reached a target
    are left out of that column's mean and counted in ``<col>_n``)."""
    numeric = [c for c, t in runs.schema.items() if t.is_numeric()]
    out = []
    for (variant,), part in runs.group_by("variant", maintain_order=True):
        row: dict[str, Any] = {"variant": variant, "runs": part.height}
        for c in numeric:
            x = part.get_column(c).drop_nulls().to_numpy().astype(float)
            row[f"{c}_n"] = int(x.size)
            row[c] = float(x.mean()) if x.size else None
            if x.size > 1:
                half = (
                    stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
                )
                row[f"{c}_low"], row[f"{c}_high"] = row[c] - half, row[c] + half
            else:
                row[f"{c}_low"] = row[f"{c}_high"] = None
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)
