"""``schedlab check``: the registries' conformance checks on one name, for plug-in authors.

Like scikit-learn's ``check_estimator``: ``schedlab check policy my_pkg.sched:Lwf`` runs
:func:`~schedlab.policies.check.check_policy`, ``check generator`` and ``check loader`` the
loader and generator checks (:mod:`schedlab.loaders.check`), ``check trainer`` the trainer check
(:func:`~schedlab.evaluation.train_check.check_trainer`), on a built-in name, an installed
plug-in's name or a ``package.module:attr`` reference. ``check plugins`` runs them on every
installed plug-in, naming each one as it imports it; an import that does not end within
``--timeout`` seconds (a plug-in that loops at import) is a failure, and the others go on (a
loop inside compiled code cannot be interrupted). A failure is one line naming the broken rule,
exit status 1.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from schedlab.cli.options import Group, one_line, param_option, seed_option
from schedlab.errors import SchedlabError, UnknownNameError
from schedlab.registry import Registry, generators, loaders, make_policy, policies, trainers

IMPORT_TIMEOUT = 60.0
"""Seconds a plug-in's import may take in ``check plugins`` (``--timeout``)."""


class _TooLong(BaseException):
    """An import ran past its time (a BaseException: a plug-in's ``except Exception`` and the
    registry's one-line import errors let it through)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_TooLong` in the block after ``seconds`` (SIGALRM; main thread only)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(_signum: int, _frame: object) -> None:
        msg = f"its import did not end within {seconds:g} s (a loop at import?; --timeout)"
        raise _TooLong(msg)

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _import_plugins(kind: str, registry: Registry, timeout: float) -> None:
    """Import each installed plug-in of ``registry``, naming it first; one whose import does
    not end within ``timeout`` seconds is set aside as broken (reported with the others)."""
    for ep in importlib.metadata.entry_points(group=registry.group or ""):
        click.echo(f"importing {kind} plug-in {ep.name!r} ({ep.value}) ...", err=True)
        try:
            with _time_limit(timeout):
                registry.entry(ep.name)
        except UnknownNameError:
            pass  # it cannot be imported: listed among the broken below
        except _TooLong as exc:
            registry.refuse(ep.name, f"{kind} {ep.name!r} ({ep.value}): {exc}")


def _run(what: str, check: Callable[[], Any]) -> bool:
    """Run ``check``; print ``ok`` with its time, or ``FAILED`` with the broken rule (or the
    error that made the object unusable); whether it passed."""
    start = time.perf_counter()
    try:
        check()
    except (AssertionError, SchedlabError, TypeError, ValueError, AttributeError) as exc:
        click.echo(f"FAILED {what}: {one_line(exc)}", err=True)
        return False
    click.echo(f"ok {what} ({time.perf_counter() - start:.1f} s)")
    return True


def _exit(passed: bool) -> None:
    if not passed:
        raise SystemExit(1)


def _policy(spec: str, seed: int) -> bool:
    from schedlab.policies.check import check_policy

    return _run(f"policy {spec!r}", lambda: check_policy(make_policy(spec), seed=seed))


def _generator(name: str, params: dict[str, Any], seed: int) -> bool:
    from schedlab.loaders.check import check_generator

    generators.entry(name)  # an unknown name: one line, not a failed check
    return _run(f"generator {name!r}", lambda: check_generator(name, params=params, seed=seed))


def _loader(name: str, source: Path, params: dict[str, Any]) -> bool:
    from schedlab.loaders.check import check_loader

    loaders.entry(name)
    return _run(f"loader {name!r} on {source}", lambda: check_loader(name, source, **params))


def _trainer(name: str) -> bool:
    from schedlab.evaluation.train_check import TrainerCheckError, check_trainer

    def check() -> None:
        with tempfile.TemporaryDirectory() as out:
            try:
                check_trainer(name, out)
            except TrainerCheckError as exc:
                raise AssertionError(str(exc)) from exc

    trainers.entry(name)
    return _run(f"trainer {name!r}", check)


@click.group("check", cls=Group)
def check_group() -> None:
    """Check that a policy, generator, loader or trainer keeps schedlab's contract (a built-in
    name, a plug-in's or package.module:attr)."""


@check_group.command("policy")
@click.argument("spec")
@seed_option("Seed of the small DeepRM jobsets the policy schedules.")
def policy_cmd(spec: str, seed: int) -> None:
    """Check policy SPEC (e.g. sjf+easy, my_pkg.sched:Lwf): valid actions, reproducible and
    feasible schedules, get_params, pickling."""
    _exit(_policy(spec, seed))


@check_group.command("generator")
@click.argument("name")
@param_option("Generator parameter, e.g. -p model=fit/model.json.")
@seed_option("Seed of the jobsets generated.")
def generator_cmd(name: str, params: dict[str, Any], seed: int) -> None:
    """Check generator NAME: reproducible from its seed, valid JobSets with provenance, the
    offered load asked for, bad arguments refused."""
    _exit(_generator(name, params, seed))


@check_group.command("loader")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@param_option("Format option of the loader, e.g. -p granularity=job.")
def loader_cmd(name: str, source: Path, params: dict[str, Any]) -> None:
    """Check loader NAME on SOURCE, a small valid trace file (a few hundred lines): every row
    accounted for, malformed and hostile files reported, reproducible, cached."""
    _exit(_loader(name, source, params))


@check_group.command("trainer")
@click.argument("name")
def trainer_cmd(name: str) -> None:
    """Check trainer NAME on its smallest run: trains, resumes, sweeps."""
    _exit(_trainer(name))


@check_group.command("plugins")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Seed of the policy and generator checks.",
)
@click.option(
    "--timeout",
    default=IMPORT_TIMEOUT,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds a plug-in's import may take (0: no limit); one that takes longer fails.",
)
def plugins_cmd(seed: int, timeout: float) -> None:
    """Check every installed plug-in (entry points of the schedlab.* groups), each failure one
    line, exit status 1 if any failed; a loader is checked on the file its `sample` attribute
    names, else skipped with a note; a plug-in that cannot be imported, or whose import takes
    more than --timeout seconds, fails."""
    results: list[bool] = []
    registries = {
        "policy": policies,
        "generator": generators,
        "loader": loaders,
        "trainer": trainers,
    }
    for kind, registry in registries.items():
        _import_plugins(kind, registry, timeout)
        for entry in registry:
            if entry.origin == "schedlab":
                continue
            if kind == "policy":
                results.append(_policy(entry.name, seed))
            elif kind == "generator":
                results.append(_generator(entry.name, {}, seed))
            elif kind == "trainer":
                results.append(_trainer(entry.name))
            elif (sample := getattr(loaders.load(entry.name), "sample", None)) is None:
                click.echo(f"skipped loader {entry.name!r}: it names no `sample` file")
            else:
                results.append(_loader(entry.name, Path(sample), {}))
        for name, why in registry.broken().items():
            click.echo(f"FAILED {kind} {name!r}: {why}", err=True)
            results.append(False)
    if not results:
        click.echo("no plug-in is installed (entry-point groups schedlab.policies, ...)")
    _exit(all(results))
