"""``schedlab experiment run``: every run of a TOML spec into a directory, resumably."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from schedlab.cli.options import Group, backend_options, check_backend, force_option, output_option

FORCE_HELP = (
    "Replace an experiment of a different spec in OUTPUT: its runs that this spec would not "
    "reproduce identically (and its spec and combined results) are moved to "
    "OUTPUT/replaced/<time>/; identical runs are kept. Without it such a directory is refused."
)


@click.group("experiment", cls=Group)
def experiment_group() -> None:
    """Experiments from a spec file (TOML): workloads x loads x policies, resumable."""


@experiment_group.command("run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_option(
    "Experiment directory; runs of the same spec already done there are skipped.",
    file_okay=False,
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes running runs, this one included (default: the CPU count; few or short "
    "runs run here only); with --backend ray, the CPUs of the local Ray instance.",
)
@force_option(FORCE_HELP)
@backend_options
def experiment_run_cmd(
    spec: Path,
    output: Path,
    workers: int | None,
    force: bool,
    backend: str,
    address: str | None,
) -> None:
    """Run every (workload, load, policy) of SPEC not yet done into OUTPUT.

    Ctrl-C (SIGINT) or SIGTERM stops within about a second, keeping the runs completed; run the
    same command again to resume. With --backend ray the runs are Ray tasks (docs/ray.md); the
    results are the same and are written into OUTPUT on this machine.
    """
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec

    check_backend(backend, address, workers)
    outcome = run_experiment(
        load_spec(spec), output, workers=workers, force=force, backend=backend, address=address
    )
    summary(outcome)
    fail_on_failures(outcome)


def summary(outcome: Any) -> None:
    """Print what an experiment run did."""
    if outcome.replaced is not None:
        click.echo(f"moved the previous experiment's files to {outcome.replaced}")
    click.echo(
        f"{outcome.n_runs} runs: {outcome.ran} run now, {outcome.skipped} already done, "
        f"{len(outcome.failures)} failed ({outcome.wall_s:.1f} s) -> {outcome.out_dir}"
    )


def fail_on_failures(outcome: Any) -> None:
    """Exit with status 1, listing the runs that failed, if any did."""
    if outcome.failures:
        lines = "\n".join(f"  {rid}: {err}" for rid, err in sorted(outcome.failures.items()))
        msg = (
            f"{len(outcome.failures)} runs failed (tracebacks in "
            f"{outcome.out_dir / 'errors'}):\n{lines}"
        )
        raise click.ClickException(msg)
