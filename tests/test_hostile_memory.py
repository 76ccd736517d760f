"""Training and memory (issue 36): the memory budget reads every limit in force (MemAvailable,
cgroup v1 and v2 at every level, RLIMIT_AS and RLIMIT_DATA), so ``--machines 100000000`` under
``ulimit -v`` is refused by the size check; a ``MemoryError`` that still escapes is one line
with the options to lower; a full disk while ``schedlab train`` writes a checkpoint is one line
naming the file."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab import sizes
from tests.cli_helpers import run_fail
from tests.test_hostile_inputs import small_tmpfs

SCHEDLAB = Path(sys.executable).with_name("schedlab")
GiB = 2**30


def cgroup_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("own", "files", "room"),
    [
        (  # v2: the process's own cgroup is limited
            "0::/jobs/a\n",
            {"jobs/a/memory.max": f"{4 * GiB}\n", "jobs/a/memory.current": f"{GiB}\n"},
            3 * GiB,
        ),
        (  # v2: an ancestor is tighter; "max" means none
            "0::/jobs/a\n",
            {
                "jobs/a/memory.max": "max\n",
                "jobs/memory.max": f"{2 * GiB}\n",
                "jobs/memory.current": f"{GiB // 2}\n",
            },
            GiB + GiB // 2,
        ),
        (  # v1: the memory controller's folder; 2^63 rounded to a page is no limit
            "4:memory:/slurm/job7\n3:cpu:/\n",
            {
                "memory/slurm/job7/memory.limit_in_bytes": f"{8 * GiB}\n",
                "memory/slurm/job7/memory.usage_in_bytes": f"{3 * GiB}\n",
                "memory/memory.limit_in_bytes": "9223372036854771712\n",
            },
            5 * GiB,
        ),
    ],
)
def test_cgroup_limits_v1_and_v2(
    own: str, files: dict[str, str], room: int, tmp_path: Path
) -> None:
    root = cgroup_tree(tmp_path / "cgroup", files)
    proc = cgroup_tree(tmp_path / "proc", {"cgroup": own, "status": "VmSize:\t100 kB\n"})
    avail, what = sizes.limits(cgroup=root, proc=proc, getrlimit=lambda _: (-1, -1))
    assert avail == room
    assert what == "left under this process's cgroup memory limit"


def test_rlimits_count_what_the_process_already_maps(tmp_path: Path) -> None:
    proc = cgroup_tree(
        tmp_path / "proc", {"cgroup": "0::/\n", "status": "VmSize:\t1048576 kB\nVmData:\t10 kB\n"}
    )

    def getrlimit(which: int) -> tuple[int, int]:
        limits = {resource.RLIMIT_AS: 3 * GiB, resource.RLIMIT_DATA: 100 * GiB}
        return (limits.get(which, resource.RLIM_INFINITY), resource.RLIM_INFINITY)

    avail, what = sizes.limits(cgroup=tmp_path / "none", proc=proc, getrlimit=getrlimit)
    assert avail == 2 * GiB
    assert "address-space limit (ulimit -v)" in what


def test_machines_past_an_address_space_limit_are_refused(small_jobs: Path, tmp_path: Path) -> None:
    command = (
        f"ulimit -v 8000000 && {SCHEDLAB} simulate {small_jobs} --policy sjf "
        f"--machines 100000000 -o {tmp_path / 'r.parquet'}"
    )
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "100,000,000 machines" in line
    assert "left under this process's address-space limit (ulimit -v)" in line
    assert "lower --machines" in line


def test_a_memory_error_that_escapes_is_one_line(
    small_jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import schedlab.simulator.run as run

    def out_of_memory(*_args: object, **_kwargs: object) -> None:
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(run, "simulate", out_of_memory)
    out = run_fail("simulate", str(small_jobs), "--policy", "sjf", "-o", "x.parquet")
    lines = [line for line in out.splitlines() if line.startswith("Error:")]
    assert lines == [lines[0]]
    assert "schedlab simulate ran out of memory (Allocation failed (probably too large))" in out
    assert "lower --machines, --horizon or --slots" in out
    assert "$SCHEDLAB_MEMORY_BUDGET" in out


def test_a_full_disk_while_training_is_one_line(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "size=200k") as small:
        args = ["train", "deeprm", "--iterations", "2", "--jobsets", "2", "--rollouts", "2"]
        out = run_fail(*args, "-o", str(small / "run"))
        assert f"{small / 'run'}/" in out
        assert "cannot write: no space left on the device" in out
        assert "inline_container" not in out
        assert not list(small.glob("run/.*.tmp"))  # no partial checkpoint left
