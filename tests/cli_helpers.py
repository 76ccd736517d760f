"""Invoking the ``schedlab`` CLI in-process from tests."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from schedlab.cli import main


def run_ok(*args: str) -> str:
    """Run ``schedlab ARGS``; assert success and return the output."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def run_fail(*args: str) -> str:
    """Run ``schedlab ARGS``; assert a one-line failure (no traceback) and return the output."""
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    return result.output


def options(**values: object) -> list[str]:
    """Command-line options from keywords, in order: ``options(eval_jobsets=2, load="90%")`` is
    ``["--eval-jobsets", "2", "--load", "90%"]``."""
    return [
        arg for key, value in values.items() for arg in (f"--{key.replace('_', '-')}", str(value))
    ]


def resume_to_three_iterations(trainer: str, out: Path) -> str:
    """``schedlab train TRAINER --resume --iterations 3 -o OUT``: a success that says it
    continued; its output. Run once more, it says the run is complete and trains nothing."""
    args = ("train", trainer, "--resume", "--iterations", "3", "-o", str(out))
    output = run_ok(*args)
    assert "(continued from " in output, output
    again = run_ok(*args)
    assert "was already complete (3 iterations): nothing trained" in again, again
    return output
