"""The checks of each table of an experiment spec (:mod:`schedlab.evaluation.spec`).

One function per table: :func:`parse_cluster` (the model's config fields), :func:`parse_workload`
(a generator at its loads, or a trace with its loader and options), :func:`parse_policies` (the
policies that run and those skipped), :func:`parse_metrics` and :func:`parse_report`. Each
checks its table against its dataclass's type hints (:meth:`~schedlab.validate.Table.fields`)
and fails with a :class:`~schedlab.errors.SpecError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, get_args

from schedlab.errors import SpecError, UnknownNameError
from schedlab.evaluation.metrics import METRICS, NOT_RANKED
from schedlab.evaluation.settings import STATS_FIELDS, StatsSettings
from schedlab.evaluation.spec_schema import (
    POLICY_KEYS,
    WORKLOAD_KEYS,
    PolicySpec,
    ReportSpec,
    WorkloadSpec,
)
from schedlab.extras import why_missing
from schedlab.param_checks import check_load, check_params, did_you_mean
from schedlab.params import parameters
from schedlab.policies.shipped import checkpoint_path, find_checkpoint
from schedlab.registry import (
    Registry,
    generators,
    loaders,
    make_policy,
    policies,
    policy_key,
    policy_name,
)
from schedlab.validate import Table


def spec_table(data: Any, where: str, source: str, allowed: Collection[str] | None) -> Table:
    """``data`` as the spec table at ``where`` of ``source`` (its keys among ``allowed``; None:
    any), failing with :class:`~schedlab.errors.SpecError`."""
    return Table(data, where, source, error=SpecError, allowed=allowed)


def parse_cluster(t: Table, config: type, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields of the model's ``config`` class a ``[cluster]`` table gives, checked: known
    names, the types of the class and its own rules (with the ``base`` fields they replace);
    a rule broken by one field alone fails at that field. TOML has no null: ``"all"`` stands
    for None where a field takes it (``slots = "all"``: the whole queue)."""
    names = tuple(f.name for f in fields(config))
    t = spec_table(t.data, t.where, t.source, names)
    owner = f"the {config.__name__}"
    declared = parameters(config)
    data = {
        k: None if v == "all" and type(None) in get_args(declared[k].hint) else v
        for k, v in t.data.items()
    }
    kwargs = {
        k: checked(t, k, lambda k=k: check_params(config, {k: data[k]}, owner=owner)[k])
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


def parse_workload(
    data: Any,
    i: int,
    seed: int,
    base_dir: Path,
    source: str,
    cluster: tuple[type, Mapping[str, Any]],
) -> WorkloadSpec:
    """One ``[[workloads]]`` table; ``cluster`` is the model's config class and the spec's
    ``[cluster]`` fields its ``cluster`` replaces."""
    t = spec_table(data, f"[[workloads]][{i}]", source, WORKLOAD_KEYS)
    w = t.fields(WorkloadSpec, keys=[k for k in WORKLOAD_KEYS if k != "cluster"], defaults=True)
    if "seed" not in t:
        w["seed"] = seed
    generator, loader = w["generator"], w["loader"]
    if (generator is None) == (loader is None):
        t.fail("generator", "give exactly one of `generator` or `loader`")
    where = f"{t.where}.cluster"
    w["cluster"] = parse_cluster(
        spec_table(t.get("cluster", dict, {}), where, source, None), *cluster
    )
    if generator is not None:
        return _generated(t, w)
    for key in ("loads", "rates", "jobsets"):
        if key in t:
            t.fail(key, "only for a `generator` workload (a trace has its own jobsets)")
    if loader != "jobset":
        _known(t, "loader", loaders, loader)
        w["params"] = checked(t, "params", lambda: loaders.check(loader, w["params"]))
    path = base_dir / t.get("path", str)
    if not path.is_file():
        t.fail("path", f"no such file: {path}")
    w["path"] = str(path.resolve())
    if loader != "jobset":
        from schedlab.loaders.traces.options import TraceOptions

        owner, options = "trace options", w["options"]
        w["options"] = checked(
            t, "options", lambda: check_params(TraceOptions, options, owner=owner)
        )
        checked(t, "options", lambda: TraceOptions(**w["options"]))
    return WorkloadSpec(**w)


def _generated(t: Table, w: dict[str, Any]) -> WorkloadSpec:
    for key in ("path", "options"):
        if key in t:
            t.fail(key, "only for a `loader` workload")
    generator = w["generator"]
    _known(t, "generator", generators, generator)
    w["params"] = checked(t, "params", lambda: generators.check(generator, w["params"]))
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


def checked(t: Table, key: str, call: Callable[..., Any]) -> Any:
    """``call()`` (any parameters have defaults); a ValueError or TypeError it raises fails at
    ``key``."""
    try:
        return call()
    except (TypeError, ValueError) as exc:
        t.fail(key, str(exc))


def parse_policies(
    items: list[Any], base_dir: Path, source: str, workloads: list[str]
) -> tuple[tuple[PolicySpec, ...], tuple[tuple[str, str], ...]]:
    """The spec's ``policies`` list: the :class:`PolicySpec` of every policy that runs (its
    checkpoint resolved) and ``(name, reason)`` of every optional one that cannot run here;
    ``workloads`` are the spec's workload names (a policy may run on some only)."""
    ran: list[PolicySpec] = []
    skipped: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        entry = {"spec": item} if isinstance(item, str) else item
        t = spec_table(entry, f"policies[{i}]", source, POLICY_KEYS)
        given = t.fields(PolicySpec, optional=("name",), defaults=True)
        spec, optional, only = given["spec"], given["optional"], given["workloads"]
        name = given.get("name", spec)
        for w in only:
            if w not in workloads:
                hint = did_you_mean(str(w), workloads)
                t.fail("workloads", f"no workload {w!r} (the spec has {workloads}){hint}")
        reason = _unavailable(spec, base_dir)
        if reason and not optional:
            t.fail("spec", reason)
        if reason:
            skipped.append((name, reason))
            continue
        spec = _with_checkpoint(spec, base_dir)
        key = checked(t, "spec", lambda spec=spec: _identity(spec))
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


def parse_metrics(t: Table, seed: int) -> StatsSettings:
    """The ``[metrics]`` table: :class:`StatsSettings` fields but the seed (the master seed)."""
    keys = tuple(k for k in STATS_FIELDS if k != "seed")
    t = spec_table(t.data, t.where, t.source, keys)
    out = StatsSettings(**t.fields(StatsSettings, keys=keys), seed=seed)
    for key, values in (("primary", [out.primary]), ("secondary", list(out.secondary))):
        bad = [v for v in values if v not in METRICS]
        if bad:
            t.fail(key, f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
        unranked = [v for v in values if v in NOT_RANKED]
        if unranked:
            t.fail(key, f"{unranked[0]!r} is reported, not compared (higher is better)")
    return replace(out, secondary=tuple(m for m in out.secondary if m != out.primary))


def parse_report(t: Table) -> ReportSpec:
    """The ``[report]`` table."""
    t = spec_table(t.data, t.where, t.source, tuple(parameters(ReportSpec)))
    return ReportSpec(**t.fields(ReportSpec))
