"""Options derived from a config dataclass: one option per field, its help from the field's
docstring, said in the command line's words.

A field's docstring is written for Python readers (reST markup, ``None`` for "not given"); its
option's help is the same text in the command line's words (:func:`cli_help`): markup becomes
plain text, and ``None`` becomes what the command line writes instead: the word its option type
declares (``all`` for ``--slots``, :attr:`SlotsType.none_word`), else ``default`` (the option
left out), e.g. "(None: the JobSet's own count)" -> "(default: the JobSet's own count)".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import click

from schedlab.cli.options import LOAD, AnyParamType, Decorator, key_values
from schedlab.params import REQUIRED, Interval, Param, Typical, parameters

RENAMES = {"n_jobsets": "--jobsets", "workload_params": "-p/--param"}
"""Config fields whose option has the CLI-wide name rather than ``--field-name``."""

SHARED_TYPES: dict[str, AnyParamType] = {"load": LOAD}
"""Config fields parsed like the CLI-wide option of the same name."""


class SlotsType(AnyParamType):
    """Visible job slots: an integer >= 1, or ``all`` for the whole queue (None)."""

    name = "M|all"
    none_word = "all"
    """What the command line writes for the field's None (see :func:`cli_help`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or value == "all":
            return None
        if isinstance(value, int) and value >= 1:
            return value
        try:
            slots = int(value)
        except ValueError:
            slots = 0
        if slots < 1:
            self.fail(f"expected an integer >= 1 or 'all', got {value!r}", param, ctx)
        return slots


COUNT = click.IntRange(min=1)
"""An integer >= 1."""

SIMULATION_TYPES: dict[str, AnyParamType] = {
    "slots": SlotsType(),
    "horizon": COUNT,
    "machines": COUNT,
    "overrun": click.Choice(["kill", "extend"]),
    "release": click.Choice(["dag", "trace"]),
}
"""The :class:`~schedlab.simulator.config.ClusterConfig` fields ``schedlab simulate`` takes,
with the types of their options."""


def simulation_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--slots`` (M or ``all``), ``--horizon``, ``--machines``, ``--overrun`` and ``--release``:
    the fields of a ClusterConfig (default and help from the dataclass, :func:`config_options`)."""
    from schedlab.simulator.config import ClusterConfig

    options = config_options(ClusterConfig, only=list(SIMULATION_TYPES), types=SIMULATION_TYPES)
    return with_options(options)(fn)


def cli_message(message: str, names: Mapping[str, str]) -> str:
    """``message`` with Python names replaced by their options (``jobset_size`` ->
    ``--jobset-size``), for errors raised by code that knows only the Python names."""
    for name, option in sorted(names.items(), key=lambda kv: -len(kv[0])):
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", option, message)
    return re.sub(r"(--[\w-]+) \(\1\)", r"\1", message)  # "x (--x)" named both already


def cli_help(doc: str, none_word: str | None = None) -> str:
    """A field docstring in the command line's words: reST roles and literals as plain text,
    "default (None)" as "default", and every other ``None`` as ``none_word`` (what the option
    takes for it, e.g. ``all``) or, without one, ``default`` (the option left out)."""
    text = re.sub(r":\w+:`~?([^`]*)`", r"\1", doc).replace("``", "")
    text = re.sub(r"\bdefault \(None\)", "default", text)
    return re.sub(r"\bNone\b", none_word or "default", text)


def option_name(field: str) -> str:
    """The option of a config field: ``eval_every`` -> ``--eval-every`` (see :data:`RENAMES`)."""
    return RENAMES.get(field, "--" + field.replace("_", "-")).split("/")[-1]


def _range(kind: type, bounds: tuple[Interval, ...]) -> AnyParamType:
    hard = [b for b in bounds if not isinstance(b, Typical)]
    if not hard:
        return click.INT if kind is int else click.FLOAT
    b = hard[0]
    lo = b.ge if b.ge is not None else b.gt
    hi = b.le if b.le is not None else b.lt
    if kind is int:
        return click.IntRange(lo, hi, min_open=b.gt is not None, max_open=b.lt is not None)  # type: ignore[arg-type]
    return click.FloatRange(lo, hi, min_open=b.gt is not None, max_open=b.lt is not None)


def config_option(p: Param, kind: AnyParamType | None = None) -> click.Option:
    """The option of one config field: its type from the hint (``Literal`` -> a choice,
    ``bool`` -> ``--x/--no-x``, a tuple of numbers -> that many values, a dict -> repeatable
    ``KEY=VALUE``) unless ``kind`` gives it, its default (a field without one: a required
    option), its docstring as help (:func:`cli_help`). Raises TypeError for a type the command
    line cannot give."""
    decl = RENAMES.get(p.name, "--" + p.name.replace("_", "-")).split("/")
    hint = p.hint
    if get_origin(hint) is Union or type(hint).__name__ == "UnionType":
        members = [a for a in get_args(hint) if a is not type(None)]
        hint = members[0] if len(members) == 1 else hint
    doc = cli_help(p.doc, getattr(kind, "none_word", None))
    # (click >= 8.2 takes an explicit default, None included, as a value: a required option
    # must be declared without one, or leaving it out is not an error)
    common: dict[str, Any] = {"help": doc, "show_default": True}
    common |= {"required": True} if p.default is REQUIRED else {"default": p.default}
    kind = kind or SHARED_TYPES.get(p.name)
    if kind is not None:
        return click.Option([*decl, p.name], type=kind, **common)
    if get_origin(hint) is Literal:
        return click.Option([*decl, p.name], type=click.Choice(get_args(hint)), **common)
    if hint is bool:
        flag = f"{decl[-1]}/--no-{decl[-1][2:]}"
        return click.Option([flag, p.name], **common)
    if hint in (int, float):
        return click.Option([*decl, p.name], type=_range(hint, p.bounds), **common)
    if hint is str:
        return click.Option([*decl, p.name], type=str, **common)
    if get_origin(hint) is tuple and get_args(hint) and set(get_args(hint)) <= {int, float}:
        args = get_args(hint)
        number = float if float in args else int
        return click.Option([*decl, p.name], type=number, nargs=len(args), **common)
    if hint is dict or get_origin(hint) in (dict, Mapping):
        return click.Option(
            [*decl, p.name], multiple=True, metavar="KEY=VALUE", callback=key_values, help=doc
        )
    msg = f"config field {p.name!r} of type {hint} cannot be given on the command line"
    raise TypeError(msg)


def config_options(
    cls: type,
    *,
    only: Sequence[str] | None = None,
    types: Mapping[str, AnyParamType] | None = None,
) -> list[click.Option]:
    """One option per field of the config dataclass ``cls`` (see :func:`config_option`), or
    per field of ``only``; ``types`` gives the type of a field's option where its hint does not
    say enough (e.g. ``slots``: an integer or ``all``)."""
    declared = parameters(cls)
    types = types or {}
    return [config_option(declared[n], types.get(n)) for n in only or declared]


def with_options(options: Sequence[click.Parameter]) -> Decorator:
    """A decorator adding ``options`` (in this order) to a command declared with
    ``@click.command``, as ``@click.option`` lines would."""

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        # click collects decorated options in __click_params__, last decorator first
        fn.__dict__.setdefault("__click_params__", []).extend(reversed(options))
        return fn

    return add
