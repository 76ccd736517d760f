"""Training sweeps: one training run per seed (and per point of a small grid), in parallel.

``schedlab train deeprm --seeds 0-4 --grid lr=0.001,0.0003 -o OUT`` trains every (grid point,
seed) with a registered trainer (:data:`schedlab.registry.trainers`) on a backend
(:func:`~schedlab.evaluation.backends.make_backend`: this machine's processes, or Ray) and
writes::

    OUT/config.json         the sweep: trainer, base config ("train_config"), seeds, grid, runs
    OUT/<run>/              one ordinary training run directory per (point, seed), e.g.
                            OUT/lr0.001_seed3/ (config.json, curve.csv, best.pt, ...)
    OUT/<run>/sweep_run.json  written last: the run is complete (its best and final values)
    OUT/errors/<run>.json   a failed run: error and traceback (removed when it succeeds)
    OUT/runs.csv            one row per run: point, seed, status, final and best values
    OUT/summary.csv         one row per grid point: mean and confidence interval over seeds

A run directory is written where the run trains when the backend is local; on Ray the run
trains in a temporary directory of its worker node, seeded with the files the run directory
already holds (to resume it), and its files come back to ``OUT/<run>/`` on this machine: no
shared filesystem is needed. A run whose ``sweep_run.json`` matches its config is skipped; a run
cut short resumes from its training state (:data:`STATE`), so an interrupted sweep
resumes where it stopped. A failing run is recorded and the others go on.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from schedlab import interrupts, io
from schedlab.errors import Interrupted, OutputError, ParameterError
from schedlab.evaluation.backends import (
    Backend,
    BatchOutcome,
    available_cpus,
    make_backend,
    one_line,
    run_batch,
)
from schedlab.evaluation.convergence import over_seeds, per_run, read_curves
from schedlab.params import build, check_params, flat
from schedlab.policies.training import STATE, Selection, TrainResult, read_selection

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


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainOutput:
    """What training one run gave; picklable, sent back by a worker."""

    result: TrainResult | None = None
    """The trainer's result; None if the run failed."""
    error: str | None = None
    """One-line error of a failed run."""
    traceback: str | None = None
    """Its traceback."""
    files: dict[str, bytes] | None = None
    """The run directory's files (relative path -> content) of a run trained elsewhere."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepOutcome(BatchOutcome):
    """What :func:`run_sweep` did (the runs of its seeds and grid, in its sweep directory)."""

    tables: SweepTables
    """The sweep's tables after this call (also in ``runs.csv`` and ``summary.csv``)."""


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
    cls: type, base: Mapping[str, Any], seeds: Sequence[int], grid: Mapping[str, Sequence[Any]],
    *, owner: str,
) -> list[SweepRun]:  # fmt: skip
    """Every (grid point, seed) run: the grid's product in its order, seeds inside.

    Each run's config is ``cls(**base)`` with the point's values and the seed, checked like any
    trainer option (:func:`~schedlab.params.check_params`; ``owner`` names the trainer).

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
            fields = check_params(cls, {**base, **point, "seed": seed}, owner=owner,
                                  where="--grid" if point else "")  # fmt: skip
            try:
                config = build(cls, fields)
            except ValueError as exc:
                raise ParameterError(f"{owner}, {point_label(point, 'base')}: {exc}") from exc
            config_point = {k: flat(config)[k] for k in point}
            runs.append(SweepRun(name=run_name(config_point, seed), point=config_point,
                                 seed=seed, config=config))  # fmt: skip
    return runs


def train_in(trainer: str, config: Any, run_dir: str) -> TrainOutput:
    """Train one run in ``run_dir`` with ``trainer`` (resuming from :data:`STATE` if
    there); an error is returned, not raised, so the sweep goes on. Runs in a worker."""
    try:
        from schedlab.registry import trainers

        resume = (Path(run_dir) / STATE).is_file()
        result = trainers.load(trainer).train(config, run_dir, resume=resume, progress=False)
        return TrainOutput(result=result)
    except Exception as exc:
        if (name := interrupts.requested()) is not None:
            raise Interrupted(f"interrupted by {name}", name) from exc
        return TrainOutput(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


def train_shipped(trainer: str, config: Any, files: dict[str, bytes]) -> TrainOutput:
    """:func:`train_in` in a temporary directory seeded with ``files`` (the run directory's
    files, to resume); returns the directory's files too. Runs on a Ray worker node."""
    with tempfile.TemporaryDirectory(prefix="schedlab-train-") as tmp:
        write_files(Path(tmp), files)
        out = train_in(trainer, config, tmp)
        return dataclasses.replace(out, files=read_files(Path(tmp)))


