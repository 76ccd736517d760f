"""Every command and subcommand of ``schedlab``, found from the click group itself (a new
command is covered without a line here): leaving out any required option or argument, or giving
a wrong value (a bad choice, a path that does not exist, a number out of range, an unknown
name), is a usage error naming it: exit status 2, one ``Error:`` line, no traceback. No command
runs (click refuses before the callback), so the walk is fast.

Valid values for the parameters kept are derived from their click types (:func:`valid`); a
parameter of a type the walk does not know fails the walk, naming it, so that it is added.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.cli.config_options import SlotsType
from schedlab.cli.options import LoadType, OutputPath, RegistryName
from schedlab.params import REQUIRED as NO_DEFAULT


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every leaf command under ``group``."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, f"{' '.join((*path, name))} is listed but cannot be made"
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))
        else:
            yield (*path, name)


def command(path: tuple[str, ...]) -> click.Command:
    """The command at ``path`` (``("experiment", "run")``)."""
    cmd: click.Command | None = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.get_command(click.Context(cmd), name)
    assert cmd is not None
    return cmd


PATHS = sorted(commands())
REQUIRED = [(p, q.name) for p in PATHS for q in command(p).params if q.required]


def valid(param: click.Parameter, tmp: Path) -> list[str]:
    """Command-line words giving ``param`` a value its type accepts."""
    kind = param.type
    if isinstance(kind, OutputPath):
        value = str(tmp / ("out.parquet" if kind.file_okay else "out"))
    elif isinstance(kind, click.Path):
        value = str(tmp / ("dir" if kind.dir_okay and not kind.file_okay else "file.parquet"))
    elif isinstance(kind, RegistryName):
        value = kind.registry.names()[0]
    elif isinstance(kind, click.Choice):
        value = str(kind.choices[0])
    elif isinstance(kind, LoadType):
        value = "0.5"
    elif isinstance(kind, SlotsType):
        value = "all"
    elif isinstance(kind, click.IntRange | click.FloatRange):
        value = str(kind.min if kind.min is not None and not kind.min_open else 1)
    elif kind in (click.INT, click.FLOAT, click.STRING):
        value = "1"
    else:
        pytest.fail(f"no valid value known for {param.name} ({kind!r}): add its type to valid()")
    return [value] * max(1, param.nargs)


def wrong(param: click.Parameter, tmp: Path) -> str | None:
    """A value of ``param``'s type that its type refuses, or None (any text is accepted)."""
    kind = param.type
    if isinstance(kind, click.Path) and kind.exists:
        return str(tmp / "no-such-file")
    if isinstance(kind, RegistryName):
        return "no-such-name"
    if isinstance(kind, click.Choice):
        return "no-such-choice"
    if isinstance(kind, LoadType):
        return "a-lot"
    if isinstance(kind, SlotsType):
        return "0"
    if isinstance(kind, click.IntRange | click.FloatRange) and kind.min is not None:
        return str(kind.min - 1)
    if kind in (click.INT, click.FLOAT):
        return "one"
    return None


def words(param: click.Parameter, values: list[str]) -> list[str]:
    """``param`` given ``values`` on the command line (an option's first name, then them)."""
    return values if isinstance(param, click.Argument) else [param.opts[0], *values]


def argv(
    path: tuple[str, ...], tmp: Path, *, leave_out: str | None = None, bad: str | None = None
) -> list[str]:
    """``path`` with a valid value for every required parameter but ``leave_out`` (and, when
    it is an argument, the arguments after it: they would take its place), or with the wrong
    value ``bad`` for the parameter ``leave_out`` when given."""
    (tmp / "dir").mkdir(exist_ok=True)
    (tmp / "file.parquet").touch()
    args = [*path]
    params = command(path).params
    out = next((p for p in params if p.name == leave_out and bad is None), None)
    if isinstance(out, click.Argument):  # the arguments after it would take its place
        params = [p for p in params if not isinstance(p, click.Argument)
                  or params.index(p) < params.index(out)]  # fmt: skip
    for p in params:
        if p.name == leave_out and bad is not None:
            args += words(p, [bad] * max(1, p.nargs))
        elif p.required and p.name != leave_out:
            args += words(p, valid(p, tmp))
    return args


