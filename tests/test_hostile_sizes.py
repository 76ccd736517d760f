"""Hostile sizes (issue 23, split from ``test_hostile_inputs.py``): requests that cannot fit are
refused before any work in one line naming the option or field, and ``--allow-large`` goes
ahead; see ``test_hostile_memory.py`` for the limits the budget reads (issue 36)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedlab import io, sizes
from schedlab.errors import SizeError
from schedlab.jobset import JobSet
from schedlab.registry import make_policy
from schedlab.simulator.run import simulate
from tests.cli_helpers import run_fail, run_ok
from tests.spec_helpers import spec_toml, write_spec
from tests.test_hostile_inputs import error_line


@pytest.fixture(scope="module")
def jobs(small_jobs: Path) -> Path:
    return small_jobs


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 MiB memory budget (so that refusals do not depend on this machine's memory)."""
    monkeypatch.setenv(sizes.BUDGET_ENV, "1MiB")
    monkeypatch.delenv(sizes.ALLOW_ENV, raising=False)


# -- sizes -----------------------------------------------------------------------------------


def test_generate_refuses_what_cannot_fit_and_names_jobsets(tmp_path: Path) -> None:
    out = run_fail("generate", "deeprm", "--load", "0.7", "--jobsets", "1000000000", "-o",
                   str(tmp_path / "x.parquet"))  # fmt: skip
    line = error_line(out)
    assert "1,000,000,000 jobsets" in line
    assert "TiB" in line
    assert "--jobsets" in line
    assert "--allow-large" in line
    assert not (tmp_path / "x.parquet").exists()


def test_allow_large_goes_ahead(tmp_path: Path, budget: None) -> None:
    args = ["generate", "deeprm", "--load", "0.7", "--jobsets", "2000", "-o"]
    refused = run_fail(*args, str(tmp_path / "a"))
    assert "more than the 1.0 MiB of $SCHEDLAB_MEMORY_BUDGET" in refused
    assert "wrote" in run_ok("--allow-large", *args, str(tmp_path / "b"))
    assert sizes.ALLOW_ENV not in os.environ  # the flag lasts for its command only


def test_simulate_refuses_machines_that_cannot_fit(
    jobs: Path, tmp_path: Path, budget: None
) -> None:
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "--machines", "100000000", "-o",
                   str(tmp_path / "r.parquet"))  # fmt: skip
    assert "on 100,000,000 machines" in error_line(out)
    assert "--machines" in error_line(out)


def test_jobset_metadata_machines_are_a_size_too(jobs: Path, tmp_path: Path, budget: None) -> None:
    js = JobSet.read_parquet(jobs)
    many = 10**8  # machines of the same size: a cluster 10^8 times larger
    meta = {**js.meta.to_json(), "machines": many, "capacity": [c * many for c in js.capacity]}
    io.write_parquet(js.jobs, tmp_path / "many.parquet", meta)
    tampered = JobSet.read_parquet(tmp_path / "many.parquet")
    with pytest.raises(SizeError, match=r"100,000,000 machines.*JobSet's machines"):
        simulate(tampered, [make_policy("sjf")])


def spec_text(loads: str, jobsets: int) -> str:
    return spec_toml('"sjf"', name="big", reference="sjf", workload="w", loads=loads,
                     jobsets=jobsets)  # fmt: skip


@pytest.mark.parametrize(("loads", "jobsets", "shown"), [
    ("[0.5]", 1_000_000_000, "1,000,000,000 jobsets"),
    ("[1e6]", 2, "2.71e+07 expected jobs"),
])  # fmt: skip
def test_experiment_specs_are_sized_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loads: str, jobsets: int, shown: str
) -> None:
    monkeypatch.setenv(sizes.BUDGET_ENV, "4GiB")
    spec = write_spec(tmp_path, spec_text(loads, jobsets))
    out = run_fail("experiment", "run", str(spec), "-o", str(tmp_path / "out"))
    assert shown in error_line(out)
    assert "jobsets" in error_line(out)
    assert not (tmp_path / "out").exists()  # nothing was written, not even the -o folder


def test_a_trace_too_big_to_parse_is_refused(tmp_path: Path, budget: None) -> None:
    swf = tmp_path / "big.swf"
    row = "1 0 0 10 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    swf.write_text("; MaxProcs: 4\n" + row * 5000)
    out = run_fail("load", "swf", str(swf), "--no-cache", "-o", str(tmp_path / "j.parquet"))
    assert "parsing" in error_line(out)
    assert "big.swf" in error_line(out)


@pytest.mark.parametrize("value", ["0", "-1", "x", "1e999", "8XB"])
def test_a_bad_budget_names_its_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(sizes.BUDGET_ENV, value)
    with pytest.raises(ValueError, match=sizes.BUDGET_ENV):
        sizes.budget()


def test_budget_units() -> None:
    assert sizes.parse_bytes("8GiB") == 8 * 2**30
    assert sizes.parse_bytes("8e9") == 8e9
    assert sizes.parse_bytes("1.5 MB") == 1.5e6
    assert [sizes.human(x) for x in (5, 1024, 1.5 * 2**20, 373 * 2**30)] == [
        "5 B", "1.0 KiB", "1.5 MiB", "373.0 GiB"
    ]  # fmt: skip
