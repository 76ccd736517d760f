"""Hostile input beyond trace files (issue 23): outputs that are inputs, devices, FIFOs or a full
disk; empty and tampered JobSets; extreme and nested documents; options
that must be named. Every case is one ``Error:`` line naming its option, field or file, and
nothing the user did not name as an output is changed."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab import io
from schedlab.cli import main
from schedlab.cli.options import Command, OutputPath
from schedlab.errors import JobSetError, OutputError, SpecError, WorkloadModelError
from schedlab.evaluation.spec import load_spec
from schedlab.jobset import JobSet, JobSetMeta
from schedlab.loaders.workload.model import WorkloadModel
from schedlab.registry import make_policy
from schedlab.simulator.run import simulate
from tests.cli_helpers import run_fail, run_ok


@pytest.fixture(scope="module")
def jobs(small_jobs: Path) -> Path:
    return small_jobs


def error_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, out
    return lines[0]


def fingerprint(path: Path) -> tuple[str, int]:
    return io.sha256(path), path.stat().st_mtime_ns


# -- outputs ---------------------------------------------------------------------------------


def test_an_output_that_is_the_input_is_refused_before_any_work(jobs: Path, tmp_path: Path) -> None:
    before = fingerprint(jobs)
    link = tmp_path / "link.parquet"
    link.symlink_to(jobs)
    for source, output in [(jobs, jobs), (link, jobs), (jobs, link)]:
        out = run_fail("simulate", str(source), "--policy", "sjf", "-o", str(output))
        assert "is an input of this command" in error_line(out)
        assert "--output" in error_line(out)
    relative = os.path.relpath(jobs)
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", relative)
    assert "is an input of this command" in out
    assert fingerprint(jobs) == before
    assert link.is_symlink()


def test_writes_inside_a_command_refuse_its_inputs_too(jobs: Path) -> None:
    before = fingerprint(jobs)
    js = JobSet.read_parquet(jobs)
    with io.reading([jobs]), pytest.raises(OutputError, match="is an input of this command"):
        js.write_parquet(jobs)
    assert fingerprint(jobs) == before
    assert not list(jobs.parent.glob(".*.tmp"))


def test_a_fifo_is_refused_and_kept(jobs: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", str(fifo))
    assert "is a FIFO, not a regular file" in error_line(out)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    with pytest.raises(OutputError, match="FIFO"):
        io.write_text_atomic(fifo, "x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_a_device_is_refused_and_kept(jobs: Path, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", device)
    assert f"{device}: is a character device, not a regular file" in error_line(out)
    assert stat.S_ISCHR(Path(device).stat().st_mode)
    with pytest.raises(OutputError, match="character device"):
        io.write_text_atomic(device, "x")  # the library path refuses too, not only the CLI
    assert stat.S_ISCHR(Path(device).stat().st_mode)


@contextlib.contextmanager
def small_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` (root and a kernel that lets us: else skip the test)."""
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_a_real_full_disk_is_one_line_and_leaves_the_original(jobs: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.parquet"
    run_ok("generate", "deeprm", "--load", "0.9", "--jobsets", "2000", "-o", str(big))
    with small_tmpfs(tmp_path / "small", "size=64k") as small:
        (small / "r.parquet").write_text("previous results")
        out = run_fail("simulate", str(big), "--policy", "sjf", "-o", str(small / "r.parquet"))
        assert "r.parquet: cannot write: no space left on the device" in error_line(out)
        assert (small / "r.parquet").read_text() == "previous results"
        assert [p.name for p in small.iterdir()] == ["r.parquet"]  # no partial file


def test_a_read_only_disk_is_one_line(jobs: Path, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "ro", "size=64k,ro") as ro:
        out = run_fail("simulate", str(jobs), "--policy", "sjf", "-o", str(ro / "r.parquet"))
        assert "r.parquet" in error_line(out)
        assert "read-only file system" in error_line(out).lower()


def test_a_simulated_full_disk_from_polars_is_one_line(
    jobs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """polars' Rust writer reports ENOSPC as a ComputeError with '(os error 28)'."""
    target = tmp_path / "r.parquet"
    target.write_text("previous")

    def full(*_args: object, **_kwargs: object) -> None:
        raise pl.exceptions.ComputeError("No space left on device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    with pytest.raises(OutputError, match=r"r.parquet: cannot write: no space left") as info:
        JobSet.read_parquet(jobs).write_parquet(target)
    assert info.value.errno == 28
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.parquet"]


def test_permission_errors_name_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".x.tmp"))

    monkeypatch.setattr(io.tempfile, "mkstemp", denied)
    with pytest.raises(OutputError, match=r"out.txt: cannot write: permission denied"):
        io.write_text_atomic(tmp_path / "out.txt", "x")


# -- empty and tampered JobSets --------------------------------------------------------------


def test_an_empty_jobset(jobs: Path, tmp_path: Path) -> None:
    js = JobSet.read_parquet(jobs)
    empty = JobSet(js.jobs.head(0), js.meta)
    assert simulate(empty, [make_policy("sjf")]).table.height == 0  # the library: no rows
    empty.write_parquet(tmp_path / "empty.parquet")
    out = run_fail("simulate", str(tmp_path / "empty.parquet"), "-o", str(tmp_path / "r"))
    assert "empty.parquet: the JobSet holds no job" in error_line(out)


TAMPERED = [
    ("time_step_seconds", -5, "time_step_seconds: must be > 0 seconds"),
    ("time_step_seconds", "60", "time_step_seconds: expected number"),
    ("machines", 0, "machines: must be >= 1"),
    ("machines", 2.5, "machines: expected integer"),
    ("machines", True, "machines: expected integer"),
    ("capacity", [-1, 3], "capacity: every value must be > 0"),
    ("capacity", [10.0], "capacity: one capacity per resource"),
    ("capacity", [1e400, 3], "capacity: numbers must be finite"),
    ("resources", [], "resources: expected distinct non-empty names"),
    ("resources", ["cpu", "cpu"], "resources: expected distinct non-empty names"),
    ("resources", ["cpu", "duration"], "resources: expected distinct non-empty names"),
    ("resources", ["cpu", ""], "resources: expected distinct non-empty names"),
    ("units", ["core"], "units: one unit per resource"),
    ("arrival_window", 0, "arrival_window: must be >= 1 step"),
    ("length_buckets", {"short": [3, 1]}, "length_buckets.short: expected \\[low, high\\]"),
    ("length_buckets", {"short": "1-3"}, "length_buckets.short: expected list"),
    ("empty_jobsets", [-1], "empty_jobsets: every value must be >= 0"),
    ("provenance", [], "provenance: expected table"),
    ("schema_version", 2, "schema_version: 2 is not supported"),
    ("colour", "red", "colour: unknown key"),
]


@pytest.mark.parametrize(("field", "value", "message"), TAMPERED)
def test_tampered_jobset_metadata_names_the_field(
    jobs: Path, tmp_path: Path, field: str, value: object, message: str
) -> None:
    js = JobSet.read_parquet(jobs)
    meta = {**js.meta.to_json(), field: value}
    path = tmp_path / "tampered.parquet"
    io.write_parquet(js.jobs, path, meta)
    with pytest.raises(JobSetError, match=rf"tampered.parquet \(metadata\): {message}"):
        JobSet.read_parquet(path)
    out = run_fail("simulate", str(path), "--policy", "sjf", "-o", str(tmp_path / "r.parquet"))
    assert "tampered.parquet (metadata)" in error_line(out)


def test_nested_jobset_metadata(jobs: Path, tmp_path: Path) -> None:
    js = JobSet.read_parquet(jobs)
    path = tmp_path / "nested.parquet"
    js.jobs.write_parquet(path, metadata={io.METADATA_KEY: "[" * 100_000 + "]" * 100_000})
    out = run_fail("simulate", str(path), "--policy", "sjf", "-o", str(tmp_path / "r.parquet"))
    assert "nested.parquet (metadata): not a JSON document schedlab reads" in error_line(out)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip
AGREEING = {"resources": ("capacity", "units")}
"""Fields checked against another: changing one may be reported at the other."""
META = JobSetMeta(resources=("cpu", "mem"), capacity=(10.0, 4.0), length_buckets={"s": (1, 3)})


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(sorted(META.to_json())), value=JSON)
def test_any_metadata_value_is_accepted_or_names_its_field(field: str, value: object) -> None:
    doc = {**META.to_json(), field: value}
    try:
        meta = JobSetMeta.from_json(doc, source="m")
    except JobSetError as exc:
        message = str(exc)
    else:
        assert JobSetMeta.from_json(meta.to_json()) == meta  # what is accepted round-trips
        return
    named = {field, *AGREEING.get(field, ())}  # a field the changed one must agree with
    assert any(message.startswith(f"m: {f}") for f in named), message