def usage_error(args: list[str]) -> str:
    """The ``Error:`` line of ``schedlab ARGS``, asserting a usage error: exit status 2, exactly
    one error line, the last thing said, and no traceback."""
    result = CliRunner().invoke(main, args)
    out = result.output
    assert isinstance(result.exception, SystemExit), f"{args}: {result.exception!r}\n{out}"
    assert result.exit_code == 2, f"{args}: exit {result.exit_code}\n{out}"
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, out
    assert out.strip().splitlines()[-1] == errors[0], out
    return errors[0]


def test_the_walk_finds_every_command() -> None:
    assert {" ".join(p) for p in PATHS} >= {
        "simulate", "generate", "load", "experiment run", "export", "show", "report", "demo",
        "fit", "train deeprm", "check policy", "traces fetch", "list",
    }  # fmt: skip
    assert (("simulate",), "output") in REQUIRED
    assert (("simulate",), "jobs") in REQUIRED


@pytest.mark.parametrize(
    ("path", "name"), REQUIRED, ids=[" ".join(p) + f":{n}" for p, n in REQUIRED]
)
def test_a_missing_required_parameter_is_a_usage_error(
    tmp_path: Path, path: tuple[str, ...], name: str
) -> None:
    param = next(p for p in command(path).params if p.name == name)
    error = usage_error(argv(path, tmp_path, leave_out=name))
    kind = "argument" if isinstance(param, click.Argument) else "option"
    assert error.startswith(f"Error: Missing {kind} "), error
    names = [param.human_readable_name] if kind == "argument" else param.opts
    assert all(f"'{n}'" in error for n in names), error


def test_help_says_required_of_the_required_parameters_only() -> None:
    """``--help`` marks ``[required]`` exactly the parameters click requires, and no option's
    default is a config field's marker for 'no default' (such a field is a required option)."""
    for path in PATHS:
        cmd = command(path)
        ctx = click.Context(cmd)
        for p in cmd.params:
            assert p.default is not NO_DEFAULT, (path, p.name)
            record = p.get_help_record(ctx) if isinstance(p, click.Option) else None
            if record is not None:
                assert ("required" in record[1]) == p.required, (path, p.name, record)


WRONG = [
    (path, p.name)
    for path in PATHS
    for p in command(path).params
    if not getattr(p, "is_flag", False) and wrong(p, Path("/nonexistent")) is not None
]


@pytest.mark.parametrize(("path", "name"), WRONG, ids=[" ".join(p) + f":{n}" for p, n in WRONG])
def test_a_wrong_value_is_a_usage_error(tmp_path: Path, path: tuple[str, ...], name: str) -> None:
    param = next(p for p in command(path).params if p.name == name)
    bad = wrong(param, tmp_path)
    assert bad is not None
    args = argv(path, tmp_path, leave_out=name, bad=bad)
    error = usage_error(args)
    assert error.startswith("Error: Invalid value for "), error


MARKUP = re.compile(r"\bNone\b|seeds? 00\d|``|:(class|func|mod|meth|data|attr):`")
"""What a command line's help must not say: Python's None (the CLI says what to type, or
'default'), the papers' internal numbers instead of their names, reST markup."""


def test_help_speaks_the_command_lines_words() -> None:
    """Every summary, description and option help (derived ones included: a config field's
    docstring) names papers by name and says 'all' or 'default' where Python says None."""
    for path in PATHS:
        cmd = command(path)
        texts = {"help": cmd.help or "", "summary": cmd.get_short_help_str()}
        texts |= {p.name or "?": getattr(p, "help", None) or "" for p in cmd.params}
        for where, text in texts.items():
            assert not MARKUP.search(text), f"{' '.join(path)} {where}: {text}"


@pytest.mark.parametrize("path", [p[:i] for p in PATHS for i in range(1, len(p) + 1)])
def test_every_summary_is_the_whole_first_paragraph(path: tuple[str, ...]) -> None:
    """``schedlab --help`` and the CLI reference (mkdocs-click: the summary's first line) show
    each command's summary whole, never cut mid-sentence."""
    cmd = command(path)
    assert cmd.short_help, path
    assert "\n" not in cmd.short_help
    assert cmd.get_short_help_str(limit=45) == cmd.short_help
    first = " ".join((cmd.help or "").split("\n\n")[0].split())
    assert cmd.short_help == first
