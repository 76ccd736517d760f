"""The fitted model end to end: generate from a known model, fit, compare; model.json checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import schedlab
from schedlab.errors import SchedlabError, WorkloadModelError
from schedlab.evaluation.fitting.mixture import STARTS
from schedlab.evaluation.fitting.workload import fit
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.generators.fitted import FittedGenerator
from schedlab.loaders.workload.model import WorkloadModel
from schedlab.reports.fit_report import write_fit_report
from tests.fit_helpers import PROFILE, known_model
from tests.strategies import jobs_frame

DAY = 1440  # steps of 60 s
FAMILIES = ("lognormal", "gamma", "weibull", "lognormal_mix2")


def _stats(js: JobSet) -> dict[str, float]:
    d = js.jobs["duration"].to_numpy()
    cpu = js.jobs["cpu"].to_numpy()
    return {
        "jobs_per_step": len(js) / (js.meta.arrival_window or 1) / len(js.jobset_ids),
        "median": float(np.median(d)),
        "p90": float(np.quantile(d, 0.9)),
        "short_cpu": float(cpu[d <= 8].mean()),  # the fit's classes are cut at quantiles
        "long_cpu": float(cpu[d > 15].mean()),  # (8 and 15 steps here), the truth's at 10
        "load": float(offered_load(js)["load"].item()),
    }


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("round_trip")
    truth = known_model(kind="nhpp", batches=True)
    truth.save(folder / "truth.json")
    gen = FittedGenerator(model=str(folder / "truth.json"), window=60 * DAY, phase=0.0)
    trace = gen.generate(0.3, n_jobsets=1, seed=1)  # few batches share a step at this rate
    result = schedlab.fit(trace, families=FAMILIES, seed=0)
    result.save(folder / "fitted.json")
    return {"truth": truth, "trace": trace, "result": result, "folder": folder}


def test_round_trip_recovers_the_known_model(round_trip: dict[str, Any]) -> None:
    result = round_trip["result"]
    model: WorkloadModel = result.model
    assert model.durations.family == "lognormal"
    assert model.durations.params["mu"] == pytest.approx(2.0, abs=0.05)
    assert model.durations.params["sigma"] == pytest.approx(1.0, abs=0.05)
    selected = result.arrivals.filter(result.arrivals["selected"])["model"].item()
    assert selected == "nhpp+batch"
    np.testing.assert_allclose(model.arrivals.profile, PROFILE, atol=0.2)
    probs = dict(zip(model.arrivals.batch_sizes, model.arrivals.batch_probs, strict=True))
    np.testing.assert_allclose([probs[1], probs[2], probs[5]], [0.6, 0.3, 0.1], atol=0.04)
    assert model.time_step_seconds == 60.0
    assert model.resources == ("cpu", "mem")
    # within a duration class the fit gives every job the class's mean demand; the truth's
    # demands change at 10 steps, inside the fit's class (8, 15], hence a few % on E[D·demand]
    assert model.load_per_rate() == pytest.approx(round_trip["truth"].load_per_rate(), rel=0.08)


def test_mixture_starts_are_in_the_table_the_model_and_the_report(
    round_trip: dict[str, Any], tmp_path: Path
) -> None:
    result = round_trip["result"]
    table = result.durations
    rows = {r["family"]: r for r in table.iter_rows(named=True)}
    mix = rows["lognormal_mix2"]
    assert mix["starts"] == len(STARTS)
    assert 1 <= mix["starts_at_optimum"] <= len(STARTS)
    assert mix["starts_at_optimum"] == result.fits["lognormal_mix2"].starts_at_optimum
    assert (rows["lognormal"]["starts"], rows["lognormal"]["starts_at_optimum"]) == (None, None)
    saved = {d["family"]: d for d in result.model.diagnostics["durations"]}
    assert saved["lognormal_mix2"]["starts_at_optimum"] == mix["starts_at_optimum"]
    text = write_fit_report(result, tmp_path)["md"].read_text(encoding="utf-8")
    assert "starts at optimum" in text
    assert f"{mix['starts_at_optimum']}/{len(STARTS)}" in text


def test_jobs_generated_from_the_fit_have_the_statistics_of_the_original(
    round_trip: dict[str, Any],
) -> None:
    folder = round_trip["folder"]
    stats = {}
    for name in ("truth", "fitted"):
        gen = FittedGenerator(model=str(folder / f"{name}.json"), window=5 * DAY)
        stats[name] = _stats(gen.generate(0.8, n_jobsets=20, seed=2))
    for key, want in stats["truth"].items():
        assert stats["fitted"][key] == pytest.approx(want, rel=0.08), key


def test_model_json_round_trips(round_trip: dict[str, Any]) -> None:
    path = round_trip["folder"] / "fitted.json"
    model = WorkloadModel.load(path)
    again = WorkloadModel.from_json(json.loads(json.dumps(model.to_json())), source="x")
    assert again.to_json() == model.to_json()
    assert model.to_json()["schema_version"] == 1
    assert model.diagnostics["durations"][0]["family"] == "lognormal"


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "model.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _good() -> dict[str, Any]:
    return known_model().to_json()


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d.update(schema_version=2),
            r"schema_version: 2 is not supported \(expected 1\)",
        ),
        (lambda d: d.update(kind="jobset"), r"kind: expected 'workload_model'"),
        (lambda d: d.pop("arrivals"), r"arrivals: required key is missing"),
        (
            lambda d: d["durations"]["params"].pop("sigma"),
            r"durations.params: parameters \['sigma'\] are missing",
        ),
        (lambda d: d["durations"].update(family="cauchy"), r"durations.family: unknown family"),
        (lambda d: d["durations"]["params"].update(sigma=-1), r"must be > 0"),
        (
            lambda d: d["demands"]["classes"][1].update(probs=[0.5, 0.3, 0.3]),
            r"demands.classes\[1\].probs: must be >= 0 and sum to 1",
        ),
        (
            lambda d: d["demands"]["classes"][0].update(values=[[1, 2, 3], [2, 1, 0]]),
            r"demands.classes\[0\].values: must be 2 demand vectors of 2 numbers",
        ),
        (lambda d: d.update(capacity=[10]), r"capacity: one capacity per resource"),
        (lambda d: d["arrivals"].update(kind="hawkes"), r"arrivals.kind: expected 'poisson'"),
        (
            lambda d: d["arrivals"].update(rate_per_step="fast"),
            r"arrivals.rate_per_step: expected number",
        ),
        (lambda d: d.update(window=0), r"window: must be >= 1 step"),
    ],
)
def test_invalid_model_files_name_the_file_and_the_key(
    tmp_path: Path, edit: Any, match: str
) -> None:
    doc = _good()
    edit(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(WorkloadModelError, match=match) as info:
        WorkloadModel.load(path)
    assert str(info.value).startswith(f"{path}: ")
    assert isinstance(info.value, SchedlabError)
    assert isinstance(info.value, ValueError)


def test_not_json_and_missing_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkloadModelError, match=r"model.json: not valid JSON"):
        WorkloadModel.load(_write(tmp_path, "{not json"))
    with pytest.raises(WorkloadModelError, match=r"\(top level\): expected a table"):
        WorkloadModel.load(_write(tmp_path, "[1, 2]"))
    with pytest.raises(WorkloadModelError, match=r"nope.json: no such workload model file"):
        WorkloadModel.load(tmp_path / "nope.json")


def test_fit_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="holdout must be in"):
        fit(_tiny(), holdout=1.0)
    with pytest.raises(ValueError, match="unknown duration families"):
        fit(_tiny(), families=("cauchy",))


def _tiny() -> JobSet:
    from schedlab.jobset import JobSetMeta

    jobs = jobs_frame(arrival=[0, 3], duration=[2, 5], cpu=[1.0, 2.0])
    return JobSet.create(jobs, JobSetMeta(resources=("cpu",), capacity=(4.0,)))