# -- model.json and specs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_doc() -> dict:
    return {
        "kind": "workload_model", "schema_version": 1, "resources": ["cpu"], "capacity": [10],
        "window": 100,
        "durations": {"family": "lognormal", "params": {"mu": 1.0, "sigma": 1.0}, "max_steps": 50},
        "arrivals": {"kind": "poisson", "rate_per_step": 0.5},
        "demands": {"class_edges": [], "classes": [{"values": [[1.0]], "probs": [1.0]}]},
    }  # fmt: skip


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["durations"]["params"].update(mu=1e300), "durations.params: .*no usable"),
    (lambda d: d["durations"]["params"].update(sigma=-1), "durations.params: .*must be > 0"),
])  # fmt: skip
def test_extreme_model_parameters_name_the_field(
    model_doc: dict, edit: object, message: str
) -> None:
    doc = json.loads(json.dumps(model_doc))
    edit(doc)  # type: ignore[operator]
    with pytest.raises(WorkloadModelError, match=rf"^model.json: {message}"):
        WorkloadModel.from_json(doc, source="model.json")


def test_a_huge_model_window_is_a_size(model_doc: dict, tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**model_doc, "window": 10**15}))
    out = run_fail("generate", "fitted", "--model", str(path), "--load", "0.5", "--jobsets", "2",
                   "-o", str(tmp_path / "g.parquet"))  # fmt: skip
    assert "window" in error_line(out)
    assert "needs about" in error_line(out)


