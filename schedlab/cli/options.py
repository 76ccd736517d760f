"""Options shared by the subcommands (options derived from a config dataclass:
:mod:`schedlab.cli.config_options`).

Options mean the same everywhere: ``-o/--output`` names what is written (checked writable
before any work), ``--seed`` the seed, ``--jobsets`` jobsets per load, ``--load`` a target
offered load (``0.7`` or ``70%``; repeatable or comma-separated where several are taken),
``-p/--param KEY=VALUE`` a parameter of the generator or loader (checked against its type
hints), ``--slots``/``--horizon`` the cluster geometry.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from schedlab.errors import ParameterError, UnknownNameError
from schedlab.param_checks import check_load

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

if TYPE_CHECKING:
    from schedlab.registry import Registry

    AnyParamType = click.ParamType[Any, Any]
else:  # click before 8.2 has no type parameters
    AnyParamType = click.ParamType
"""Base and annotation of the option types here (click's ``ParamType`` of any value)."""


class RegistryName(AnyParamType):
    """A name of a registry: built in, an installed plug-in's or ``package.module:attr``
    (checked when given; an unknown one names the closest known names)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.name = registry.kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The entry's name (lower case unless a reference)."""
        try:
            return self.registry.entry(str(value)).name
        except UnknownNameError as exc:
            self.fail(str(exc), param, ctx)


class LoadType(AnyParamType):
    """An offered load: ``0.7`` or ``70%``; > 0; a warning above 300% (``--load 70``)."""

    name = "load"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        """The load as a fraction of capacity."""
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            load = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"{value!r} is not a load (use 0.7 or 70%)", param, ctx)
        where = f"{param.opts[0] if param else '--load'} {text}"
        try:
            return check_load(load, where=where)
        except ParameterError as exc:
            self.fail(str(exc), param, ctx)


LOAD = LoadType()


