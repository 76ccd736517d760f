"""Issue 24 changed the code's shape, not its results: every shipped experiment spec, cut to
its highest load, 2 jobsets per generated workload and a sample of 200 rows of a trace, gives
the same schedules (start and finish of every job under every policy, learned ones included)
as before the change.

Each digest covers ``job_id``, ``start`` and ``finish`` of every row, sorted by workload, load,
jobset and job, so it names which job ran when. ``tests/data/unchanged.json`` holds the schedules
of commit 0a48906 (before issue 24; a spec added later, e.g. ``kth_replay``, those of the commit
that adds it): until commit 4252d04 the digests left ``job_id`` out, and they were re-recorded
with it when that commit still gave the old ones. ``python tests/test_unchanged.py`` prints the
current ones (record them only for a change that is meant to change schedules, and say so in
its commit).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest

from schedlab.evaluation.runner import run_experiment
from schedlab.evaluation.spec import parse_spec_dict

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "experiments").glob("*.toml"))
RECORDED = Path(__file__).parent / "data" / "unchanged.json"


def small_spec(path: Path) -> dict:
    """The spec of ``path`` at its highest load, 2 jobsets per generated workload, a sample of
    200 tasks or jobs of a trace (in 2 windows of 50 where the spec samples windows)."""
    data = tomllib.loads(path.read_text())
    for w in data.get("workloads", []):
        if "generator" in w:
            w["jobsets"] = 2
        else:
            w["options"] = {**w.get("options", {}), "sample": 200}
            if "windows" in w["options"]:
                w["options"].update(windows=2, jobset_size=50)
        for key in ("loads", "rates"):
            if key in w:
                w[key] = w[key][-1:]
    return data


def digests(path: Path, out: Path) -> dict[str, str]:
    """Policy -> sha256 of the schedule of every job of the small spec of ``path``."""
    spec = parse_spec_dict(small_spec(path), base_dir=path.parent, source=str(path))
    run_experiment(spec, out, workers=1, progress=False)
    results = pl.read_parquet(out / "results.parquet")
    keys = ["workload", "load", "jobset", "job_id"]
    out_digests = {}
    for (policy,), part in results.sort([*keys, "policy"]).group_by("policy", maintain_order=True):
        table = part.select(*keys, "start", "finish")
        out_digests[str(policy)] = hashlib.sha256(table.write_csv().encode()).hexdigest()[:16]
    return dict(sorted(out_digests.items()))


@pytest.mark.slow
@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_specs_schedule_as_before(path: Path, tmp_path: Path) -> None:
    expected = json.loads(RECORDED.read_text())[path.stem]
    assert digests(path, tmp_path / "run") == expected


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = {p.stem: digests(p, Path(tmp) / p.stem) for p in SPECS}
    json.dump(found, sys.stdout, indent=1, sort_keys=True)
