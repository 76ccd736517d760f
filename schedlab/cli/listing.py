"""``schedlab list``: what the registries hold."""

from __future__ import annotations

import warnings

import click

from schedlab.cli.config_options import cli_help
from schedlab.cli.options import Command
from schedlab.errors import MissingExtraError, PluginWarning
from schedlab.param_checks import describe
from schedlab.params import REQUIRED, Param, parameters
from schedlab.registry import GROUPS, Registry, generators, loaders, models, policies, trainers

REGISTRIES = {
    "policies": policies,
    "generators": generators,
    "loaders": loaders,
    "trainers": trainers,
    "models": models,
}


HEURISTIC_NOTE = (
    "\nHeuristics combine a job order with a queue discipline and a placement rule: NAME+QUEUE"
    "+RULE, e.g. fcfs+easy, sjf+easy+bestfit. Queues: greedy (the default: start any job that "
    "fits now, in order, among the visible ones; a head that does not fit is skipped), strict "
    "(the first waiting job blocks the others), easy (EASY backfilling), conservative "
    "(conservative backfilling); the last three see the whole queue and order and reserve by "
    "the jobs' estimates (clairvoyant=true: by the true durations). Rules: firstfit (default), "
    "bestfit, worstfit, align."
)
"""Said after ``schedlab list policies``."""


@click.command("list", cls=Command)
@click.argument("kind", type=click.Choice(list(REGISTRIES)), default="policies")
@click.option(
    "--params",
    "show_params",
    is_flag=True,
    help="Also list each entry's parameters (-p KEY=VALUE, spec options).",
)
def list_cmd(kind: str, show_params: bool) -> None:
    """List registered policies, generators, loaders, trainers or model kinds (with their
    tags), built-in ones first, then installed plug-ins with their distribution, then refused
    plug-ins and why, and installed plug-ins that cannot be imported."""
    registry = REGISTRIES[kind]
    with warnings.catch_warnings():  # refused plug-ins are listed below instead
        warnings.simplefilter("ignore", PluginWarning)
        entries = list(registry)
    width = max(len(e.name) for e in entries)
    for entry in entries:
        tags = f"  [{', '.join(sorted(entry.tags))}]" if entry.tags else ""
        origin = "" if entry.origin == "schedlab" else f"  (from {entry.origin})"
        click.echo(f"{entry.name:{width}s}  {entry.summary}{tags}{origin}")
        if not show_params or "cannot be imported" in entry.summary:
            continue
        try:
            params = _parameters(registry, entry.name)
        except MissingExtraError as exc:  # learned policies and trainers without torch
            click.echo(f"    (parameters not shown: {exc})")
            continue
        for p in params.values():
            click.echo(f"    {p.name} = {describe(p.hint)} ({_default(p)}){_doc(p)}")
    if registry is policies:
        click.echo(HEURISTIC_NOTE)
    plugins = sum(e.origin != "schedlab" for e in entries)
    click.echo(
        f"\n{len(entries) - plugins} built in, {plugins} from plug-ins (entry-point group "
        f"{GROUPS[kind]}); any package.module:attr is accepted as a name too."
    )
    for reason in registry.refused:
        click.echo(f"refused: {reason}")
    for why in registry.broken().values():
        click.echo(f"broken: {why}")


def _parameters(registry: Registry, name: str) -> dict[str, Param]:
    """The parameters of entry ``name``: a trainer's or a model kind's are its config's fields."""
    if registry is trainers:
        return parameters(trainers.load(name).config)
    if registry is models:
        return parameters(models.load_config(name))
    return registry.parameters(name)


def _default(p: Param) -> str:
    """``required``, or the default as given with -p (JSON: None is ``null``)."""
    if p.default is REQUIRED:
        return "required"
    return "default null" if p.default is None else f"default {p.default!r}"


def _doc(p: Param) -> str:
    """``: `` and the parameter's docstring on one line, in the command line's words (None is
    ``null`` with -p KEY=VALUE)."""
    return f": {cli_help(' '.join(p.doc.split()), 'null')}" if p.doc else ""
