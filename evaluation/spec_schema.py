"""The tables of an experiment spec as frozen dataclasses (:mod:`schedlab.evaluation.spec`).

:class:`ExperimentSpec` is a validated, resolved spec; :class:`WorkloadSpec`,
:class:`PolicySpec` and :class:`ReportSpec` are its tables. The keys a table takes are its
dataclass's fields (:data:`WORKLOAD_KEYS`, :data:`POLICY_KEYS`); :func:`model_of` is the model
kind the spec's policies act on, whose config class is its ``[cluster]`` table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from schedlab.evaluation.settings import StatsSettings
from schedlab.param_checks import check_params
from schedlab.params import Interval, parameters
from schedlab.registry import models, policies, policy_name
from schedlab.simulator.config import ClusterConfig


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


def _config(model: str, values: Mapping[str, Any]) -> Any:
    """The config of ``model`` with ``values`` (lists read back from JSON become tuples)."""
    config = models.load_config(model)
    return config(**check_params(config, values, owner=config.__name__))


WORKLOAD_KEYS = tuple(parameters(WorkloadSpec))
"""The keys of a ``[[workloads]]`` table: the fields of :class:`WorkloadSpec`."""

POLICY_KEYS = tuple(parameters(PolicySpec))
"""The keys of a table of ``policies``: the fields of :class:`PolicySpec`."""