def read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``: relative POSIX path -> content."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative path -> content) under ``folder``, each atomically."""
    for name, data in files.items():
        with io.atomic_path(folder / name) as tmp:
            tmp.write_bytes(data)


def _config_json(config: Any) -> Any:
    return json.loads(json.dumps(flat(config), default=str))


def is_complete(run: SweepRun, out: Path) -> bool:
    """Whether ``run``'s directory holds a complete run of its config."""
    path = out / run.name / DONE
    try:
        done = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return done.get("train_config") == _config_json(run.config)


def check_sweep_directory(out: Path, sweep: Mapping[str, Any], *, resume: bool) -> None:
    """Refuse to mix sweeps: a directory holding a sweep needs ``resume`` and the same trainer,
    seeds and grid; ``resume`` needs a sweep there.

    Raises
    ------
    OutputError
        Naming what differs and how to proceed.
    """
    path = out / "config.json"
    saved = json.loads(path.read_text()) if path.is_file() else None
    if saved is None or "sweep" not in saved:
        if resume:
            msg = (
                f"--resume: {out} holds no training sweep (no sweep in config.json); drop --resume"
            )
            raise OutputError(msg)
        if saved is not None:
            msg = f"{out} holds a single training run; choose another directory for a sweep"
            raise OutputError(msg)
        return
    if not resume:
        msg = f"{out} already holds a training sweep; pass --resume or choose another directory"
        raise OutputError(msg)
    old = {k: saved.get(k) for k in ("trainer", "sweep")}
    new = json.loads(json.dumps({k: sweep[k] for k in ("trainer", "sweep")}, default=str))
    if old != new:
        msg = (
            f"--resume: {out} holds another sweep ({old['trainer']}, {old['sweep']}); this one "
            f"is ({new['trainer']}, {new['sweep']}); choose another directory"
        )
        raise OutputError(msg)


def run_sweep(
    trainer: str,
    runs: Sequence[SweepRun],
    out_dir: str | Path,
    *,
    base: Mapping[str, Any],
    backend: str | Backend = "local",
    address: str | None = None,
    workers: int | None = None,
    resume: bool = False,
    progress: bool = True,
    on_done: Callable[[Path, SweepRun, Any], object] | None = None,
) -> SweepOutcome:
    """Train every run of ``runs`` not complete yet into ``out_dir`` (see the module docstring).

    Parameters
    ----------
    trainer
        Registered trainer name.
    runs
        From :func:`plan_sweep`.
    out_dir
        The sweep directory.
    base
        The base config (before seeds and grid), saved as ``"train_config"`` for ``--resume``.
    backend, address, workers
        Where runs train (:func:`~schedlab.evaluation.backends.make_backend`), or a backend
        itself (closed here); local ``workers`` default to the CPUs this process may use
        divided by the runs' torch ``threads``.
    resume
        Continue the sweep in ``out_dir`` (required when it holds one).
    progress
        Show a progress bar over runs.
    on_done
        Called as ``on_done(run_dir, run, result)`` here once a run is complete (e.g. to draw
        its learning report into ``run_dir``).

    Raises
    ------
    OutputError
        ``out_dir`` holds another sweep, or a sweep without ``resume``.
    Interrupted
        SIGINT or SIGTERM: complete runs are kept, running ones stopped; ``resume`` continues.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    sweep = sweep_record(trainer, runs, base)
    check_sweep_directory(out, sweep, resume=resume)
    pending = [r for r in runs if not is_complete(r, out)]
    local_workers = workers or max(1, available_cpus() // max(map(_cpus, runs)))
    runs_on = backend if not isinstance(backend, str) else make_backend(
        backend, address=address, n_tasks=len(pending),
        workers=local_workers if backend == "local" else workers)  # fmt: skip
    by_name = {r.name: r for r in pending}

    def start() -> None:
        _submit(runs_on, trainer, pending, out)
        # written once the backend took the runs: one that cannot start leaves no sweep
        io.write_text_atomic(out / "config.json", json.dumps(sweep, indent=2, default=str))

    def take(name: str, output: Any, error: BaseException | None) -> str | None:
        if error is not None:  # the worker died, or Ray lost the task
            output = TrainOutput(error=f"{type(error).__name__}: {error}", traceback=str(error))
        if output.files:
            write_files(out / name, output.files)
        if output.error is not None:
            _record_failure(by_name[name], output, out)
            return one_line(output.error)
        _mark_complete(by_name[name], output.result, out)
        return None

    def then(name: str, output: TrainOutput) -> None:
        if on_done is not None:
            on_done(out / name, by_name[name], output.result)

    failures = run_batch(runs_on, start, take, then=then, total=len(runs), pending=len(pending),
                         noun="training runs", again="with --resume to continue",
                         desc=f"{trainer} sweep", progress=progress)  # fmt: skip
    tables = write_tables(runs, out)
    return SweepOutcome(**SweepOutcome.tally(out, len(runs), len(pending), failures, t0),
                        tables=tables)  # fmt: skip


def _cpus(run: SweepRun) -> int:
    """CPUs a run uses: its torch ``threads`` (1 for a config without)."""
    return int(flat(run.config).get("threads", 1))


def _submit(backend: Backend, trainer: str, runs: Sequence[SweepRun], out: Path) -> None:
    """Submit ``runs``, their errors removed: trained in their directory, or (on a remote
    backend, Ray) elsewhere with the directory's files sent along and brought back."""
    for r in runs:
        (out / "errors" / f"{r.name}.json").unlink(missing_ok=True)
        if backend.remote:
            files = read_files(out / r.name)
            backend.submit(r.name, train_shipped, trainer, r.config, files, cpus=_cpus(r))
        else:
            backend.submit(r.name, train_in, trainer, r.config, str(out / r.name), cpus=_cpus(r))


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


