"""Experiment spec files (TOML): what to run, on which workloads, and how to compare it.

Schema (every key is optional unless marked *required*; unknown keys are errors)::

    policies = [                            # required: spec strings as for `simulate --policy`
        "sjf", "tetris:knob=0.3",           #   (`schedlab list policies --params`)
        # a table gives a display name, or `optional = true`: run only when the policy is
        # registered and its checkpoint exists (a path relative to this file, or a shipped name)
        { spec = "deeprm:checkpoint=deeprm-0.7", name = "deeprm", optional = true },
        # `workloads`: run on these workloads only (a policy trained for one configuration)
        { spec = "deeprm-plus:checkpoint=../runs/m20/best.pt", name = "m20", workloads = ["m20"] },
    ]

    [experiment]
    name = "deeprm_fig4"                    # required
    description = "DeepRM (Mao et al. 2016) Figure 4"
    seed = 0                                # master seed (workload seeds, bootstrap)
    reference = "tetris"                    # required: a policy name, the comparisons' baseline

    [cluster]                               # simulator settings: fields of the config class
    slots = 10                              #   of the model kind the policies act on (the
    horizon = 20                            #   cluster model: ClusterConfig; `schedlab.registry
                                            #   .models`), e.g. visible job slots M, horizon T

    [[workloads]]                           # required, one or more
    name = "deeprm"                         # required, unique
    generator = "deeprm"                    # a registered generator ...
    params = { variant = "code" }           #   its parameters
    loads = [0.1, 0.3, 0.5]                 #   offered loads (fractions), or
    rates = [0.05, 0.35]                    #   mean arrivals per step (load = load_for_rate(rate))
    jobsets = 100                           #   jobsets per load
    seed = 0                                #   default: child i of SeedSequence(experiment.seed)
    cluster = { slots = 20 }                #   [cluster] fields this workload's runs replace
    # ... or a trace:
    loader = "swf"                          # a registered loader, or "jobset" (a JobSet file)
    path = "../traces/data/KTH-SP2-1996-2.swf.gz"   # relative to the spec file
    options = { time_step = 60, jobset_size = 50 }  # TraceOptions fields; params: loader kwargs

    [metrics]                               # StatsSettings fields (evaluation/settings.py),
    primary = "slowdown"                    #   its defaults; the seed is experiment.seed
    secondary = ["completion", "p95_slowdown"]   # exploratory (BH)
    bounded_slowdown_threshold = 10         # τ: seconds for a trace, steps for a generator
    confidence = 0.9                        # bootstrap interval level
    alpha = 0.01                            # significance level of the tests
    n_resamples = 5000                      # bootstrap resamples

    [report]
    title = "..."
    focus_load = 1.3                        # load of the detailed tables (default: highest)

:func:`load_spec` validates and **resolves** a file: relative paths become absolute, workload
seeds are drawn from ``SeedSequence(experiment.seed).spawn(n_workloads)`` where not given
(style.md §2), rates become loads, and optional policies that cannot run are moved to
``skipped`` with the reason. Every table is checked against its dataclass's type hints (as
registry parameters are, :meth:`~schedlab.validate.Table.fields`): :class:`ExperimentSpec`,
:class:`WorkloadSpec`, :class:`PolicySpec`, :class:`~schedlab.evaluation.settings.StatsSettings`
and :class:`ReportSpec`. The resolved spec (:meth:`ExperimentSpec.to_json`) is written beside
the results.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, get_args

import numpy as np

from schedlab.errors import SpecError, UnknownNameError
from schedlab.evaluation.metrics import METRICS, NOT_RANKED
from schedlab.evaluation.settings import STATS_FIELDS, StatsSettings
from schedlab.extras import why_missing
from schedlab.params import Interval, check_load, check_params, parameters
from schedlab.policies.shipped import checkpoint_path, find_checkpoint
from schedlab.registry import (
    Registry,
    generators,
    loaders,
    make_policy,
    models,
    policies,
    policy_key,
    policy_name,
)
from schedlab.simulator.config import ClusterConfig
from schedlab.validate import Table, read_document


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkloadSpec:
    """One workload: a generator at some loads, or a loaded trace."""

    name: str
    """Unique name; it labels the workload's results and files."""
    description: str = ""
    """What the workload is and how it was cut (e.g. the sampling protocol), for the report."""
    generator: str | None = None
    """Registered generator name (exclusive with ``loader``)."""
    loader: str | None = None
    """Registered loader name or ``"jobset"`` (a JobSet Parquet file)."""
    path: str | None = None
    """Trace file, absolute once resolved."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Generator parameters, or keyword arguments of the loader."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """:class:`~schedlab.loaders.traces.options.TraceOptions` fields of a trace."""
    loads: Annotated[tuple[float, ...], Interval(gt=0)] = ()
    """Offered loads (fractions of capacity) of a generator; empty for a trace."""
    rates: Annotated[tuple[float, ...], Interval(gt=0)] = ()
    """Arrival rates the loads were derived from, when the spec gave rates."""
    jobsets: Annotated[int, Interval(ge=1)] = 100
    """Jobsets per load."""
    seed: int = 0
    """Seed of the generator (or of the trace's sampling)."""
    cluster: Mapping[str, Any] = field(default_factory=dict)
    """Fields of ``[cluster]`` this workload's runs replace (e.g. ``{"slots": 20}``: Guo et al. 2021
    Fig. 11 compares queue sizes); empty: the spec's cluster."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicySpec:
    """One policy: a spec string and the name it has in results."""

    spec: str
    """``name:key=value,...`` as for ``schedlab simulate --policy``."""
    name: str
    """Name in results and reports (default: the spec as written)."""
    optional: bool = False
    """Run only if registered and its checkpoint exists (else listed in ``skipped``)."""
    workloads: tuple[str, ...] = ()
    """Workloads this policy runs on (a learned policy trained for one configuration);
    empty: every workload."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReportSpec:
    """Presentation settings."""

    title: str = ""
    """Report title (default: the experiment's description or name)."""
    focus_load: Annotated[float, Interval(gt=0)] | None = None
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
    cluster: Any = field(default_factory=ClusterConfig)
    """Simulator settings: the config of the model kind the policies act on
    (:func:`model_of`; a :class:`~schedlab.simulator.config.ClusterConfig` for the cluster
    model)."""
    metrics: StatsSettings = field(default_factory=StatsSettings)
    """Metrics and statistics settings (its seed: the master seed)."""
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
        tup, m, seed = tuple, d["metrics"], d.get("seed", 0)  # metrics' seed: default the master
        return cls(
            name=d["name"],
            reference=d["reference"],
            description=d.get("description", ""),
            seed=seed,
            workloads=tup(
                WorkloadSpec(**{**w, "loads": tup(w["loads"]), "rates": tup(w["rates"])})
                for w in d["workloads"]
            ),
            policies=tup(
                PolicySpec(**{**p, "workloads": tup(p.get("workloads", ()))}) for p in d["policies"]
            ),
            cluster=_config(model_of(p["spec"] for p in d["policies"]), d["cluster"]),
            metrics=StatsSettings(**{"seed": seed, **m, "secondary": tup(m["secondary"])}),
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
    data = read_document(p, error=SpecError, fmt="toml", what="spec")
    return parse_spec_dict(data, base_dir=p.resolve().parent, source=str(p))


TOP = ("experiment", "cluster", "workloads", "policies", "metrics", "report")

EXPERIMENT_KEYS = ("name", "description", "seed", "reference")
"""The fields of :class:`ExperimentSpec` the ``[experiment]`` table gives."""


def _table(data: Any, where: str, source: str, allowed: Collection[str] | None) -> Table:
    return Table(data, where, source, error=SpecError, allowed=allowed)


def parse_spec_dict(data: Mapping[str, Any], *, base_dir: Path, source: str) -> ExperimentSpec:
    """Validate and resolve an already-parsed spec (see :func:`load_spec`)."""
    top = _table(dict(data), "", source, TOP)
    exp = _table(top.get("experiment", dict), "[experiment]", source, EXPERIMENT_KEYS)
    given = exp.fields(ExperimentSpec, keys=EXPERIMENT_KEYS, defaults=True)
    seed = given["seed"]
    raw_policies = top.get("policies", list)
    model = _checked(top, "policies", lambda: model_of(_spec_strings(raw_policies)))
    config = models.load_config(model)
    cluster = _cluster_fields(
        _table(top.get("cluster", dict, {}), "[cluster]", source, None), config
    )
    raw_workloads = top.get("workloads", list)
    if not raw_workloads:
        top.fail("workloads", "at least one [[workloads]] table is required")
    children = np.random.SeedSequence(seed).spawn(len(raw_workloads))
    workloads = tuple(
        _workload(w, i, int(children[i].generate_state(1)[0]), base_dir, source, (config, cluster))
        for i, w in enumerate(raw_workloads)
    )
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        top.fail("workloads", f"workload names must be unique, got {names}")
    ran, skipped = _policies(raw_policies, base_dir, source, names)
    reference = given["reference"]
    if reference not in [p.name for p in ran]:
        exp.fail("reference", f"{reference!r} is not a policy that runs: {[p.name for p in ran]}")
    only = next(p.workloads for p in ran if p.name == reference)
    if only and set(names) - set(only):
        missing = sorted(set(names) - set(only))
        exp.fail("reference", f"{reference!r} must run on every workload (not on {missing})")
    return ExperimentSpec(
        **given,
        cluster=config(**cluster),
        workloads=workloads,
        policies=ran,
        skipped=skipped,
        metrics=_metrics(_table(top.get("metrics", dict, {}), "[metrics]", source, None), seed),
        report=_report(_table(top.get("report", dict, {}), "[report]", source, None)),
        source=source,
    )


def model_of(specs: Iterable[str]) -> str:
    """The model kind (:data:`schedlab.registry.models`) the policies ``specs`` act on: the
    first registered kind every registered one of them is tagged for (``model:<kind>``);
    unregistered names are left to the policies' own checks.

    Raises
    ------
    ValueError
        If the registered policies share no model kind.
    """
    tags = [policies.entry(n).tags for s in specs if (n := policy_name(s)) in policies]
    common = [k for k in models.names() if all(f"model:{k}" in t for t in tags)]
    if not common:
        msg = f"the policies act on no common model kind (known: {', '.join(models.names())})"
        raise ValueError(msg)
    return common[0]


def _spec_strings(items: list[Any]) -> list[str]:
    """The spec strings of a spec's ``policies`` list (malformed items are left to
    :func:`_policies`)."""
    specs = [item.get("spec") if isinstance(item, dict) else item for item in items]
    return [s for s in specs if isinstance(s, str)]


def _config(model: str, values: Mapping[str, Any]) -> Any:
    """The config of ``model`` with ``values`` (lists read back from JSON become tuples)."""
    config = models.load_config(model)
    return config(**check_params(config, values, owner=config.__name__))


def _cluster_fields(
    t: Table, config: type, base: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The fields of the model's ``config`` class a ``[cluster]`` table gives, checked: known
    names, the types of the class and its own rules (with the ``base`` fields they replace);
    a rule broken by one field alone fails at that field. TOML has no null: ``"all"`` stands
    for None where a field takes it (``slots = "all"``: the whole queue)."""
    names = tuple(f.name for f in fields(config))
    t = _table(t.data, t.where, t.source, names)
    owner = f"the {config.__name__}"
    declared = parameters(config)
    data = {
        k: None if v == "all" and type(None) in get_args(declared[k].hint) else v
        for k, v in t.data.items()
    }
    kwargs = {
        k: _checked(t, k, lambda k=k: check_params(config, {k: data[k]}, owner=owner)[k])
        for k in names
        if k in t
    }
    try:
        config(**{**(base or {}), **kwargs})
    except (TypeError, ValueError) as exc:
        for k, v in kwargs.items():
            try:
                config(**{k: v})
            except (TypeError, ValueError) as alone:
                t.fail(k, str(alone).removeprefix(f"{config.__name__}.{k} "))
        t.fail("", str(exc))
    return kwargs


WORKLOAD_KEYS = tuple(parameters(WorkloadSpec))
"""The keys of a ``[[workloads]]`` table: the fields of :class:`WorkloadSpec`."""


def _workload(
    data: Any, i: int, seed: int, base_dir: Path, source: str,
    cluster: tuple[type, Mapping[str, Any]],
) -> WorkloadSpec:  # fmt: skip
    """One ``[[workloads]]`` table; ``cluster`` is the model's config class and the spec's
    ``[cluster]`` fields its ``cluster`` replaces."""
    t = _table(data, f"[[workloads]][{i}]", source, WORKLOAD_KEYS)
    w = t.fields(WorkloadSpec, keys=[k for k in WORKLOAD_KEYS if k != "cluster"], defaults=True)
    if "seed" not in t:
        w["seed"] = seed
    generator, loader = w["generator"], w["loader"]
    if (generator is None) == (loader is None):
        t.fail("generator", "give exactly one of `generator` or `loader`")
    where = f"{t.where}.cluster"
    w["cluster"] = _cluster_fields(
        _table(t.get("cluster", dict, {}), where, source, None), *cluster
    )
    if generator is not None:
        return _generated(t, w)
    for key in ("loads", "rates", "jobsets"):
        if key in t:
            t.fail(key, "only for a `generator` workload (a trace has its own jobsets)")
    if loader != "jobset":
        _known(t, "loader", loaders, loader)
        w["params"] = _checked(t, "params", lambda: loaders.check(loader, w["params"]))
    path = base_dir / t.get("path", str)
    if not path.is_file():
        t.fail("path", f"no such file: {path}")
    w["path"] = str(path.resolve())
    if loader != "jobset":
        from schedlab.loaders.traces.options import TraceOptions

        owner, options = "trace options", w["options"]
        w["options"] = _checked(
            t, "options", lambda: check_params(TraceOptions, options, owner=owner)
        )
        _checked(t, "options", lambda: TraceOptions(**w["options"]))
    return WorkloadSpec(**w)


def _generated(t: Table, w: dict[str, Any]) -> WorkloadSpec:
    for key in ("path", "options"):
        if key in t:
            t.fail(key, "only for a `loader` workload")
    generator = w["generator"]
    _known(t, "generator", generators, generator)
    w["params"] = _checked(t, "params", lambda: generators.check(generator, w["params"]))
    gen = generators.load(generator)(**w["params"])
    for key in ("loads", "rates"):
        if len(set(w[key])) != len(w[key]):
            t.fail(key, f"values must be distinct, got {list(w[key])!r}"[:300])
    loads, rates = w["loads"], w["rates"]
    if bool(loads) == bool(rates):
        t.fail("loads", "give exactly one of `loads` or `rates` (a non-empty list)")
    if rates:
        if not hasattr(gen, "load_for_rate"):
            t.fail("rates", f"generator {generator!r} takes loads, not rates")
        loads = tuple(float(gen.load_for_rate(r)) for r in rates)
    for load in loads:
        check_load(load, where=f"{t.source}: {t.path('loads' if not rates else 'rates')}")
    return WorkloadSpec(**{**w, "loads": loads})


def _known(t: Table, key: str, registry: Registry, name: str) -> None:
    """Fail at ``key`` unless ``name`` is registered (naming the closest known names)."""
    try:
        registry.entry(name)
    except UnknownNameError as exc:
        t.fail(key, str(exc))


def _checked(t: Table, key: str, call: Callable[..., Any]) -> Any:
    """``call()`` (any parameters have defaults); a ValueError or TypeError it raises fails at
    ``key``."""
    try:
        return call()
    except (TypeError, ValueError) as exc:
        t.fail(key, str(exc))


POLICY_KEYS = tuple(parameters(PolicySpec))
"""The keys of a table of ``policies``: the fields of :class:`PolicySpec`."""


def _policies(
    items: list[Any], base_dir: Path, source: str, workloads: list[str]
) -> tuple[tuple, tuple]:
    ran: list[PolicySpec] = []
    skipped: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        entry = {"spec": item} if isinstance(item, str) else item
        t = _table(entry, f"policies[{i}]", source, POLICY_KEYS)
        given = t.fields(PolicySpec, optional=("name",), defaults=True)
        spec, optional, only = given["spec"], given["optional"], given["workloads"]
        name = given.get("name", spec)
        for w in only:
            if w not in workloads:
                close = difflib.get_close_matches(str(w), workloads, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                t.fail("workloads", f"no workload {w!r} (the spec has {workloads}){hint}")
        reason = _unavailable(spec, base_dir)
        if reason and not optional:
            t.fail("spec", reason)
        if reason:
            skipped.append((name, reason))
            continue
        spec = _with_checkpoint(spec, base_dir)
        key = _checked(t, "spec", lambda spec=spec: _identity(spec))
        if name in [p.name for p in ran]:
            t.fail("name", f"policy name {name!r} is used twice")
        if key in seen:
            t.fail("spec", f"{spec!r} is the same policy as policies[{seen[key]}] (same results)")
        seen[key] = i
        ran.append(PolicySpec(spec=spec, name=name, optional=optional, workloads=only))
    if not ran:
        msg = f"{source}: policies: no policy can run (skipped: {skipped})"
        raise SpecError(msg)
    return tuple(ran), tuple(skipped)


def _unavailable(spec: str, base_dir: Path) -> str | None:
    """Why the policy ``spec`` cannot run here (unregistered name with the closest known
    names, an extra not installed, checkpoint not found), or None."""
    try:
        entry = policies.entry(policy_name(spec))
    except UnknownNameError as exc:
        return str(exc)
    if entry.extra is not None and (why := why_missing(entry.extra, f"policy {entry.name!r}")):
        return why
    ckpt = checkpoint_path(spec)
    if ckpt is not None and find_checkpoint(ckpt, base_dir) is None:
        return f"checkpoint {ckpt!r} not found (relative to {base_dir}, or shipped)"
    return None


def _with_checkpoint(spec: str, base_dir: Path) -> str:
    """``spec`` with its checkpoint (if any) resolved to an absolute path or a shipped name."""
    ckpt = checkpoint_path(spec)
    found = None if ckpt is None else find_checkpoint(ckpt, base_dir)
    return spec if ckpt is None or found is None else spec.replace(ckpt, found, 1)


def _identity(spec: str) -> str:
    """What makes two policy specs the same policy (:func:`~schedlab.registry.policy_key`);
    the spec's parameters are checked (:class:`~schedlab.errors.ParameterError` names it)."""
    return policy_key(make_policy(spec))


def _metrics(t: Table, seed: int) -> StatsSettings:
    """The ``[metrics]`` table: :class:`StatsSettings` fields but the seed (the master seed)."""
    keys = tuple(k for k in STATS_FIELDS if k != "seed")
    t = _table(t.data, t.where, t.source, keys)
    out = StatsSettings(**t.fields(StatsSettings, keys=keys), seed=seed)
    for key, values in (("primary", [out.primary]), ("secondary", list(out.secondary))):
        bad = [v for v in values if v not in METRICS]
        if bad:
            t.fail(key, f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
        unranked = [v for v in values if v in NOT_RANKED]
        if unranked:
            t.fail(key, f"{unranked[0]!r} is reported, not compared (higher is better)")
    return replace(out, secondary=tuple(m for m in out.secondary if m != out.primary))


def _report(t: Table) -> ReportSpec:
    t = _table(t.data, t.where, t.source, tuple(parameters(ReportSpec)))
    return ReportSpec(**t.fields(ReportSpec))
