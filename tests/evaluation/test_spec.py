"""Experiment spec files: the shipped specs load, and every mistake names its key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schedlab.errors import ImplausibleValueWarning, SpecError
from schedlab.evaluation.runs import plan, workload_fingerprint
from schedlab.evaluation.spec import ExperimentSpec, load_spec
from schedlab.policies.shipped import checkpoint_path
from schedlab.registry import generators
from tests.spec_helpers import spec_toml, write_spec

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "experiments").glob("*.toml"))

MINIMAL = spec_toml('"sjf", "tetris"', name="t", reference="tetris", workload="w",
                    loads="[0.5]", jobsets=3)  # fmt: skip


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_specs_load(path: Path) -> None:
    if "poisson" in path.read_text() and "poisson" not in generators:
        pytest.skip("the Poisson (DeepRM_Plus) generator is not registered yet")
    spec = load_spec(path)
    assert spec.reference in [p.name for p in spec.policies]
    assert all(w.loads or (w.loader and Path(w.path).is_file()) for w in spec.workloads)
    assert ExperimentSpec.from_json(spec.to_json()) == spec


def test_the_four_figure_specs_are_shipped() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"deeprm_fig4", "deeprm_fig5", "deeprm_fig7b", "deeprmplus_fig8a"} <= names
    fig4 = load_spec(ROOT / "experiments" / "deeprm_fig4.toml")
    assert len([p for p in fig4.policies if not p.optional]) == 5
    assert fig4.workloads[0].loads == pytest.approx([0.1 + 0.2 * i for i in range(10)])
    assert fig4.workloads[0].jobsets == 100


def test_fig8a_uses_the_papers_rates() -> None:
    if "poisson" not in generators:
        pytest.skip("the Poisson (DeepRM_Plus) generator is not registered yet")
    spec = load_spec(ROOT / "experiments" / "deeprmplus_fig8a.toml")
    w = spec.workloads[0]
    assert w.rates == pytest.approx([0.05 + 0.1 * i for i in range(10)])
    assert w.loads == pytest.approx([1.845 * r for r in w.rates])  # load = 1.845 λ


def test_rates_become_offered_loads(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, MINIMAL.replace("loads = [0.5]", "rates = [0.5, 1.0]")))
    assert spec.workloads[0].rates == (0.5, 1.0)
    assert spec.workloads[0].loads == pytest.approx((0.5 * 1.845, 1.845))


def test_minimal_spec_defaults_and_derived_seeds(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, MINIMAL))
    assert spec.cluster.slots == 10
    assert spec.metrics.primary == "slowdown"
    assert spec.metrics.bounded_slowdown_threshold == 10.0
    seeded = load_spec(write_spec(tmp_path, MINIMAL.replace('name = "t"', 'name = "t"\nseed = 7')))
    assert seeded.metrics.seed == 7  # the bootstrap's seed is the master seed
    two = MINIMAL + '[[workloads]]\nname = "v"\ngenerator = "deeprm"\nloads = [0.5]\n'
    a, b = load_spec(write_spec(tmp_path, two)), load_spec(write_spec(tmp_path, two))
    assert a.workloads[0].seed == b.workloads[0].seed  # derived, reproducible
    assert a.workloads[0].seed != a.workloads[1].seed  # and distinct per workload


def _policies(inside: str) -> tuple[str, str]:
    """The edit of :data:`MINIMAL` that makes ``inside`` the policy list's inside."""
    return ('"sjf", "tetris"', inside)


def _table(table: str, line: str) -> tuple[str, str]:
    """The edit of :data:`MINIMAL` that adds ``table`` (e.g. ``[metrics]``) holding ``line``."""
    return ("[experiment]", f"{table}\n{line}\n[experiment]")


def _trace_workload(loader: str, path: str) -> tuple[str, str]:
    """The edit of :data:`MINIMAL` that makes its workload the trace at ``path`` (``loader``)."""
    return (
        'generator = "deeprm"\nloads = [0.5]\njobsets = 3',
        f'loader = "{loader}"\npath = "{path}"',
    )


