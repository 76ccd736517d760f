"""``schedlab train ALGO``: one subcommand per registered trainer, options from its config.

Each trainer (:data:`schedlab.registry.trainers`) is a
:class:`~schedlab.policies.training.Trainer`: a config dataclass and a train function returning a
:class:`~schedlab.policies.training.TrainResult`. The subcommand's options are the config's
fields (flat, :func:`schedlab.params.parameters`: type and default from the field, help from its
docstring; see :func:`~schedlab.cli.config_options.config_options`), so a new trainer is one
registry line. The trainer's registered report function (``report(result, config) -> Path``, in
``reports/``) draws the learning report here, for a single run and for every run of a sweep. A
trainer writes its config (:func:`schedlab.params.flat`) under ``"train_config"`` in
``OUT/config.json``, or under ``"trainer_config"`` when ``train_config`` holds the config of an
inner stage (DeepRM_Plus's REINFORCE stage); ``--resume`` reads it back.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from schedlab import interrupts
from schedlab.cli.config_options import cli_message, config_options, option_name
from schedlab.cli.options import ADDRESS_HELP, Command, Group, check_backend, output_param
from schedlab.errors import Interrupted
from schedlab.param_checks import check_params
from schedlab.params import build, flat, parameters
from schedlab.registry import trainers

if TYPE_CHECKING:
    from schedlab.policies.training import TrainResult


class TrainGroup(Group):
    """Subcommands built on demand from the trainers registry (no import for ``--help``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The registered trainers."""
        return trainers.names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command:
        """The command of trainer ``cmd_name`` (unknown names suggest the closest)."""
        return trainer_command(trainers.entry(cmd_name).name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List trainers from their registry summaries."""
        with formatter.section("Trainers"):
            formatter.write_dl([(e.name, e.summary) for e in trainers])


@click.group("train", cls=TrainGroup)
def train_group() -> None:
    """Train a learned policy (see the trainers below) and write its run directory."""


SWEEP_OPTIONS = [
    click.Option(
        ["--seeds"],
        metavar="SEEDS",
        help="Train one run per seed, e.g. 0-4, 0,3,7 or 1-3,8: a sweep, with one run "
        "directory per seed under OUTPUT and a summary report (mean and CI over seeds, "
        "learning curves overlaid).",
    ),
    click.Option(
        ["--grid"],
        multiple=True,
        metavar="FIELD=V1,V2",
        help="Sweep a config field over values too (repeatable: every combination), "
        "e.g. --grid lr=0.001,0.0003; each point trains every seed.",
    ),
    click.Option(
        ["--backend"],
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where the runs of a sweep train: 'local' (parallel processes here) or "
        "'ray' (Ray tasks; needs the ray extra, see docs/ray.md).",
    ),
    click.Option(["--address"], metavar="ADDRESS", help=ADDRESS_HELP),
    click.Option(
        ["--workers"],
        type=click.IntRange(min=1),
        help="Runs of a sweep training at once here (default: CPUs / --threads); with "
        "--backend ray, the CPUs of the local Ray instance.",
    ),
]
"""Options of a training sweep (``--seeds``, ``--grid``) and where it runs."""


def trainer_command(name: str) -> click.Command:
    """The ``schedlab train NAME`` command of a registered trainer."""
    entry = trainers.entry(name)
    cls = trainers.load(name).config
    resume = click.Option(
        ["--resume"], is_flag=True, help="Continue the run (or sweep) in OUTPUT where it stopped."
    )
    output = output_param(
        "Run directory (config, curves, checkpoints, report); of a sweep: one run directory "
        "per run, runs.csv, summary.csv and the sweep's report.",
        file_okay=False,
    )

    @click.pass_context
    def run(ctx: click.Context, /, resume: bool, output: Path, **values: Any) -> None:
        sweep = {k: values.pop(k) for k in ("seeds", "grid", "backend", "address", "workers")}
        if sweep["seeds"] or sweep["grid"] or (resume and saved_sweep(output)):
            train_sweep(ctx, name, cls, values, output, resume=resume, **sweep)
            return
        if sweep["backend"] != "local" or sweep["address"] or sweep["workers"]:
            msg = (
                "--backend, --address and --workers apply to sweeps: give --seeds or --grid "
                "(--seeds 0 trains one run on the backend)"
            )
            raise click.UsageError(msg)
        config = make_config(ctx, cls, name, values, output if resume else None)
        train(name, config, output, resume=resume)

    return Command(
        name,
        callback=run,
        params=[*config_options(cls), *SWEEP_OPTIONS, resume, output],
        help=f"{entry.summary}.\n\nOptions are the fields of {cls.__name__}; with --resume, "
        "options not given are taken from the saved run. With --seeds and/or --grid, trains "
        "a sweep of runs in parallel (--backend local or ray).",
    )


def saved_sweep(output: Path) -> dict[str, Any] | None:
    """The sweep saved in ``output/config.json``, or None (none there, or a single run)."""
    path = output / "config.json"
    if not path.is_file():
        return None
    sweep: dict[str, Any] | None = json.loads(path.read_text()).get("sweep")
    return sweep


def make_config(
    ctx: click.Context, cls: type, name: str, values: dict[str, Any], resume_from: Path | None
) -> Any:
    """The config from the options; with ``resume_from``, options not given on the command
    line come from the run saved there."""
    if resume_from is not None:
        from schedlab.policies.training import read_spec

        spec = read_spec(resume_from)
        base = spec.get("trainer_config", spec["train_config"])
        if gone := sorted(base.keys() - parameters(cls).keys()):
            msg = (
                f"--resume: {resume_from} was trained with settings trainer {name!r} no longer "
                f"has ({', '.join(gone)}); train a new run in another directory"
            )
            raise click.UsageError(msg)
        default = click.core.ParameterSource.DEFAULT
        given = {k for k in values if ctx.get_parameter_source(k) is not default}
        values = {**base, **{k: v for k, v in values.items() if k in given}}
    fields = check_params(cls, values, owner=f"trainer {name!r}")
    try:
        return build(cls, fields)
    except ValueError as exc:
        names = {k: option_name(k) for k in parameters(cls)}
        raise click.UsageError(cli_message(str(exc), names)) from exc


def train(name: str, config: Any, output: Path, *, resume: bool) -> None:
    """Train with trainer ``name``, draw its learning report, print a summary. SIGINT and
    SIGTERM stop it with a line saying how to continue it."""
    trainer = trainers.load(name)
    try:
        with interrupts.guard():
            result = trainer.train(config, output, resume=resume, progress=True)
    except KeyboardInterrupt as exc:
        signal = getattr(exc, "signal", "SIGINT")
        msg = (
            f"interrupted by {signal}: {output} keeps the run up to its last checkpoint "
            f"(every --checkpoint-every steps); continue it with the same command and --resume"
        )
        raise Interrupted(msg, signal) from None
    report = trainers.load_report(name)(result, flat(config))
    budget = flat(config)[trainer.budget]
    if result.resumed >= budget:
        click.echo(
            f"{output} was already complete ({budget} {trainer.budget}): nothing trained; "
            f"raise --{trainer.budget} to continue it. {result.summary()}; report: {report}"
        )
        return
    since = f" (continued from {result.resumed})" if result.resumed else ""
    click.echo(
        f"trained {name} in {result.seconds:.0f} s{since}: {result.summary()} -> "
        f"{output / 'best.pt'}; report: {report}"
    )


def train_sweep(
    ctx: click.Context,
    name: str,
    cls: type,
    values: dict[str, Any],
    output: Path,
    *,
    resume: bool,
    seeds: str | None,
    grid: tuple[str, ...],
    backend: str,
    address: str | None,
    workers: int | None,
) -> None:
    """Train the sweep of ``--seeds``/``--grid`` (with ``resume``, those not given come from
    the saved sweep), draw each run's learning report and the sweep's report, print a
    summary; exit 1 listing the failed runs, if any."""
    from schedlab.cli.experiment import fail_on_failures
    from schedlab.evaluation import sweep_runs
    from schedlab.evaluation import train_sweep as ts
    from schedlab.reports.sweep import write_sweep_report

    check_backend(backend, address, workers)
    default = click.core.ParameterSource.DEFAULT
    if seeds and ctx.get_parameter_source("seed") is not default:
        raise click.UsageError("give either --seed (one run) or --seeds (a sweep), not both")
    saved = (saved_sweep(output) or {}) if resume else {}
    base = flat(make_config(ctx, cls, name, values, output if resume else None))
    seed_list = sweep_runs.parse_seeds(seeds) if seeds else saved.get("seeds") or [base["seed"]]
    grid_values = sweep_runs.parse_grid(grid) if grid else saved.get("grid", {})
    runs = sweep_runs.plan_sweep(cls, base, seed_list, grid_values, owner=f"trainer {name!r}")
    outcome = ts.run_sweep(
        name,
        runs,
        output,
        base=base,
        backend=backend,
        address=address,
        workers=workers,
        resume=resume,
        on_done=functools.partial(_run_report, name),
    )
    tables = outcome.tables
    paths = write_sweep_report(
        output,
        trainer=name,
        config=json.loads((output / "config.json").read_text()),
        table=tables.runs,
        summary=tables.summary,
        curves=tables.curves,
        baselines=tables.baselines,
        selection=tables.selection,
    )
    click.echo(
        f"{outcome.n_runs} runs: {outcome.ran} trained now, {outcome.skipped} already done, "
        f"{len(outcome.failures)} failed ({outcome.wall_s:.0f} s) -> {output}; "
        f"report: {paths['html']}"
    )
    for r in tables.summary.iter_rows(named=True):
        if r["seeds"]:
            ci = "" if r["final_low"] is None else f" [{r['final_low']:.3f}, {r['final_high']:.3f}]"
            click.echo(
                f"  {r['point'] or name}: final {r['final']:.3f}{ci} over "
                f"{r['seeds']} seeds, last {r['last']:.3f}"
            )
    fail_on_failures(outcome)


def _run_report(name: str, run_dir: Path, run: Any, result: TrainResult) -> None:
    """The learning report of one run of a sweep, as ``schedlab train`` draws it (the result's
    ``out_dir`` is where the run trained, on Ray another machine's: drawn in ``run_dir``)."""
    result = dataclasses.replace(result, out_dir=run_dir)
    trainers.load_report(name)(result, flat(run.config))
