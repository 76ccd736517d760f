"""``schedlab train ALGO``: one subcommand per registered trainer, options from its config.

Each trainer (:data:`schedlab.registry.trainers`) names a train function and its config
dataclass; the subcommand's options are the config's fields (type and default from the
field, help from its docstring; see :func:`~schedlab.cli.options.config_options`), so a new
trainer is one registry line. The train function is called as ``train(config, out_dir, *,
resume, progress)`` and returns data, a result with ``write_report(config)`` (draws the
learning report, returns its path), ``summary(config)`` (one line) and ``seconds``; the report is
drawn here. A trainer writes its config (``dataclasses.asdict``) under ``"train_config"`` in
``OUT/config.json``, which ``--resume`` reads back.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from schedlab.cli.options import cli_message, config_options, option_name, output_param
from schedlab.errors import OutputError
from schedlab.params import check_params
from schedlab.registry import trainers


class TrainGroup(click.Group):
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


def trainer_command(name: str) -> click.Command:
    """The ``schedlab train NAME`` command of a registered trainer."""
    entry = trainers.entry(name)
    cls = trainers.load_config(name)
    resume = click.Option(["--resume"], is_flag=True,
                          help="Continue the run in OUTPUT where it stopped.")  # fmt: skip
    output = output_param("Run directory (config, curves, checkpoints, report).", file_okay=False)

    @click.pass_context
    def run(ctx: click.Context, resume: bool, output: Path, **values: Any) -> None:
        config = make_config(ctx, cls, name, values, output if resume else None)
        train(name, config, output, resume=resume)

    return click.Command(
        name,
        callback=run,
        params=[*config_options(cls), resume, output],
        help=f"{entry.summary}.\n\nOptions are the fields of {cls.__name__}; with --resume, "
        "options not given are taken from the saved run.",
    )


def make_config(
    ctx: click.Context, cls: type, name: str, values: dict[str, Any], resume_from: Path | None
) -> Any:
    """The config from the options; with ``resume_from``, options not given on the command
    line come from the run saved there."""
    if resume_from is not None:
        saved = resume_from / "config.json"
        if not saved.is_file():
            msg = (
                f"--resume: {resume_from} holds no training run (no config.json); "
                "drop --resume to start one"
            )
            raise OutputError(msg)
        base = json.loads(saved.read_text())["train_config"]
        default = click.core.ParameterSource.DEFAULT
        given = {k for k in values if ctx.get_parameter_source(k) is not default}
        values = {**base, **{k: v for k, v in values.items() if k in given}}
    fields = check_params(cls, values, owner=f"trainer {name!r}")
    try:
        return cls(**fields)
    except ValueError as exc:
        names = {f.name: option_name(f.name) for f in dataclasses.fields(cls)}
        raise click.UsageError(cli_message(str(exc), names)) from exc


def train(name: str, config: Any, output: Path, *, resume: bool) -> None:
    """Train with trainer ``name``, draw its learning report, print a summary."""
    result = trainers.load(name)(config, output, resume=resume, progress=True)
    settings = dataclasses.asdict(config)
    report = result.write_report(settings)
    click.echo(
        f"trained {name} in {result.seconds:.0f} s: {result.summary(settings)} -> "
        f"{output / 'best.pt'}; report: {report}"
    )
