"""Experiments on Ray (``--backend ray``): the same runs as the local backend, resumable after
an interruption, failures recorded per run; without Ray, one line saying how to get it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from schedlab.errors import BackendError, Interrupted
from schedlab.evaluation import runner
from schedlab.evaluation.backends import Result
from schedlab.evaluation.ray_backend import RayBackend, RaySession
from schedlab.evaluation.runner import run_experiment
from schedlab.evaluation.runs import plan
from schedlab.evaluation.spec import load_spec
from schedlab.results import Results
from tests.cli_helpers import run_fail, run_ok
from tests.spec_helpers import spec_toml, write_spec

SPEC = spec_toml(
    '"sjf", "fcfs", "tetris", { spec = "deeprm:checkpoint=deeprm-0.7", name = "deeprm" }',
    name="tiny", seed=3, reference="tetris", loads="[0.5, 1.3]", jobsets=4, workload_seed=11,
)  # fmt: skip
N_RUNS = 8
VARYING = ("wall_s",)
"""Run metadata that differs between two executions of the same run."""


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny experiment run by the local backend (serially)."""
    tmp = tmp_path_factory.mktemp("local")
    outcome = run_experiment(
        load_spec(write_spec(tmp, SPEC)), tmp / "out", workers=1, progress=False
    )
    assert (outcome.ran, outcome.failures) == (N_RUNS, {})
    return tmp / "out"


def assert_same_runs(a: Path, b: Path) -> None:
    """Every run file of ``a`` equals that of ``b``: table, and metadata but for wall times
    and the paths inside the experiment directory."""
    spec = load_spec(a / "spec.toml")
    for task in plan(spec, a):
        name = Path(task.out_path).name
        ra, rb = Results.read_parquet(task.out_path), Results.read_parquet(b / "runs" / name)
        assert ra.table.equals(rb.table), name
        assert {k: v for k, v in ra.meta.items() if k != "run"} == {
            k: v for k, v in rb.meta.items() if k != "run"
        }
        paths = ("out_path", "error_path", "jobsets_path")
        meta_a, meta_b = ({k: v for k, v in r.meta["run"].items() if k not in VARYING + paths}
                          for r in (ra, rb))  # fmt: skip
        assert meta_a == meta_b, name
    table = Results.read_parquet(a / "results.parquet").table
    assert table.equals(Results.read_parquet(b / "results.parquet").table)
    summaries = [pl.read_csv(d / "runs.csv").drop("wall_s", strict=False) for d in (a, b)]
    assert summaries[0].equals(summaries[1])


def ray() -> RayBackend:
    """A backend on the Ray of this process (the session's instance)."""
    return RayBackend(RaySession())


@pytest.mark.slow
def test_ray_gives_identical_runs_to_the_local_backend(
    ray_instance: ModuleType, local: Path, tmp_path: Path
) -> None:
    spec = load_spec(local / "spec.toml")
    outcome = run_experiment(spec, tmp_path / "ray", backend=ray(), progress=False)
    assert (outcome.ran, outcome.skipped, outcome.failures) == (N_RUNS, 0, {})
    assert_same_runs(local, tmp_path / "ray")
    assert ray_instance.is_initialized()  # a Ray started by someone else is left running
    again = run_experiment(spec, tmp_path / "ray", backend=ray(), progress=False)
    assert (again.ran, again.skipped) == (0, N_RUNS)


class StopAfter(RayBackend):
    """A Ray backend interrupted (as by Ctrl-C) after ``n`` results."""

    def __init__(self, n: int) -> None:
        super().__init__(RaySession())
        self.n = n

    def completed(self) -> Iterator[Result]:
        for k, result in enumerate(super().completed(), start=1):
            yield result
            if k == self.n:
                raise KeyboardInterrupt


@pytest.mark.slow
def test_an_interrupted_ray_experiment_resumes_to_the_same_results(
    ray_instance: ModuleType, local: Path, tmp_path: Path
) -> None:
    spec = load_spec(local / "spec.toml")
    out = tmp_path / "ray"
    with pytest.raises(Interrupted, match=r"after 2 of 8 runs \(2 now\); run the same command"):
        run_experiment(spec, out, backend=StopAfter(2), progress=False)
    done = sorted(p.name for p in (out / "runs").iterdir())
    assert len(done) == 2  # the running tasks were stopped, not written
    assert not list(out.rglob(".*.tmp"))
    resumed = run_experiment(spec, out, backend=ray(), progress=False)
    assert (resumed.ran, resumed.skipped, resumed.failures) == (N_RUNS - 2, 2, {})
    assert_same_runs(local, out)


def test_a_failing_run_is_recorded_while_the_others_finish(
    ray_instance: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "bad.pt").write_text("not a checkpoint")
    text = SPEC.replace("deeprm:checkpoint=deeprm-0.7", "deeprm:checkpoint=bad.pt")
    out = tmp_path / "out"
    outcome = run_experiment(load_spec(write_spec(tmp_path, text)), out, backend=ray(),
                             progress=False)  # fmt: skip
    assert outcome.ran == N_RUNS - 2
    assert sorted(outcome.failures) == ["deeprm__load130__deeprm", "deeprm__load50__deeprm"]
    info = json.loads((out / "errors" / "deeprm__load50__deeprm.json").read_text())
    assert info["error"] == "CheckpointError"
    assert "Traceback" in info["traceback"]
    assert sorted(pl.read_csv(out / "runs.csv")["status"]).count("failed") == 2


