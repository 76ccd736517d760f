"""The trainer contract, and the run directory every trainer writes.

A **trainer** (:class:`Trainer`, registered in :data:`schedlab.registry.trainers`) is a config
dataclass and a function ``train(config, out_dir, *, resume, progress) -> TrainResult``. The
result names the curve column its best policy was selected on and whether higher is better
(:class:`Selection`), so sweeps, convergence statistics and reports read every trainer's runs
the same way. A run directory holds::

    config.json     the run's spec: what the checkpoints are for, "train_config" (the config,
                    flat: see :func:`schedlab.params.flat`) and "selection"
    curve.csv       one row per training step (iteration or episode): the selection metric
                    (null where not validated), step times ``rollout_s``/``update_s``/``eval_s``
    baselines.json  policy -> its validation value (or -> {metric: value}); "initial" is the
                    policy before training
    best.pt         the policy of the best validation value; final.pt: after the last step
    last.pt         the training state ``--resume`` continues from (written every
                    ``checkpoint_every`` steps)

This module writes and reads those files (:func:`open_run`, :func:`check_resume`,
:func:`start`, :func:`write_curve`, :func:`save_state`, :func:`read_selection`,
:func:`read_baselines`), and keeps a run's progress (:class:`Progress`: the best validation so
far, the curve rows, the result).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import OutputError, SchedlabError
from schedlab.io import atomic_path, write_bytes_atomic, write_text_atomic
from schedlab.param_checks import check_params
from schedlab.params import Count, flat

STATE = "last.pt"
"""The training state a run continues from (``resume=True``)."""
TIMES = ("rollout_s", "update_s", "eval_s")
"""Curve columns of a step's wall time, s (their sum is the step's training time)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Selection:
    """What a trainer selects its best policy on."""

    metric: str
    """The curve column of the validation value, e.g. ``val_slowdown``."""
    higher_is_better: bool = False
    """Direction of the metric (slowdown: lower; Liu's S_log: higher)."""
    step: str = "iteration"
    """The curve column counting training progress (``iteration``, ``episode``)."""

    @property
    def worst(self) -> float:
        """A value every real one beats."""
        return -math.inf if self.higher_is_better else math.inf

    def better(self, value: float, than: float) -> bool:
        """True if ``value`` is strictly better than ``than``."""
        return value > than if self.higher_is_better else value < than

    def to_json(self) -> dict[str, Any]:
        """The ``selection`` entry of ``config.json``."""
        return {"metric": self.metric, "higher_is_better": self.higher_is_better, "step": self.step}


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainResult:
    """What every trainer's ``train`` returns (picklable: a sweep's worker sends it back)."""

    out_dir: Path
    """The run directory."""
    curve: pl.DataFrame
    """One row per training step (module docstring)."""
    selection: Selection
    """The metric the best policy was selected on, and its direction."""
    best_iteration: int
    """Training step (``selection.step``) of the best validation value."""
    best_value: float
    """That best validation value."""
    baselines: dict[str, float]
    """The selection metric of the baseline policies and of ``initial`` (before training), on
    the same validation jobsets."""
    seconds: float
    """Wall time of this call, s."""
    resumed: int = 0
    """Training steps done before this call (``--resume``; 0: a fresh run)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Trainer-specific data for its report (REINFORCE: ``withholding``)."""

    def summary(self) -> str:
        """One line: the best validation value, when, and the baselines'."""
        base = ", ".join(f"{k} {v:.3f}" for k, v in self.baselines.items())
        return (
            f"best validation {self.selection.metric.removeprefix('val_')} "
            f"{self.best_value:.3f} at {self.selection.step} {self.best_iteration} ({base})"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class RunConfig:
    """What every trainer's config holds (its base class; a trainer may change the defaults):
    the seed and threads :func:`open_run` sets up, how often a run validates and checkpoints."""

    eval_every: Count = 1
    """Validate every this many training steps (and after the first and the last)."""
    checkpoint_every: Count = 10
    """Write ``last.pt`` (for ``--resume``) every this many training steps."""
    seed: int = 0
    """Seed of the network's initialisation, the workloads and the sampling."""
    threads: Count = 1
    """torch intra-op threads (1 is fastest on a small shared machine)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Trainer:
    """A registered trainer: its config class and train function, and what checks need."""

    config: type
    """The config dataclass (CLI options are its fields, :func:`schedlab.params.parameters`)."""
    train: Callable[..., TrainResult]
    """``train(config, out_dir, *, resume=False, progress=True) -> TrainResult``."""
    budget: str
    """The config field counting training steps (``iterations``, ``episodes``); the only field
    that may change when a run is resumed."""
    small: Mapping[str, Any] = field(default_factory=dict)
    """Config values of the smallest meaningful run (:func:`~schedlab.evaluation.train_check.
    check_trainer`, tests): a few jobsets, one or two steps."""
    report: Callable[..., Any] | None = None
    """A plug-in trainer's learning report, ``report(result, config_dict) -> Path`` (None: the
    learning-curve report). Built-in trainers name theirs in the registry instead, since
    reports sit above policies (:attr:`schedlab.entries.Entry.report`)."""


# -- the run directory ------------------------------------------------------------------------
def open_run(
    out_dir: str | Path, config: RunConfig, *, resume: bool, budget: str
) -> tuple[Path, dict[str, Any] | None]:
    """The run directory ``out_dir`` (created) and the state to continue from
    (:func:`check_resume`); the process set up for training: torch seeded with
    ``config.seed``, ``config.threads`` intra-op threads
    (:func:`~schedlab.policies.runtime.training_process`). A config field outside its declared
    bounds (``iterations`` 0) raises ParameterError before anything is made."""
    import torch

    from schedlab.policies.runtime import training_process

    check_params(type(config), flat(config), owner=f"the {type(config).__name__}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = check_resume(out, config, resume=resume, budget=budget)
    torch.manual_seed(config.seed)
    training_process(config.threads)
    return out, saved


def config_changes(saved: Mapping[str, Any], config: Any, *, budget: str) -> list[str]:
    """Fields of ``config`` (flat, except ``budget``) that differ from the JSON ``saved``
    config; a field the saved config lacks (added later) counts at its default, and a saved
    setting the config no longer has (renamed or removed since) is a difference."""
    mine = json.loads(json.dumps(flat(config)))
    defaults = json.loads(json.dumps(flat(type(config)())))
    changed = {k for k in mine if k != budget and saved.get(k, defaults[k]) != mine[k]}
    return sorted(changed | (saved.keys() - mine.keys()))


def check_resume(out: Path, config: Any, *, resume: bool, budget: str) -> dict[str, Any] | None:
    """The training state in ``out`` to continue from, or None to start afresh.

    Without ``resume``, a directory holding a run is refused. With it, there must be a
    :data:`STATE`, and the config saved in ``out/config.json`` (``train_config``) must equal
    ``config`` except for ``budget``.

    Raises
    ------
    SchedlabError
        A run there without ``resume``; nothing to resume; a different config.
    CheckpointError
        An unreadable state.
    """
    import torch

    from schedlab.policies.deeprm import CheckpointError

    state = out / STATE
    if not resume:
        if state.exists():
            msg = f"{out} already holds a training run; pass --resume or choose another directory"
            raise SchedlabError(msg)
        return None
    saved = read_spec(out)
    if not state.exists():
        msg = (
            f"--resume: {out} holds no training state to continue (no {STATE}); "
            "drop --resume to start a run there"
        )
        raise SchedlabError(msg)
    diff = config_changes(saved["train_config"], config, budget=budget)
    if diff:
        msg = f"--resume with a different config ({diff}); use the saved one or a new -o"
        raise SchedlabError(msg)
    try:
        loaded: dict[str, Any] = torch.load(state, map_location="cpu", weights_only=True)
        return loaded
    except Exception as exc:
        msg = f"{state}: not a readable training state ({type(exc).__name__}: {exc})"
        raise CheckpointError(msg) from exc


def read_spec(out: Path) -> dict[str, Any]:
    """``out/config.json`` of a run to resume.

    Raises
    ------
    OutputError
        There is none.
    """
    path = out / "config.json"
    if not path.is_file():
        msg = f"--resume: {out} holds no training run (no config.json); drop --resume to start one"
        raise OutputError(msg)
    spec: dict[str, Any] = json.loads(path.read_text())
    return spec


def write_spec(out: Path, spec: Mapping[str, Any], selection: Selection) -> dict[str, Any]:
    """Write ``config.json`` (``spec`` with its ``selection``); returns what was written."""
    spec = {**spec, "selection": selection.to_json()}
    write_text_atomic(out / "config.json", json.dumps(spec, indent=2, default=str))
    return spec


def write_curve(
    out: Path, rows: list[dict[str, Any]], *, nullable: Iterable[str], parquet: bool = False
) -> pl.DataFrame:
    """Write ``curve.csv`` (and ``curve.parquet``) of ``rows``; ``nullable`` columns are float
    even when every value so far is null."""
    schema = dict.fromkeys(nullable, pl.Float64)
    curve = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    with atomic_path(out / "curve.csv") as tmp:
        curve.write_csv(tmp)
    if parquet:
        with atomic_path(out / "curve.parquet") as tmp:
            curve.write_parquet(tmp)
    return curve


@dataclass(kw_only=True, slots=True)
class Progress:
    """Where a run stands: steps done, its best validation so far, its curve and baselines."""

    step: int
    """Training steps done."""
    best: float
    """Best validation value so far (:attr:`Selection.worst` before any)."""
    best_step: int
    """Step of ``best`` (0: none yet)."""
    rows: list[dict[str, Any]]
    """Curve rows so far."""
    baselines: dict[str, Any]
    """Content of ``baselines.json``."""
    resumed: int = 0
    """Steps done before this call (0: a fresh run)."""

    def offer(self, value: float, step: int, selection: Selection) -> bool:
        """Keep ``value``, the validation of ``step``, as the best if ``selection`` finds it
        better than :attr:`best`; True if it did (the caller writes ``best.pt``)."""
        if not selection.better(value, self.best):
            return False
        self.best, self.best_step = value, step
        return True

    def record(self, row: dict[str, Any], step: int, times: tuple[float, float, float]) -> None:
        """Append the curve row of training step ``step`` with its step times (:data:`TIMES`,
        s) from ``times``, the ``time.perf_counter()`` readings at the step's start and after
        its rollout and its update (now: after its validation)."""
        t0, t1, t2 = times
        row |= dict(zip(TIMES, (t1 - t0, t2 - t1, time.perf_counter() - t2), strict=True))
        self.rows.append(row)
        self.step = step

    def result(
        self,
        out: Path,
        curve: pl.DataFrame,
        selection: Selection,
        started: float,
        *,
        baselines: dict[str, float] | None = None,
        details: dict[str, Any] | None = None,
    ) -> TrainResult:
        """The run's :class:`TrainResult`: its best validation, its ``baselines`` (default:
        :attr:`baselines`) and the seconds since ``started`` (a ``time.perf_counter()``
        reading)."""
        return TrainResult(
            out_dir=out,
            curve=curve,
            selection=selection,
            best_iteration=self.best_step,
            best_value=self.best,
            baselines=self.baselines if baselines is None else baselines,
            seconds=time.perf_counter() - started,
            resumed=self.resumed,
            details=details or {},
        )


def start(
    out: Path,
    saved: Mapping[str, Any] | None,
    selection: Selection,
    *,
    net: Any,
    optimizer: Any,
    rng: Any,
    baselines: Callable[[], dict[str, Any]],
) -> Progress:
    """A fresh run (``saved`` None: ``baselines()`` computed and written to ``baselines.json``)
    or one continued from the state ``saved`` by :func:`save_state` (network, optimizer and
    ``rng`` restored in place; curve rows and baselines read back)."""
    if saved is None:
        base = baselines()
        write_text_atomic(out / "baselines.json", json.dumps(base, indent=2))
        return Progress(step=0, best=selection.worst, best_step=0, rows=[], baselines=base)
    net.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    rng.bit_generator.state = json.loads(saved["rng"])
    step = int(saved["step"])
    return Progress(
        step=step,
        best=float(saved["best"]),
        best_step=int(saved["best_step"]),
        rows=pl.read_csv(out / "curve.csv").filter(pl.col(selection.step) <= step).to_dicts(),
        baselines=json.loads((out / "baselines.json").read_text()),
        resumed=step,
    )


def save_state(out: Path, progress: Progress, *, net: Any, optimizer: Any, rng: Any) -> None:
    """Write :data:`STATE` (atomically): what :func:`start` continues from."""
    state = {
        "step": progress.step,
        "model": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": json.dumps(rng.bit_generator.state),
        "best": progress.best,
        "best_step": progress.best_step,
    }
    save_torch(out / STATE, state)


def save_torch(path: Path, obj: Any) -> None:
    """``torch.save(obj, path)``, atomically; a full disk is one line naming ``path``."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_bytes_atomic(path, buffer.getvalue())