def _split_loads(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[float]:
    items = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return [LOAD.convert(item, param, ctx) for item in items]


def loads_option(help_text: str) -> Decorator:
    """The repeatable ``--load`` option (comma-separated values allowed) -> list of floats."""
    return click.option("--load", "loads", multiple=True, callback=_split_loads, help=help_text)


def _writable(directory: bool) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def check(_ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        from schedlab.io import check_writable  # polars: imported only when a command runs

        if value is None:
            return None
        try:
            return check_writable(value, directory=directory)
        except OSError as exc:
            raise click.BadParameter(str(exc), param=param) from exc

    return check


class OutputPath(click.Path):
    """The type of ``-o/--output``: a path the command writes (every other path is an input)."""


def summary(help_text: str | None) -> str | None:
    """The first paragraph of a command's help, on one line: its summary in ``schedlab --help``
    and in the CLI reference (left to click, it would be cut at 45 characters, and mkdocs-click
    cuts it at the docstring's first line break)."""
    if not help_text:
        return None
    return " ".join(inspect.cleandoc(help_text).split("\n\n")[0].split())


class Command(click.Command):
    """A schedlab command: no output of it can replace one of its inputs; its summary is the
    first paragraph of its help (:func:`summary`).

    Every path parameter that is not an :class:`OutputPath` is an input; the run is wrapped in
    :func:`schedlab.io.reading` of them, so every write (:func:`schedlab.io.atomic_path`)
    refuses to replace one, and each output is checked against them before any work.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.short_help = self.short_help or summary(self.help)

    def invoke(self, ctx: click.Context) -> Any:
        """Check outputs against inputs, then run the command with its inputs declared."""
        from schedlab import io

        def values(p: click.Parameter) -> list[Path]:
            value = ctx.params.get(p.name or "")
            items = value if isinstance(value, tuple | list) else [value]
            return [Path(v) for v in items if isinstance(v, str | Path)]

        paths = [p for p in self.params if isinstance(p.type, click.Path)]
        inputs = [v for p in paths if not isinstance(p.type, OutputPath) for v in values(p)]
        with io.reading(inputs):
            for p in paths:
                for value in values(p) if isinstance(p.type, OutputPath) else ():
                    try:
                        io.check_output(value)
                    except OSError as exc:
                        raise click.BadParameter(str(exc), ctx=ctx, param=p) from exc
            return super().invoke(ctx)


class Group(click.Group):
    """A command group whose subcommands are :class:`Command` objects; its summary is the first
    paragraph of its help (:func:`summary`)."""

    command_class = Command

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.short_help = self.short_help or summary(self.help)


def _output_attrs(help_text: str, file_okay: bool, default: Path | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "type": OutputPath(path_type=Path, file_okay=file_okay),
        "required": default is None,
        "show_default": default is not None,
        "help": help_text,
        "callback": _writable(directory=not file_okay),
    }
    # click >= 8.2 takes an explicit default, None included, as a value: a required option
    # declared with default=None is never missing (the command then fails on the None)
    return attrs if default is None else {**attrs, "default": default}


def output_option(
    help_text: str, *, file_okay: bool = True, default: Path | None = None
) -> Decorator:
    """The ``-o/--output`` option (a file, or a directory with ``file_okay=False``), required
    unless it has a default; checked writable before the command runs."""
    return click.option("-o", "--output", **_output_attrs(help_text, file_okay, default))


def output_param(
    help_text: str, *, file_okay: bool = True, default: Path | None = None
) -> click.Option:
    """:func:`output_option` as a parameter object, for commands built at run time."""
    return click.Option(["-o", "--output"], **_output_attrs(help_text, file_okay, default))


def param_option(help_text: str) -> Decorator:
    """The repeatable ``-p/--param KEY=VALUE`` option -> dict (values read as JSON)."""
    return click.option(
        "-p",
        "--param",
        "params",
        multiple=True,
        metavar="KEY=VALUE",
        callback=key_values,
        help=help_text,
    )


def key_values(
    _ctx: click.Context, param: click.Parameter, items: tuple[str, ...]
) -> dict[str, Any]:
    """``("a=1", "b=x")`` -> ``{"a": 1, "b": "x"}`` (JSON where it parses, else the text)."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param=param)
        if key.strip() in out:
            raise click.BadParameter(f"{key.strip()!r} is given twice", param=param)
        try:
            out[key.strip()] = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            out[key.strip()] = raw
    return out


def count_option(name: str, default: int, help_text: str) -> Decorator:
    """An integer option that must be >= 1 (jobsets, workers, ...)."""
    return click.option(
        name, default=default, show_default=True, type=click.IntRange(min=1), help=help_text
    )


def seed_option(help_text: str, *, default: int | None = 0) -> Decorator:
    """The ``--seed`` option: an integer >= 0 (numpy's seeds), checked as ``--seed``."""
    return click.option(
        "--seed",
        default=default,
        show_default=default is not None,
        type=click.IntRange(min=0),
        help=help_text,
    )


def cluster_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--slots`` (visible job slots M) and ``--horizon`` (T steps)."""
    fn = count_option("--slots", 10, "Visible job slots M.")(fn)
    return count_option("--horizon", 20, "Horizon T (steps).")(fn)


def force_option(what: str) -> Decorator:
    """The ``--force`` flag, explained for this command."""
    return click.option("--force", is_flag=True, help=what)


BACKEND_HELP = (
    "Where runs execute: 'local' (this machine's processes) or 'ray' (Ray tasks on a local "
    "Ray instance, or on the cluster of --address; needs the ray extra, see "
    "docs/ray.md)."
)
ADDRESS_HELP = (
    "With --backend ray: a running Ray cluster, 'auto' (the one `ray start` joined this machine "
    "to), HOST:6379 or ray://HOST:10001 (Ray Client). Default: $RAY_ADDRESS if set, else a "
    "local Ray instance started and stopped by this command."
)


def backend_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--backend local|ray`` and ``--address`` (a Ray cluster)."""
    fn = click.option("--address", metavar="ADDRESS", help=ADDRESS_HELP)(fn)
    return click.option(
        "--backend",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help=BACKEND_HELP,
    )(fn)


def check_backend(backend: str, address: str | None, workers: int | None) -> None:
    """Refuse option combinations that mean nothing: ``--address`` without ``--backend ray``,
    ``--workers`` (a local instance's CPUs) with ``--address``."""
    if address is not None and backend != "ray":
        msg = f"--address {address} names a Ray cluster; add --backend ray"
        raise click.UsageError(msg)
    if address is not None and workers is not None:
        msg = (
            f"--workers {workers} sets the CPUs of a local Ray instance; the cluster at "
            f"--address {address} uses its own resources (drop --workers)"
        )
        raise click.UsageError(msg)


def one_line(message: object) -> str:
    """``message`` on one line (whitespace runs collapsed), at most 600 characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= 600 else text[:597] + "..."


def show_warning(message: Warning | str, *_args: Any, **_kwargs: Any) -> None:
    """``warnings.showwarning`` for the command line: ``warning: <message>`` on one line."""
    click.echo(f"warning: {one_line(message)}", err=True)


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Within the block, warnings print as one line each (see :func:`show_warning`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show_warning
        yield
