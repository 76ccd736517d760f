"""The ``schedlab`` command group: one-line errors and warnings for every subcommand."""

from __future__ import annotations

import signal
from typing import Any

import click

from schedlab import __version__
from schedlab.cli.options import Group, one_line, one_line_warnings
from schedlab.errors import SchedlabError
from schedlab.exits import foreign_exit


class SchedlabGroup(Group):
    """A group whose subcommands report user mistakes as one line (``Error: ...``, no
    traceback) and an interrupt as one line with exit status 128 + the signal number."""

    def invoke(self, ctx: click.Context) -> Any:
        """Invoke the subcommand, translating schedlab's errors and interrupts."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # output piped into `head` and the like: stop quietly
            ctx.exit(141)
        except KeyboardInterrupt as exc:
            name = getattr(exc, "signal", "SIGINT")
            click.echo(f"Error: {one_line(exc) or f'interrupted by {name}'}", err=True)
            ctx.exit(128 + signal.Signals[name].value)
        except (SchedlabError, ValueError, OSError) as exc:
            raise click.ClickException(one_line(exc)) from exc
        except MemoryError as exc:  # past every size check: still one line, with the knobs
            raise click.ClickException(out_of_memory(ctx.invoked_subcommand, exc)) from exc
        except SystemExit as exc:  # a policy, generator, loader or plug-in exited: a failure
            failure = foreign_exit(exc, f"schedlab {ctx.invoked_subcommand}")
            if failure is None:
                raise
            raise click.ClickException(one_line(failure)) from exc


KNOBS = {
    "generate": "lower --jobsets or the loads",
    "load": "load part of the trace (--end, --sample) or cut it into jobsets (--jobset-size)",
    "simulate": "lower --machines, --horizon or --slots, or simulate fewer jobsets",
    "train": "lower --jobsets, --rollouts, --machines or --horizon",
    "experiment": "lower the spec's jobsets, loads or [cluster] sizes, or --workers",
    "fit": "fit part of the trace (schedlab load --end or --sample)",
}
"""What to lower when a command runs out of memory (the options that size its arrays)."""


def out_of_memory(command: str | None, exc: MemoryError) -> str:
    """One line for a ``MemoryError`` that escaped the size checks of ``schedlab COMMAND``."""
    from schedlab.sizes import BUDGET_ENV, human, limits

    room, what = limits()
    detail = f" ({one_line(exc).rstrip('.')})" if str(exc) else ""
    knob = KNOBS.get(command or "", "give it smaller inputs or sizes")
    return (
        f"schedlab {command} ran out of memory{detail}; {knob}, or raise the limit (now "
        f"{human(room)} {what}; ${BUDGET_ENV} sets the budget the size checks use)"
    )


@click.group(cls=SchedlabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedlab")
@click.option(
    "--allow-large",
    is_flag=True,
    help="Go ahead with requests estimated to need more memory than is available (refused "
    "otherwise, with the estimate and the option to change; = $SCHEDLAB_ALLOW_LARGE=1).",
)
@click.pass_context
def main(ctx: click.Context, allow_large: bool) -> None:
    """Evaluate cluster job schedulers on synthetic workloads and real traces."""
    ctx.with_resource(one_line_warnings())
    if allow_large:
        from schedlab.sizes import allow_large as go_ahead

        ctx.with_resource(go_ahead())
