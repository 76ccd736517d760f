"""Experiment spec files (TOML): what to run, on which workloads, and how to compare it.

Schema (every key is optional unless marked *required*; unknown keys are errors)::

    policies = [                            # required: spec strings as for `simulate --policy`
        "random", "fcfs", "sjf", "packer", "tetris",
        # a table gives a display name, or `optional = true`: run only when the policy is
        # registered and its checkpoint exists (a path relative to this file, or a shipped name)
        { spec = "deeprm:checkpoint=deeprm-0.7", name = "deeprm", optional = true },
    ]

    [experiment]
    name = "deeprm_fig4"                    # required
    description = "Seed 000 Figure 4"
    seed = 0                                # master seed (workload seeds, bootstrap)
    reference = "tetris"                    # required: a policy name, the comparisons' baseline

    [cluster]                               # simulator geometry
    slots = 10                              # visible job slots M
    horizon = 20                            # horizon T (steps)

    [[workloads]]                           # required, one or more
    name = "deeprm"                         # required, unique
    generator = "deeprm"                    # a registered generator ...
    params = { variant = "code" }           #   its parameters
    loads = [0.1, 0.3, 0.5]                 #   offered loads (fractions), or
    rates = [0.05, 0.35]                    #   mean arrivals per step (load = rate·load_per_rate)
    jobsets = 100                           #   jobsets per load
    seed = 0                                #   default: child i of SeedSequence(experiment.seed)
    # ... or a trace:
    loader = "swf"                          # a registered loader, or "jobset" (a JobSet file)
    path = "../traces/data/KTH-SP2-1996-2.swf.gz"   # relative to the spec file
    options = { time_step = 60, jobset_size = 50 }  # TraceOptions fields; params: loader kwargs

    [metrics]
    primary = "slowdown"                    # the metric of the omnibus and all-pairs tests
    secondary = ["completion", "bounded_slowdown", "p95_slowdown"]   # exploratory (BH)
    bounded_slowdown_threshold = 10         # τ, steps
    confidence = 0.95                       # bootstrap interval level
    alpha = 0.05                            # significance level of the tests
    n_resamples = 2000                      # bootstrap resamples

    [report]
    title = "..."
    focus_load = 1.3                        # load of the detailed tables (default: highest)

:func:`load_spec` validates and **resolves** a file: relative paths become absolute, workload
seeds are drawn from ``SeedSequence(experiment.seed).spawn(n_workloads)`` where not given
(style.md §2), rates become loads, and optional policies that cannot run are moved to
``skipped`` with the reason. The resolved spec (:meth:`ExperimentSpec.to_json`) is written beside
the results.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import SpecError
from schedlab.evaluation.metrics import BSLD_THRESHOLD, METRICS
from schedlab.evaluation.validate import REQUIRED, TomlTable
from schedlab.registry import generators, loaders, parse_spec, policies
from schedlab.simulator.config import ClusterConfig


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadSpec:
    """One workload: a generator at some loads, or a loaded trace."""

    name: str
    """Unique name; it labels the workload's results and files."""
    generator: str | None = None
    """Registered generator name (exclusive with ``loader``)."""
    loader: str | None = None
    """Registered loader name or ``"jobset"`` (a JobSet Parquet file)."""
    path: str | None = None
    """Trace file, absolute once resolved."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Generator parameters, or keyword arguments of the loader."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """:class:`~schedlab.loaders.traces.transform.TraceOptions` fields of a trace."""
    loads: tuple[float, ...] = ()
    """Offered loads (fractions of capacity) of a generator; empty for a trace."""
    rates: tuple[float, ...] = ()
    """Arrival rates the loads were derived from, when the spec gave rates."""
    jobsets: int = 100
    """Jobsets per load."""
    seed: int = 0
    """Seed of the generator (or of the trace's sampling)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicySpec:
    """One policy: a spec string and the name it has in results."""

    spec: str
    """``name:key=value,...`` as for ``schedlab simulate --policy``."""
    name: str
    """Name in results and reports (default: the spec as written)."""
    optional: bool = False
    """Run only if registered and its checkpoint exists (else listed in ``skipped``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MetricsSpec:
    """Which per-jobset metrics to compare, and the statistics' settings."""

    primary: str = "slowdown"
    """Metric of the confirmatory tests (Friedman, all-pairs Wilcoxon with Holm)."""
    secondary: tuple[str, ...] = ("completion", "bounded_slowdown", "p95_slowdown")
    """Exploratory metrics (vs the reference, Benjamini–Hochberg)."""
    bounded_slowdown_threshold: float = BSLD_THRESHOLD
    """τ of the bounded slowdown, in steps."""
    confidence: float = 0.95
    """Level of the bootstrap confidence intervals."""
    alpha: float = 0.05
    """Significance level of the tests."""
    n_resamples: int = 2000
    """Bootstrap resamples per interval."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReportSpec:
    """Presentation settings."""

    title: str = ""
    """Report title (default: the experiment's description or name)."""
    focus_load: float | None = None
    """Offered load of the detailed comparison (default: the highest load)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExperimentSpec:
    """A validated, resolved experiment spec."""

    name: str
    """Experiment name."""
    reference: str
    """Name of the reference policy of the comparisons."""
    workloads: tuple[WorkloadSpec, ...]
    """Workloads, in spec order."""
    policies: tuple[PolicySpec, ...]
    """Policies that run, in spec order."""
    description: str = ""
    """One line on what the experiment reproduces."""
    seed: int = 0
    """Master seed."""
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    """Simulator geometry."""
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    """Metrics and statistics settings."""
    report: ReportSpec = field(default_factory=ReportSpec)
    """Presentation settings."""
    skipped: tuple[tuple[str, str], ...] = ()
    """Optional policies left out: ``(name, reason)``."""
    source: str | None = None
    """The spec file this was read from."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the resolved spec written beside the results)."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExperimentSpec:
        """Inverse of :meth:`to_json`."""
        tup = tuple
        return cls(
            name=d["name"],
            reference=d["reference"],
            description=d.get("description", ""),
            seed=d.get("seed", 0),
            workloads=tup(
                WorkloadSpec(**{**w, "loads": tup(w["loads"]), "rates": tup(w["rates"])})
                for w in d["workloads"]
            ),
            policies=tup(PolicySpec(**p) for p in d["policies"]),
            cluster=ClusterConfig(**d["cluster"]),
            metrics=MetricsSpec(**{**d["metrics"], "secondary": tup(d["metrics"]["secondary"])}),
            report=ReportSpec(**d["report"]),
            skipped=tup(tup(s) for s in d.get("skipped", ())),
            source=d.get("source"),
        )


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read, validate and resolve the TOML spec at ``path``.

    Raises
    ------
    SpecError
        Naming the file and the key, e.g. ``spec.toml: [[workloads]][0].loads: ...``.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{p}: cannot read the spec ({exc})"
        raise SpecError(msg) from exc
    except tomllib.TOMLDecodeError as exc:
        msg = f"{p}: not valid TOML ({exc})"
        raise SpecError(msg) from exc
    return parse_spec_dict(data, base_dir=p.resolve().parent, source=str(p))


TOP = ("experiment", "cluster", "workloads", "policies", "metrics", "report")


def parse_spec_dict(data: Mapping[str, Any], *, base_dir: Path, source: str) -> ExperimentSpec:
    """Validate and resolve an already-parsed spec (see :func:`load_spec`)."""
    top = TomlTable(dict(data), "", TOP, source)
    exp = TomlTable(
        top.get("experiment", dict, REQUIRED),
        "[experiment]",
        ("name", "description", "seed", "reference"),
        source,
    )
    seed = exp.get("seed", int, 0)
    cluster = _cluster(top.get("cluster", dict, {}), source)
    raw_workloads = top.get("workloads", list, REQUIRED)
    if not raw_workloads:
        top.fail("workloads", "at least one [[workloads]] table is required")
    children = np.random.SeedSequence(seed).spawn(len(raw_workloads))
    workloads = tuple(
        _workload(w, i, int(children[i].generate_state(1)[0]), base_dir, source)
        for i, w in enumerate(raw_workloads)
    )
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        top.fail("workloads", f"workload names must be unique, got {names}")
    ran, skipped = _policies(top.get("policies", list, REQUIRED), base_dir, source)
    reference = exp.get("reference", str, REQUIRED)
    if reference not in [p.name for p in ran]:
        exp.fail("reference", f"{reference!r} is not a policy that runs: {[p.name for p in ran]}")
    return ExperimentSpec(
        name=exp.get("name", str, REQUIRED),
        description=exp.get("description", str, ""),
        seed=seed,
        reference=reference,
        cluster=cluster,
        workloads=workloads,
        policies=ran,
        skipped=skipped,
        metrics=_metrics(top.get("metrics", dict, {}), source),
        report=_report(top.get("report", dict, {}), source),
        source=source,
    )


def _cluster(data: dict[str, Any], source: str) -> ClusterConfig:
    names = tuple(f.name for f in fields(ClusterConfig))
    t = TomlTable(data, "[cluster]", names, source)
    kwargs = {k: t.get(k, int) for k in names if k in data}
    for k, v in kwargs.items():
        if v < 1:
            t.fail(k, f"must be >= 1, got {v}")
    return ClusterConfig(**kwargs)


def _workload(data: Any, i: int, seed: int, base_dir: Path, source: str) -> WorkloadSpec:
    allowed = (
        "name",
        "generator",
        "params",
        "loads",
        "rates",
        "jobsets",
        "seed",
        "loader",
        "path",
        "options",
    )
    t = TomlTable(data, f"[[workloads]][{i}]", allowed, source)
    name = t.get("name", str, REQUIRED)
    generator, loader = t.get("generator", str), t.get("loader", str)
    if (generator is None) == (loader is None):
        t.fail("generator", "give exactly one of `generator` or `loader`")
    params = dict(t.get("params", dict, {}))
    jobsets, wseed = t.get("jobsets", int, 100), t.get("seed", int, seed)
    if jobsets < 1:
        t.fail("jobsets", f"must be >= 1, got {jobsets}")
    if generator is not None:
        for key in ("path", "options"):
            if key in t.data:
                t.fail(key, "only for a `loader` workload")
        if generator not in generators:
            t.fail("generator", f"unknown generator {generator!r}; known: {generators.names()}")
        loads, rates = t.numbers("loads"), t.numbers("rates")
        if bool(loads) == bool(rates):
            t.fail("loads", "give exactly one of `loads` or `rates` (a non-empty list)")
        try:
            gen = generators.make(generator, **params)
        except (TypeError, ValueError) as exc:
            t.fail("params", f"{generator}: {exc}")
        if rates:
            if not hasattr(gen, "load_per_rate"):
                t.fail("rates", f"generator {generator!r} takes loads, not rates")
            loads = tuple(float(r * gen.load_per_rate()) for r in rates)
        return WorkloadSpec(
            name=name,
            generator=generator,
            params=params,
            loads=loads,
            rates=rates,
            jobsets=jobsets,
            seed=wseed,
        )
    for key in ("loads", "rates", "jobsets"):
        if key in t.data:
            t.fail(key, "only for a `generator` workload (a trace has its own jobsets)")
    if loader != "jobset" and loader not in loaders:
        t.fail("loader", f"unknown loader {loader!r}; known: {['jobset', *loaders.names()]}")
    path = base_dir / t.get("path", str, REQUIRED)
    if not path.is_file():
        t.fail("path", f"no such file: {path}")
    if loader != "jobset":
        from schedlab.loaders.traces.transform import TraceOptions

        try:
            TraceOptions(**t.get("options", dict, {}))
        except (TypeError, ValueError) as exc:
            t.fail("options", str(exc))
    return WorkloadSpec(
        name=name,
        loader=loader,
        path=str(path.resolve()),
        params=params,
        options=dict(t.get("options", dict, {})),
        seed=wseed,
    )


def checkpoint_path(spec: str) -> str | None:
    """The checkpoint a policy spec names: ``name:PATH,...`` or a ``checkpoint=``/``path=``
    option; None for a spec without one (heuristics)."""
    _, _, rest = spec.partition(":")
    for i, item in enumerate(filter(None, rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq and i == 0:
            return key.strip()
        if key.strip() in ("path", "checkpoint"):
            return value.strip()
    return None


def find_checkpoint(ckpt: str, base_dir: Path) -> str | None:
    """Where a policy's checkpoint is: a path (absolute, or relative to the spec file's
    folder; a file or a run directory), else a shipped name (``policies/checkpoints/<name>/``,
    returned unchanged); None if neither exists."""
    from importlib import resources

    p = Path(ckpt) if Path(ckpt).is_absolute() else base_dir / ckpt
    if p.exists():
        return str(p.resolve())
    shipped = resources.files("schedlab.policies") / "checkpoints" / ckpt / "best.pt"
    return ckpt if shipped.is_file() else None


def _policies(items: list[Any], base_dir: Path, source: str) -> tuple[tuple, tuple]:
    ran: list[PolicySpec] = []
    skipped: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        where = f"policies[{i}]"
        entry = {"spec": item} if isinstance(item, str) else item
        t = TomlTable(entry, where, ("spec", "name", "optional"), source)
        spec = t.get("spec", str, REQUIRED)
        name, optional = t.get("name", str, spec), t.get("optional", bool, False)
        ckpt = checkpoint_path(spec)
        found = None if ckpt is None else find_checkpoint(ckpt, base_dir)
        if ckpt is not None and found is not None:
            spec = spec.replace(ckpt, found, 1)
        reason, base = None, spec.partition(":")[0].strip()
        if base not in policies:
            reason = f"policy {base!r} is not registered"
        elif ckpt is not None and found is None:
            reason = f"checkpoint {ckpt!r} not found (relative to {base_dir}, or shipped)"
        elif ckpt is None:
            try:
                parse_spec(spec)
            except ValueError as exc:
                t.fail("spec", str(exc))
        if reason and not optional:
            t.fail("spec", reason)
        if reason:
            skipped.append((name, reason))
            continue
        if name in [p.name for p in ran]:
            t.fail("name", f"policy name {name!r} is used twice")
        ran.append(PolicySpec(spec=spec, name=name, optional=optional))
    if not ran:
        msg = f"{source}: policies: no policy can run (skipped: {skipped})"
        raise SpecError(msg)
    return tuple(ran), tuple(skipped)


def _metrics(data: dict[str, Any], source: str) -> MetricsSpec:
    names = tuple(f.name for f in fields(MetricsSpec))
    t = TomlTable(data, "[metrics]", names, source)
    d = MetricsSpec()
    primary = t.get("primary", str, d.primary)
    secondary = tuple(t.get("secondary", list, list(d.secondary)))
    for key, values in (("primary", [primary]), ("secondary", list(secondary))):
        bad = [v for v in values if v not in METRICS]
        if bad:
            t.fail(key, f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
    out = MetricsSpec(
        primary=primary,
        secondary=tuple(m for m in secondary if m != primary),
        bounded_slowdown_threshold=t.get("bounded_slowdown_threshold", float, BSLD_THRESHOLD),
        confidence=t.get("confidence", float, d.confidence),
        alpha=t.get("alpha", float, d.alpha),
        n_resamples=t.get("n_resamples", int, d.n_resamples),
    )
    for key in ("confidence", "alpha"):
        if not 0 < getattr(out, key) < 1:
            t.fail(key, f"must be in (0, 1), got {getattr(out, key)}")
    if out.bounded_slowdown_threshold <= 0:
        t.fail("bounded_slowdown_threshold", "must be > 0 steps")
    if out.n_resamples < 100:
        t.fail("n_resamples", f"must be >= 100, got {out.n_resamples}")
    return out


def _report(data: dict[str, Any], source: str) -> ReportSpec:
    t = TomlTable(data, "[report]", ("title", "focus_load"), source)
    focus = t.get("focus_load", float)
    if focus is not None and focus <= 0:
        t.fail("focus_load", f"must be > 0, got {focus}")
    return ReportSpec(title=t.get("title", str, ""), focus_load=focus)
