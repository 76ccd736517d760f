"""Liu's experiment specs and a multi-cluster experiment end to end through the runner."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import SpecError
from schedlab.evaluation.analysis import AnalysisConfig, policy_summary
from schedlab.evaluation.collect import read_experiment
from schedlab.evaluation.metrics import per_jobset
from schedlab.evaluation.runner import run_experiment
from schedlab.evaluation.spec import ExperimentSpec, load_spec
from schedlab.loaders.generators.liu_multicluster import LiuMultiClusterGenerator
from schedlab.reports.liu import write_experiment_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["liu_uniform", "liu_patterns"])
def test_shipped_specs_validate(name: str) -> None:
    spec = load_spec(ROOT / "experiments" / f"{name}.toml")
    assert ExperimentSpec.from_json(spec.to_json()) == spec
    assert spec.reference == "MAF"
    assert spec.metrics.primary == "tmdl"
    names = [p.name for p in spec.policies] + [s[0] for s in spec.skipped]
    assert {"RAN", "RR", "MAF", "RL-LSFC"} <= set(names)
    for w in spec.workloads:
        assert w.generator == "liu-multicluster"
        assert w.jobsets == 50
        gen = LiuMultiClusterGenerator(**w.params)
        assert w.loads[0] == pytest.approx(gen.natural_load())  # the pattern's own intervals


SPEC = """
policies = [{ spec = "liu-maf", name = "MAF" }, { spec = "liu-ran", name = "RAN" }]
[experiment]
name = "liu_tiny"
reference = "MAF"
[[workloads]]
name = "uniform-b33"
generator = "liu-multicluster"
params = { b = 33, n_jobs = 60 }
rates = [0.058823529411764705]
jobsets = 3
seed = 1
[metrics]
primary = "tmdl"
secondary = ["ajer"]
n_resamples = 200
"""


def test_a_liu_experiment_runs_and_reports(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(SPEC)
    outcome = run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "exp", workers=1,
                             progress=False)  # fmt: skip
    assert outcome.failures == {}
    assert outcome.ran == 2
    exp = read_experiment(tmp_path / "exp")
    res = exp.results["uniform-b33"]
    assert set(res.table.columns) >= {"missed", "exec_ratio", "category", "deadline", "machine"}
    pj = per_jobset(res)
    assert pj.height == 6
    assert pj["tmdl"].min() >= 0
    cfg = AnalysisConfig(reference="MAF", primary="tmdl", secondary=("ajer",), n_resamples=200)
    summ = policy_summary(pj, cfg, ["MAF", "RAN"])
    assert set(summ.get_column("metric")) == {"tmdl", "ajer"}
    report = write_experiment_report(tmp_path / "exp", tmp_path / "out")
    text = report.read_text()
    assert "| MAF (ours) |" in text
    assert "| MAF (paper, table3) | 343.84 | 93.22 | -0.28 | - |" in text
    summary = pl.read_csv(tmp_path / "out" / "liu_summary.csv")
    ran = summary.filter(pl.col("policy") == "RAN").row(0, named=True)
    assert ran["F"] + ran["S"] + ran["N"] == 3
    assert (tmp_path / "out" / "episodes_uniform-b33.png").is_file()


def test_liu_metrics_are_valid_spec_metrics_and_typos_are_not(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(SPEC.replace('primary = "tmdl"', 'primary = "tmld"'))
    with pytest.raises(SpecError, match="unknown metric 'tmld'"):
        load_spec(tmp_path / "bad.toml")