def test_an_error_reported_by_ray_is_recorded_as_the_runs_failure(
    ray_instance: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = SPEC.replace(', { spec = "deeprm:checkpoint=deeprm-0.7", name = "deeprm" }', "")
    spec = load_spec(write_spec(tmp_path, text))
    monkeypatch.setattr(runner, "compute", os.path.join)  # a TypeError on the worker
    outcome = run_experiment(spec, tmp_path / "out", backend=RayBackend(RaySession(), retries=0),
                             progress=False)  # fmt: skip
    assert outcome.ran == 0
    assert len(outcome.failures) == 6
    assert all("TypeError" in e and "\n" not in e for e in outcome.failures.values())
    info = json.loads(next((tmp_path / "out" / "errors").iterdir()).read_text())
    assert "posixpath" in info["traceback"]


def test_a_worker_that_dies_is_reported_and_the_other_tasks_complete(
    ray_instance: ModuleType,
) -> None:
    tasks = RayBackend(RaySession(), retries=0)
    tasks.submit("dies", lambda: os._exit(3))
    tasks.submit("lives", lambda: os.getpid())
    got = {key: (value, error) for key, value, error in tasks.completed()}
    assert isinstance(got["dies"][1], ray_instance.exceptions.WorkerCrashedError)
    assert got["lives"][1] is None
    assert isinstance(got["lives"][0], int)
    assert got["lives"][0] != os.getpid()  # it ran in a worker process
    assert len(tasks) == 0


def test_the_jobsets_are_shared_through_the_object_store_once(
    ray_instance: ModuleType, local: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_spec(local / "spec.toml")
    puts: list[object] = []
    real_put = RayBackend.put
    monkeypatch.setattr(RayBackend, "put", lambda self, v: puts.append(v) or real_put(self, v))
    outcome = run_experiment(spec, tmp_path / "ray", backend=ray(), progress=False)
    assert (outcome.ran, outcome.failures) == (N_RUNS, {})
    assert len(puts) == 2  # one workload of two loads, each put once for its 4 runs
    assert sorted(len(js.jobset_ids) for js in puts) == [4, 4]  # type: ignore[attr-defined]


def test_without_ray_the_backend_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(BackendError, match=r"pip install '\.\[ray\]'"):
        RaySession().start()
    out = run_fail("experiment", "run", str(write_spec(tmp_path, SPEC)), "-o", str(tmp_path / "o"),
                   "--backend", "ray")  # fmt: skip
    assert out.strip().splitlines() == [
        "Error: the ray backend needs Ray, which is not installed: install schedlab's 'ray' extra "
        "from its source tree: pip install '.[ray]' (make venv installs every extra)"
    ]
    assert not (tmp_path / "o" / "runs").exists()


def test_backend_options_that_mean_nothing_are_refused(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, SPEC))
    out = run_fail("experiment", "run", spec, "-o", str(tmp_path / "o"), "--address", "auto")
    assert "--address auto names a Ray cluster; add --backend ray" in out
    out = run_fail("experiment", "run", spec, "-o", str(tmp_path / "o"), "--backend", "ray",
                   "--address", "auto", "--workers", "2")  # fmt: skip
    assert "--workers 2 sets the CPUs of a local Ray instance" in out


@pytest.mark.slow
def test_an_unreachable_cluster_is_one_line_naming_the_address(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    # An address nothing listens at ("auto" would join any Ray that a parallel test runs), and
    # Ray's connect retries shortened (about 40 s instead of minutes).
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env |= {"RAY_gcs_server_port_wait_time_s": "1", "RAY_gcs_server_request_timeout_seconds": "2"}
    cmd = [sys.executable, "-c", "from schedlab.cli import main; main()", "experiment", "run",
           str(write_spec(tmp_path, SPEC)), "-o", str(tmp_path / "o"), "--backend", "ray",
           "--address", "127.0.0.1:9"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: could not connect to the Ray cluster at '127.0.0.1:9'")
    assert "is `ray start --head` running there" in last


@pytest.mark.slow
def test_the_command_line_runs_on_ray(
    ray_instance: ModuleType, local: Path, tmp_path: Path
) -> None:
    out = run_ok("experiment", "run", str(local / "spec.toml"), "-o", str(tmp_path / "o"),
                 "--backend", "ray")  # fmt: skip
    assert f"{N_RUNS} runs: {N_RUNS} run now, 0 already done, 0 failed" in out
    assert_same_runs(local, tmp_path / "o")


def descendants(pid: int) -> set[int]:
    """Process ids of every live descendant of ``pid`` (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found.update(kids)
        todo += kids
    return found


def alive(pids: set[int]) -> set[int]:
    """The processes of ``pids`` still running (not gone, not zombies)."""
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_sigterm_stops_a_ray_experiment_leaves_no_ray_process_and_the_rerun_resumes(
    tmp_path: Path,
) -> None:
    pytest.importorskip("ray")
    spec = write_spec(tmp_path, SPEC.replace("jobsets = 4", "jobsets = 400"))
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from schedlab.cli import main; main()", "experiment", "run",
           str(spec), "-o", str(out), "--backend", "ray", "--workers", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((out / "runs").glob("*.parquet")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no run finished in time"
        time.sleep(0.05)
    ray_processes = descendants(proc.pid)
    assert ray_processes  # Ray's GCS, raylet, workers...
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by SIGTERM after" in err
    for _ in range(100):  # Ray's processes stop with the command
        if not alive(ray_processes):
            break
        time.sleep(0.1)
    assert not alive(ray_processes)
    assert not list(out.rglob(".*.tmp"))
    done = len(list((out / "runs").iterdir()))
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{N_RUNS - done} run now, {done} already done" in rerun.stdout
