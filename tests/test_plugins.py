"""Plug-ins through entry points, tested with really installed packages (issue 27).

``examples/schedlab-example-plugin`` (a policy, a generator and a loader) and a clashing
package written here are installed with pip into temporary folders; ``schedlab`` runs in a
subprocess with one of them on its path, so its entry points come from the installed
distributions' metadata, as on a user's machine. References ``package.module:attr`` need no
installation and are tested in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import ParameterError, UnknownNameError
from schedlab.registry import (
    generators,
    make_policy,
    parse_policy,
    policies,
    policy_name,
    split_name,
    trainers,
)
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import simulate
from tests.cli_helpers import run_fail, run_ok

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "schedlab-example-plugin"
SCHEDLAB = Path(sys.executable).with_name("schedlab")

CLASH_PYPROJECT = """
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "schedlab-clash"
version = "0.2.0"

[project.entry-points."schedlab.policies"]
sjf = "schedlab_clash:Other"
lwf = "schedlab_clash:Other"
badact = "schedlab_clash:BadActions"
ghost = "schedlab_clash.missing:Nothing"
"""
CLASH_MODULE = '''
"""Policies that clash with others' names, break the contract or are missing."""
import numpy as np

from schedlab.policies.heuristics import SJF


class Other(SJF):
    """Another shortest job first."""

    key = "other"


class BadActions(SJF):
    """Answers an action outside every mask."""

    key = "badact"

    def act_batch(self, obs, *, mask=None):
        return np.full(obs.envs.size, 10**6, dtype=np.int64)