def test_nested_documents_are_one_line(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    model.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(WorkloadModelError, match=r"model.json: not a JSON document"):
        WorkloadModel.load(model)
    spec = tmp_path / "spec.toml"
    spec.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SpecError, match=r"spec.toml: not a TOML document"):
        load_spec(spec)
    out = run_fail("experiment", "run", str(spec), "-o", str(tmp_path / "out"))
    assert "spec.toml: not a TOML document" in error_line(out)


# -- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["generate", "deeprm", "--load", "0.5"],
    ["demo"],
    ["fit", "{jobs}"],
    ["load", "swf", "{swf}"],
])  # fmt: skip
def test_a_negative_seed_names_seed(jobs: Path, tmp_path: Path, command: list[str]) -> None:
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n1 0 0 10 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    args = [a.format(jobs=jobs, swf=swf) for a in command]
    out = run_fail(*args, "--seed", "-1", "-o", str(tmp_path / "o"))
    assert "Invalid value for '--seed': -1 is not in the range x>=0" in out


def _commands(group: click.Group, ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _commands(command, ctx)
        else:
            yield name, command


def test_every_command_protects_its_inputs() -> None:
    """Every command is a :class:`schedlab.cli.options.Command` (outputs checked against inputs),
    and every ``-o`` is an :class:`OutputPath` (so it is not taken for an input)."""
    ctx = click.Context(main)
    commands = dict(_commands(main, ctx))
    assert {"simulate", "generate", "load", "run", "deeprm"} <= set(commands)
    for name, command in commands.items():
        assert isinstance(command, Command), name
        for param in command.params:
            if param.name == "output":
                assert isinstance(param.type, OutputPath), name


def test_a_learned_policy_on_another_cluster_shape_fails_before_allocating(
    jobs: Path, tmp_path: Path
) -> None:
    """A checkpoint of 1 machine on 10^7 machines used to build a 10^7-machine observation
    dictionary (killed by the kernel); now it is refused from the trained geometry first."""
    out = run_fail("simulate", str(jobs), "--policy", "deeprm:checkpoint=deeprm-0.7",
                   "--machines", "10000000", "-o", str(tmp_path / "r.parquet"))  # fmt: skip
    assert "trained on 1 machines but this cluster has 10000000; use --machines 1" in out