def progress(enabled: bool, start: int, total: int, *, desc: str, unit: str) -> Any:
    """A tqdm bar over training steps (silent when not ``enabled``)."""
    from tqdm import tqdm

    return tqdm(total=total, initial=start, desc=desc, unit=unit, disable=not enabled or None)


def read_selection(run_dir: Path) -> Selection:
    """The :class:`Selection` of a run directory (a run from before ``selection`` was saved,
    or without ``config.json``: ``val_<objective>``, lower is better, per iteration)."""
    path = Path(run_dir) / "config.json"
    spec = json.loads(path.read_text()) if path.is_file() else {}
    saved = spec.get("selection")
    if saved is not None:
        return Selection(**saved)
    objective = spec.get("objective", spec.get("train_config", {}).get("objective", "slowdown"))
    return Selection(metric=f"val_{objective}")


def read_baselines(run_dir: Path, selection: Selection) -> dict[str, float]:
    """``baselines.json`` of a run as policy -> value of the selection metric (entries holding
    several metrics give theirs: ``{"s_log": ...}`` for ``val_s_log``)."""
    base = json.loads((Path(run_dir) / "baselines.json").read_text())
    key = selection.metric.removeprefix("val_")
    return {k: float(v[key] if isinstance(v, Mapping) else v) for k, v in base.items()}