'''


def _pip_install(source: Path, target: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``plain``: the example plug-in installed; ``clashing``: it and schedlab-clash."""
    root = tmp_path_factory.mktemp("plugins")
    clash = root / "schedlab-clash"
    (clash / "schedlab_clash").mkdir(parents=True)
    (clash / "pyproject.toml").write_text(CLASH_PYPROJECT)
    (clash / "schedlab_clash" / "__init__.py").write_text(textwrap.dedent(CLASH_MODULE))
    for name, packages in (("plain", [EXAMPLE]), ("clashing", [EXAMPLE, clash])):
        for package in packages:
            _pip_install(package, root / name)
    return {"plain": root / "plain", "clashing": root / "clashing"}


def schedlab(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``schedlab ARGS`` in a subprocess with the packages of ``site`` importable."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [str(SCHEDLAB), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_list_names_each_plugin_with_its_distribution(sites: dict[str, Path]) -> None:
    for kind, name in (("policies", "lwf"), ("generators", "bursty"), ("loaders", "jobs-csv")):
        out = schedlab(sites["plain"], "list", kind)
        assert out.returncode == 0, out.stderr
        line = next(x for x in out.stdout.splitlines() if x.startswith(name + " "))
        assert "(from plugin schedlab-example-plugin 0.1.0)" in line
        assert "1 from plug-ins" in out.stdout
    sjf = next(x for x in out.stdout.splitlines() if x.startswith("swf "))
    assert "from plugin" not in sjf


@pytest.mark.slow
def test_check_plugins_runs_every_check(sites: dict[str, Path]) -> None:
    out = schedlab(sites["plain"], "check", "plugins")
    assert out.returncode == 0, out.stderr
    assert "ok policy 'lwf'" in out.stdout
    assert "ok generator 'bursty'" in out.stdout
    assert "ok loader 'jobs-csv'" in out.stdout


@pytest.mark.slow
def test_plugin_policy_and_generator_run_in_a_spec(sites: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    text = (EXAMPLE / "experiment.toml").read_text().replace("jobsets = 20", "jobsets = 6")
    spec.write_text(text)
    out = schedlab(sites["plain"], "experiment", "run", str(spec), "-o", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    out = schedlab(sites["plain"], "report", str(tmp_path / "run"), "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "lwf+easy versus sjf" in report or "| sjf | lwf+easy |" in report
    results = pl.read_parquet(tmp_path / "run" / "results.parquet")
    assert {"sjf", "lwf", "lwf+easy"} <= set(results["policy"].unique())


def test_plugin_loader_loads_its_sample(sites: dict[str, Path], tmp_path: Path) -> None:
    sample = next(sites["plain"].rglob("sample.csv"))
    bad = tmp_path / "jobs.csv"
    bad.write_text(sample.read_text() + "12,x,4\n")
    out = schedlab(sites["plain"], "load", "jobs-csv", str(bad), "-o", str(tmp_path / "j.parquet"))
    assert out.returncode == 0, out.stderr
    assert "not_a_number" in out.stdout + out.stderr


def test_clashing_plugins_are_refused_naming_both_origins(
    sites: dict[str, Path], tmp_path: Path
) -> None:
    out = schedlab(sites["clashing"], "list", "policies")
    assert out.returncode == 0, out.stderr
    refused = [x for x in out.stdout.splitlines() if x.startswith("refused:")]
    assert any("'sjf' of plugin schedlab-clash 0.2.0" in r and "is built in" in r for r in refused)
    lwf = next(r for r in refused if "'lwf'" in r)
    assert "schedlab-example-plugin 0.1.0" in lwf
    assert "schedlab-clash 0.2.0" in lwf
    broken = next(x for x in out.stdout.splitlines() if x.startswith("broken:"))
    assert "'ghost' of plugin schedlab-clash 0.2.0" in broken
    assert "cannot be imported" in broken
    jobs = tmp_path / "jobs.parquet"
    run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "2", "--seed", "0", "-o", str(jobs))
    out = schedlab(sites["clashing"], "simulate", str(jobs), "--policy", "sjf", "-o",
                   str(tmp_path / "r.parquet"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stderr
    assert "is built in" in out.stderr
    assert pl.read_parquet(tmp_path / "r.parquet")["policy"].unique().to_list() == ["sjf"]


def test_check_policy_fails_on_a_broken_plugin(sites: dict[str, Path]) -> None:
    out = schedlab(sites["clashing"], "check", "policy", "badact")
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1].startswith("FAILED policy 'badact': badact: actions outside")


# -- references: package.module:attr, no installation -----------------------------------------
def test_split_name_keeps_a_reference_whole() -> None:
    assert split_name("sjf+easy:x=1") == ("sjf+easy", "x=1")
    assert split_name("deeprm:runs/a/best.pt") == ("deeprm", "runs/a/best.pt")
    assert split_name("my_pkg.sched:Lwf+easy:x=1") == ("my_pkg.sched:Lwf+easy", "x=1")
    assert split_name("my_pkg.sched:Lwf") == ("my_pkg.sched:Lwf", "")
    assert split_name("mine:Lwf", policies) == ("mine:Lwf", "")  # not a registered name
    assert policy_name("my_pkg.sched:Lwf+easy+bestfit:x=1") == "my_pkg.sched:Lwf"


def test_a_reference_schedules_like_the_builtin_name() -> None:
    ref = "schedlab.policies.heuristics:TetrisStar+easy+bestfit:knob=0.3"
    assert parse_policy(ref) == (
        "schedlab.policies.heuristics:TetrisStar",
        {"queue": "easy", "placement": "bestfit", "knob": 0.3},
    )
    assert policies.entry(ref.partition("+")[0]).origin == "reference"
    jobset = generators.make("deeprm").generate(0.9, n_jobsets=3, seed=4)
    config = ClusterConfig(slots=10)
    a = simulate(jobset, [make_policy(ref)], config).table.drop("policy")
    b = simulate(jobset, [make_policy("tetris+easy+bestfit:knob=0.3")], config).table
    assert a.equals(b.drop("policy"))


def test_a_reference_generator_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "jobs.parquet"
    ref = "schedlab.loaders.generators.poisson:PoissonGenerator"
    run_ok("generate", ref, "--load", "0.5", "--jobsets", "2", "--seed", "1", "-o", str(out))
    run_ok("generate", "poisson", "--load", "0.5", "--jobsets", "2", "--seed", "1", "-o",
           str(tmp_path / "named.parquet"))  # fmt: skip
    assert pl.read_parquet(out).equals(pl.read_parquet(tmp_path / "named.parquet"))


def test_an_unimportable_reference_names_the_closest_names() -> None:
    with pytest.raises(UnknownNameError, match=r"did you mean 'deeprm'.*No module named 'deepmr'"):
        make_policy("deepmr:best")
    with pytest.raises(UnknownNameError, match=r"cannot be imported.*AttributeError"):
        policies.entry("schedlab.policies.heuristics:Nope")
    assert "schedlab.policies.heuristics:Nope" not in policies
    assert "error" in run_fail("check", "policy", "no_such.module:X").lower()


def test_using_a_plugin_that_cannot_be_imported_is_one_line(sites: dict[str, Path]) -> None:
    out = schedlab(sites["clashing"], "check", "policy", "ghost")
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "'ghost' of plugin schedlab-clash 0.2.0" in last
    assert "cannot be imported: ModuleNotFoundError" in last


def test_a_reference_trainer_is_a_train_command() -> None:
    ref = "schedlab.policies.reinforce:TRAINER"
    assert trainers.entry(ref).summary.startswith("DeepRM trained by REINFORCE")
    assert "Options are the fields of TrainConfig" in run_ok("train", ref, "--help")


# -- what the review of the plug-in mechanism found --------------------------------------------
@pytest.fixture
def own_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A single-file module ``mysched_t`` on the path, with a policy and a non-policy."""
    (tmp_path / "mysched_t.py").write_text(
        textwrap.dedent('''
        from schedlab.policies.heuristics import SJF

        class Lw(SJF):
            """Another shortest job first, under the class key ``sjf``."""

        def not_a_policy(x):
            return x
        ''')
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "mysched_t.py"


def test_a_single_module_reference_is_a_policy_named_as_typed(own_module: Path) -> None:
    policy = make_policy("mysched_t:Lw+easy:clairvoyant=true")
    assert (policy.queue, policy.clairvoyant) == ("easy", True)
    assert policy.name == "mysched_t:Lw+easy:clairvoyant=true"  # never its class key, "sjf"
    assert make_policy("mysched_t:Lw").name == "mysched_t:Lw"
    assert make_policy("mysched_t:Lw:label=mine").name == "mine"
    assert policies.entry("mysched_t:Lw").summary.startswith("Another shortest job first")


def test_what_is_not_a_policy_or_generator_is_one_line(own_module: Path, tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"'os.path:curdir'.*is a str, not a class"):
        make_policy("os.path:curdir")
    with pytest.raises(ParameterError, match=r"is not a policy: it has no name, models, view"):
        make_policy("json.decoder:JSONDecoder")
    with pytest.raises(ParameterError, match="cannot be made with"):
        make_policy("mysched_t:not_a_policy")
    with pytest.raises(UnknownNameError, match="takes no options after ':'"):
        generators.make("poisson:x=1")
    jobs = tmp_path / "jobs.parquet"
    run_ok("generate", "deeprm", "--load", "0.5", "--jobsets", "2", "-o", str(jobs))
    out = run_fail("simulate", str(jobs), "--policy", "os.path:join", "-o", str(tmp_path / "r"))
    assert "cannot be made" in out
    assert "FAILED policy 'os.path:join'" in run_fail("check", "policy", "os.path:join")


def test_a_changed_reference_loader_is_not_read_from_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from schedlab.loaders import load_trace

    module = tmp_path / "myloader_cache_t.py"
    module.write_text(
        "from schedlab.loaders.traces.swf import read_swf\n\n"
        "def read(source, *, options=None):\n    return read_swf(source, options=options)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SCHEDLAB_CACHE", str(tmp_path / "cache"))
    swf = ROOT / "tests" / "data" / "swf_small.swf"
    first, hit = load_trace("myloader_cache_t:read", swf)
    assert not hit
    assert load_trace("myloader_cache_t:read", swf)[1]
    module.write_text(module.read_text() + "\n# a new version of the loader\n")
    again, hit = load_trace("myloader_cache_t:read", swf)
    assert not hit
    assert again.jobs.jobs.equals(first.jobs.jobs)


def test_check_plugins_checks_every_plugin_and_lists_the_broken(sites: dict[str, Path]) -> None:
    out = schedlab(sites["clashing"], "check", "plugins")
    assert out.returncode == 1
    assert "ok generator 'bursty'" in out.stdout
    assert "ok loader 'jobs-csv'" in out.stdout
    failed = [x for x in out.stderr.splitlines() if x.startswith("FAILED")]
    assert any(x.startswith("FAILED policy 'badact'") for x in failed)
    assert any(x.startswith("FAILED policy 'ghost'") and "cannot be imported" in x for x in failed)


def test_experiments_record_the_plugins_installed(sites: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        (EXAMPLE / "experiment.toml").read_text().replace("jobsets = 20", "jobsets = 2")
    )
    out = schedlab(sites["plain"], "experiment", "run", str(spec), "-o", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    env = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert env["plugins"] == {"schedlab-example-plugin": "0.1.0"}
