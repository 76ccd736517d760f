"""The public conformance checks, over every registered generator and loader, and on broken ones."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from schedlab.loaders import check_generator, check_loader
from schedlab.loaders.generators.base import Sample
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.swf import read_swf
from schedlab.registry import generators, loaders
from schedlab.traces import bundled, sample_for
from tests.fit_helpers import known_model
from tests.loaders.generators.example_generator import Steady


def _fitted_params(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "model.json"
    known_model(kind="nhpp", batches=True).save(path)
    return {"model": str(path)}


GENERATOR_PARAMS: dict[str, Callable[[Path], dict[str, Any]]] = {"fitted": _fitted_params}
"""Parameters a registered generator needs (the others take none)."""


@pytest.mark.parametrize("name", generators.names())
def test_every_registered_generator_conforms(name: str, tmp_path: Path) -> None:
    params = GENERATOR_PARAMS[name](tmp_path) if name in GENERATOR_PARAMS else {}
    check_generator(name, params=params)


@pytest.mark.parametrize("name", loaders.names())
def test_every_registered_loader_conforms(name: str, tmp_path: Path) -> None:
    sample = sample_for(name)  # its first lines make the loader's small example file
    assert sample is not None, f"add the new loader {name!r}'s sample to traces.SAMPLES"
    with gzip.open(bundled(sample), "rb") as fh:
        head = b"".join(fh.readline() for _ in range(300))
    source = tmp_path / "example.txt"
    source.write_bytes(head)
    result = check_loader(name, source)
    assert result.report.rows_read > 200


def test_a_new_generator_is_one_file_and_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generators, "_entries", dict(generators._entries))  # undone after
    generators.register(
        "steady", "tests.loaders.generators.example_generator:Steady", "identical jobs"
    )
    check_generator("steady")
    assert generators.make("steady", duration=3).generate(0.5, n_jobsets=2, seed=0).jobs.height


@dataclass(frozen=True, kw_only=True, slots=True)
class _SeedBlind(Steady):
    name: ClassVar[str] = "seed-blind"

    def sample(self, rng: np.random.Generator, rate: float, n_jobsets: int) -> Sample:
        return Steady.sample(self, np.random.default_rng(0), rate, n_jobsets)


@dataclass(frozen=True, kw_only=True, slots=True)
class _WrongLoad(Steady):
    name: ClassVar[str] = "wrong-load"

    def load_per_rate(self) -> float:
        return 2 * Steady.load_per_rate(self)


def test_check_generator_fails_on_broken_generators() -> None:
    with pytest.raises(AssertionError, match="the seed is ignored"):
        check_generator(_SeedBlind)
    with pytest.raises(AssertionError, match=r"target load 0\.7 but the pooled offered load"):
        check_generator(_WrongLoad())


def _fragile(source: Any, *, options: Any = None) -> LoadResult:
    """An SWF loader that crashes on empty files instead of raising TraceFormatError."""
    if Path(source).stat().st_size == 0:
        raise IndexError("list index out of range")
    return read_swf(source, options=options)


def _forgetful(source: Any, *, options: Any = None) -> LoadResult:
    """An SWF loader whose drop report forgets the dropped rows' samples."""
    result = read_swf(source, options=options)
    return LoadResult(result.jobs, replace(result.report, samples=result.report.samples.head(0)))


def test_check_loader_fails_on_broken_loaders(tmp_path: Path) -> None:
    source = tmp_path / "small.swf"
    with gzip.open(bundled("kth-sp2"), "rb") as fh:
        source.write_bytes(b"".join(fh.readline() for _ in range(100)))
    check_loader(read_swf, source)
    with pytest.raises(AssertionError, match=r"empty file: IndexError .*expected TraceFormatError"):
        check_loader(_fragile, source)
    with pytest.raises(AssertionError, match="is not among the report's samples"):
        check_loader(_forgetful, source)