def _workload_line(line: str) -> tuple[str, str]:
    """The edit of :data:`MINIMAL` that adds ``line`` to its workload."""
    return ("jobsets = 3", f"jobsets = 3\n{line}")


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (("loads = [0.5]", "lods = [0.5]"), r"\[\[workloads\]\]\[0\]\.lods: unknown key .*'loads'"),
        (('name = "t"\n', ""), r"\[experiment\]\.name: required key is missing"),
        (("jobsets = 3", 'jobsets = "3"'), r"jobsets: expects an integer, got '3'"),
        (("jobsets = 3", "jobsets = 3.5"), r"jobsets: expects an integer, got 3.5"),
        (("loads = [0.5]", "loads = [0.5, 0.5]"), r"loads: values must be distinct"),
        (("loads = [0.5]", "loads = [inf]"), r"loads: numbers must be finite"),
        (("loads = [0.5]", "loads = [0.5]\nrates = [0.2]"), r"loads: give exactly one"),
        (("loads = [0.5]", "loads = [-0.5]"), r"loads: must be > 0, got \[-0.5\]"),
        (('generator = "deeprm"', 'generator = "deeprn"'), r"generator: unknown generator"),
        (('reference = "tetris"', 'reference = "fcfs"'), r"reference: 'fcfs' is not a policy"),
        (_policies('"sjff", "tetris"'), r"policies\[0\]\.spec: .*'sjff'; did you mean 'sjf'"),
        (
            _policies('"sjf", "tetris:knob=\\"x\\""'),
            r"policies\[1\]\.spec: tetris:knob=\"x\": parameter 'knob' .* a number, got 'x'",
        ),
        (
            _policies('"sjf", "sjf:label=b", "tetris"'),
            r"policies\[1\]\.spec: 'sjf:label=b' is the same policy as policies\[0\]",
        ),
        (_policies('"sjf", "tetris", "tetris:knob=0.5"'), r"same policy as policies\[1\]"),
        (_policies('"sjf", "tetris:knob=0.3,knob=0.4"'), r"'knob' is given twice"),
        (_table("[metrics]", 'primary = "speed"'), r"primary: unknown"),
        (
            _table("[metrics]", "confidence = 95"),
            r"\[metrics\]\.confidence: must be > 0 and < 1, got 95",
        ),
        (_table("[metrics]", "n_resamples = 50"), r"n_resamples: must be >= 100, got 50"),
        (_table("[metrics]", "seed = 3"), r"\[metrics\]\.seed: unknown key"),
        (_table("[report]", "focus_load = 0"), r"\[report\]\.focus_load: must be > 0, got 0"),
        (
            _policies('"sjf", { spec = "tetris", optional = 1 }'),
            r"policies\[1\]\.optional: expects true or false, got 1",
        ),
        (_table("[cluster]", "slots = 0"), r"\[cluster\]\.slots: must"),
        (
            _workload_line("params = { windw = 5 }"),
            r"params: generator 'deeprm' has no parameter 'windw'; did you mean 'window'",
        ),
        (
            _workload_line('params = { variant = "papr" }'),
            r"params: .*'variant' .* one of 'code', 'paper', got 'papr'; did you mean 'paper'",
        ),
        (
            _workload_line('params = { arrivals = "poison" }'),
            r"params: .*'arrivals' .* got 'poison'; did you mean 'poisson'",
        ),
        (
            _workload_line("params = { short_prob = 1.5 }"),
            r"params: parameter 'short_prob' of generator 'deeprm' must be >= 0 and <= 1, got 1.5",
        ),
        (
            _workload_line("params = { res_slot = 0 }"),
            r"parameter 'res_slot' of generator 'deeprm' must be >= 1, got 0",
        ),
        (
            _policies('"sjf", { spec = "tetris", workloads = ["ww"] }'),
            r"policies\[1\]\.workloads: no workload 'ww' \(the spec has \['w'\]\); did you",
        ),
        (
            _workload_line("cluster = { slot = 3 }"),
            r"\[\[workloads\]\]\[0\]\.cluster\.slot: unknown key \(did you mean 'slots'",
        ),
        (_workload_line("cluster = { slots = 0 }"), r"cluster\.slots: must be >= 1"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, edit: tuple[str, str], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        load_spec(write_spec(tmp_path, MINIMAL.replace(*edit)))


def test_policies_restricted_to_workloads_and_a_workloads_own_cluster(tmp_path: Path) -> None:
    text = MINIMAL.replace(*_policies('"tetris", { spec = "sjf", workloads = ["m20"] }'))
    text += '[[workloads]]\nname = "m20"\ngenerator = "deeprm"\nloads = [0.5]\njobsets = 3\n'
    text += "cluster = { slots = 20 }\n"
    spec = load_spec(write_spec(tmp_path, text))
    assert ExperimentSpec.from_json(spec.to_json()) == spec
    tasks = plan(spec, tmp_path / "out")
    assert [(t.workload, t.policy) for t in tasks] == [("w", "tetris"), ("m20", "tetris"),
                                                      ("m20", "sjf")]  # fmt: skip
    assert [t.cluster["slots"] for t in tasks] == [10, 20, 20]
    assert tasks[0].cluster["horizon"] == tasks[1].cluster["horizon"] == 20
    # the jobsets do not depend on the cluster they are simulated on; the runs do
    w, m20 = spec.workloads
    assert workload_fingerprint(m20) == workload_fingerprint(replace(m20, cluster={}))
    assert workload_fingerprint(m20) != workload_fingerprint(w)  # (the seed differs)
    unrestricted = plan(replace(spec, workloads=(w, replace(m20, cluster={}))), tmp_path / "out")
    assert unrestricted[1].fingerprint != tasks[1].fingerprint
    with pytest.raises(SpecError, match=r"'tetris' must run on every workload \(not on \['w'\]"):
        load_spec(
            write_spec(
                tmp_path, text.replace('"tetris", {', '{ spec = "tetris", workloads = ["m20"] }, {')
            )
        )


def test_implausible_load_warns_once_in_one_line(tmp_path: Path) -> None:
    with pytest.warns(ImplausibleValueWarning, match=r"loads: offered load 70 is 7000% .*0.7") as w:
        spec = load_spec(write_spec(tmp_path, MINIMAL.replace("loads = [0.5]", "loads = [70]")))
    assert len(w) == 1
    assert "\n" not in str(w[0].message)
    assert spec.workloads[0].loads == (70.0,)


def test_policy_parameters_are_converted_and_typical_ranges_warn(tmp_path: Path) -> None:
    with pytest.warns(ImplausibleValueWarning, match=r"'knob' of policy 'tetris' is usually"):
        spec = load_spec(write_spec(tmp_path, MINIMAL.replace('"tetris"]', '"tetris:knob=7"]')
                               .replace('reference = "tetris"', 'reference = "sjf"')))  # fmt: skip
    assert [p.spec for p in spec.policies] == ["sjf", "tetris:knob=7"]


def test_trace_workload_params_and_options_are_checked(tmp_path: Path) -> None:
    (tmp_path / "kth.swf").write_text("; MaxProcs: 4\n")
    text = MINIMAL.replace(*_trace_workload("swf", "kth.swf"))
    with pytest.raises(SpecError, match=r"params: loader 'swf' has no parameter 'granularity'"):
        load_spec(write_spec(tmp_path, text + 'params = { granularity = "job" }\n'))
    with pytest.raises(SpecError, match=r"options: trace options has no parameter 'jobset_sise'"):
        load_spec(write_spec(tmp_path, text + "options = { jobset_sise = 5 }\n"))
    with pytest.raises(SpecError, match=r"loader: unknown loader 'swff'; did you mean 'swf'"):
        load_spec(write_spec(tmp_path, text.replace('"swf"', '"swff"')))


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(write_spec(tmp_path, "policies = [\n"))
    with pytest.raises(SpecError, match=r"nope.toml: no such spec file"):
        load_spec(tmp_path / "nope.toml")
    (tmp_path / "latin1.toml").write_bytes(b"name = '\xe9'\n")
    with pytest.raises(SpecError, match=r"latin1.toml: not a TOML spec: not UTF-8 text \("):
        load_spec(tmp_path / "latin1.toml")
    (tmp_path / "results.parquet").write_bytes(b"PAR1\xb5\x00")
    with pytest.raises(SpecError, match=r"results.parquet: not a TOML spec: .*\(a Parquet file\)"):
        load_spec(tmp_path / "results.parquet")


def test_optional_policies_are_skipped_with_a_reason(tmp_path: Path) -> None:
    rl = '{ spec = "deeprm:missing/best.pt", name = "rl", optional = true }'
    text = MINIMAL.replace(*_policies(f'"sjf", "tetris", {rl}'))
    spec = load_spec(write_spec(tmp_path, text))
    assert [p.name for p in spec.policies] == ["sjf", "tetris"]
    assert spec.skipped[0][0] == "rl"
    assert "not found" in spec.skipped[0][1] or "not registered" in spec.skipped[0][1]
    required = text.replace(", optional = true", "")
    with pytest.raises(SpecError, match=r"policies\[2\]\.spec"):
        load_spec(write_spec(tmp_path, required))


def test_checkpoint_paths_resolve_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.pt").write_bytes(b"")
    rl = '{ spec = "deeprm:run/best.pt", name = "rl", optional = true }'
    text = MINIMAL.replace(*_policies(f'"sjf", "tetris", {rl}'))
    spec = load_spec(write_spec(tmp_path, text))
    if spec.skipped:  # the learned policy is not registered in this checkout
        assert "not registered" in spec.skipped[0][1]
        return
    assert spec.policies[-1].spec == f"deeprm:{tmp_path / 'run' / 'best.pt'}"


def test_checkpoint_path_of_specs() -> None:
    assert checkpoint_path("deeprm:runs/a/best.pt,label=x") == "runs/a/best.pt"
    assert checkpoint_path("deeprm:checkpoint=deeprm-0.7") == "deeprm-0.7"
    assert checkpoint_path("tetris:knob=0.3") is None
    assert checkpoint_path("sjf") is None


def test_trace_workloads_resolve_their_path(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jobs.parquet").write_bytes(b"")
    text = MINIMAL.replace(*_trace_workload("jobset", "data/jobs.parquet"))
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.workloads[0].path == str((tmp_path / "data" / "jobs.parquet").resolve())
    assert spec.workloads[0].loads == ()
    with pytest.raises(SpecError, match="path: no such file"):
        load_spec(write_spec(tmp_path, text.replace("data/jobs", "data/none")))
    with pytest.raises(SpecError, match="jobsets: only for a `generator`"):
        load_spec(write_spec(tmp_path, text + "jobsets = 3\n"))