def _mark_complete(run: SweepRun, result: Any, out: Path) -> None:
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


def _record_failure(run: SweepRun, output: TrainOutput, out: Path) -> None:
    info = {
        "run": run.name,
        "seed": run.seed,
        "point": run.point,
        "error": output.error,
        "traceback": output.traceback,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    io.write_text_atomic(
        out / "errors" / f"{run.name}.json", json.dumps(info, indent=2, default=str)
    )


def sweep_curves(runs: Sequence[SweepRun], out: Path) -> pl.DataFrame:
    """Validation curves of the complete runs
    (:func:`~schedlab.evaluation.convergence.read_curves`): ``variant`` is the run's grid point
    (:func:`point_label`, "" without a grid), ``value`` the metric the run selected its policy
    on (:class:`~schedlab.policies.training.Selection`)."""
    parts = [
        read_curves({point_label(r.point, ""): [out / r.name]}) for r in runs if is_complete(r, out)
    ]
    if not parts:
        return pl.DataFrame(schema=CURVE_SCHEMA)
    return pl.concat(parts, how="diagonal_relaxed")


CURVE_SCHEMA = {"variant": pl.String, "run": pl.String, "iteration": pl.Int64,
                "value": pl.Float64, "seconds": pl.Float64, "initial": pl.Float64,
                "higher_is_better": pl.Boolean}  # fmt: skip
"""Columns of :func:`sweep_curves` when no run is complete."""


def per_seed(curves: pl.DataFrame) -> pl.DataFrame:
    """One row per complete run: :func:`~schedlab.evaluation.convergence.per_run` (``final``
    is the best validation value, the policy ``best.pt`` keeps; ``it_95``/``s_95``;
    ``it_target``/``s_target`` to the SJF baseline) and ``last``, the value at the last
    validation; its ``iterations`` column is left out (the config has it)."""
    if curves.is_empty():
        return pl.DataFrame(schema={"variant": pl.String, "run": pl.String, "final": pl.Float64,
                                    "last": pl.Float64})  # fmt: skip
    last = curves.sort("iteration").group_by("run").agg(last=pl.col("value").last())
    return per_run(curves).drop("iterations").join(last, on="run", how="left")


def run_table(runs: Sequence[SweepRun], out: Path, seeds: pl.DataFrame) -> pl.DataFrame:
    """One row per run: ``run``, the grid fields, ``seed``, ``status`` (done, failed,
    pending), ``best_iteration`` and ``seconds`` (training time), then the columns of
    :func:`per_seed` (null for a run not complete)."""
    rows = []
    for r in runs:
        row: dict[str, Any] = {"run": r.name, **r.point, "seed": r.seed}
        if is_complete(r, out):
            done = json.loads((out / r.name / DONE).read_text())
            row |= {"status": "done", "best_iteration": done["best_iteration"],
                    "seconds": done["seconds"]}  # fmt: skip
        else:
            failed = (out / "errors" / f"{r.name}.json").is_file()
            row["status"] = "failed" if failed else "pending"
        rows.append(row)
    schema = {"best_iteration": pl.Int64, "seconds": pl.Float64}
    table = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    for name, dtype in schema.items():
        if name not in table.columns:
            table = table.with_columns(pl.lit(None, dtype).alias(name))
    return table.join(seeds.drop("variant"), on="run", how="left", maintain_order="left")


def summary_table(runs: Sequence[SweepRun], seeds: pl.DataFrame) -> pl.DataFrame:
    """One row per grid point: ``point``, the grid fields, ``seeds`` (complete runs), and the
    mean with its Student-t interval over seeds of every column of :func:`per_seed`
    (:func:`~schedlab.evaluation.convergence.over_seeds`: ``final``, ``final_low``,
    ``final_high``, ``final_n``, ``last``, ... at the default statistics' confidence level)."""
    points = pl.DataFrame(
        [{"point": point_label(r.point, ""), **r.point} for r in runs], infer_schema_length=None
    ).unique("point", keep="first", maintain_order=True)
    if seeds.is_empty():
        nulls = [f"{c}{s}" for c in ("final", "last") for s in ("", "_low", "_high")]
        return points.with_columns(pl.lit(0).alias("seeds"),
                                   *(pl.lit(None, pl.Float64).alias(c) for c in nulls))  # fmt: skip
    stats = over_seeds(seeds).rename({"variant": "point", "runs": "seeds"})
    table = points.join(stats, on="point", how="left", maintain_order="left")
    return table.with_columns(pl.col("seeds").fill_null(0))


def baseline_table(curves: pl.DataFrame) -> pl.DataFrame:
    """Heuristics on the runs' validation jobsets (the ``baseline_<name>`` columns of
    :func:`sweep_curves`), averaged over the complete seeds of each point: ``point``,
    ``policy``, ``value``."""
    names = [c for c in curves.columns if c.startswith("baseline_")]
    per_run_values = curves.group_by("variant", "run", maintain_order=True).agg(
        pl.col(names).first()
    )
    return (
        per_run_values.unpivot(names, index=["variant", "run"], variable_name="policy")
        .drop_nulls("value")
        .group_by("variant", "policy", maintain_order=True)
        .agg(pl.col("value").mean().cast(pl.Float64))
        .select(
            pl.col("variant").alias("point"),
            pl.col("policy").str.strip_prefix("baseline_"),
            "value",
        )
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepTables:
    """The tables of a sweep directory, as they stand (complete runs only in the values)."""

    runs: pl.DataFrame
    """:func:`run_table`."""
    seeds: pl.DataFrame
    """:func:`per_seed`."""
    summary: pl.DataFrame
    """:func:`summary_table`."""
    curves: pl.DataFrame
    """:func:`sweep_curves`."""
    baselines: pl.DataFrame
    """:func:`baseline_table`."""
    selection: Selection | None
    """What the runs selected their policy on (None before a run is complete)."""


def collect_sweep(runs: Sequence[SweepRun], out: Path) -> SweepTables:
    """Every table of the sweep ``runs`` in ``out``."""
    curves = sweep_curves(runs, out)
    seeds = per_seed(curves)
    done = [r for r in runs if is_complete(r, out)]
    return SweepTables(
        runs=run_table(runs, out, seeds),
        seeds=seeds,
        summary=summary_table(runs, seeds),
        curves=curves,
        baselines=baseline_table(curves),
        selection=read_selection(out / done[0].name) if done else None,
    )


def write_tables(runs: Sequence[SweepRun], out: Path) -> SweepTables:
    """Write ``runs.csv`` and ``summary.csv`` (:func:`collect_sweep`); returns the tables."""
    tables = collect_sweep(runs, out)
    for name, df in (("runs.csv", tables.runs), ("summary.csv", tables.summary)):
        with io.atomic_path(out / name) as tmp:
            df.write_csv(tmp)
    return tables
