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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import SpecError
from schedlab.evaluation.spec_schema import (
    POLICY_KEYS,
    WORKLOAD_KEYS,
    ExperimentSpec,
    PolicySpec,
    ReportSpec,
    WorkloadSpec,
    model_of,
)
from schedlab.evaluation.spec_tables import (
    checked,
    parse_cluster,
    parse_metrics,
    parse_policies,
    parse_report,
    parse_workload,
    spec_table,
)
from schedlab.registry import models
from schedlab.validate import read_document

__all__ = [
    "EXPERIMENT_KEYS",
    "POLICY_KEYS",
    "TOP",
    "WORKLOAD_KEYS",
    "ExperimentSpec",
    "PolicySpec",
    "ReportSpec",
    "WorkloadSpec",
    "load_spec",
    "model_of",
    "parse_spec_dict",
]


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


def parse_spec_dict(data: Mapping[str, Any], *, base_dir: Path, source: str) -> ExperimentSpec:
    """Validate and resolve an already-parsed spec (see :func:`load_spec`)."""
    top = spec_table(dict(data), "", source, TOP)
    exp = spec_table(top.get("experiment", dict), "[experiment]", source, EXPERIMENT_KEYS)
    given = exp.fields(ExperimentSpec, keys=EXPERIMENT_KEYS, defaults=True)
    seed = given["seed"]
    raw_policies = top.get("policies", list)
    model = checked(top, "policies", lambda: model_of(_spec_strings(raw_policies)))
    config = models.load_config(model)
    cluster = parse_cluster(
        spec_table(top.get("cluster", dict, {}), "[cluster]", source, None), config
    )
    raw_workloads = top.get("workloads", list)
    if not raw_workloads:
        top.fail("workloads", "at least one [[workloads]] table is required")
    children = np.random.SeedSequence(seed).spawn(len(raw_workloads))
    workloads = tuple(
        parse_workload(
            w, i, int(children[i].generate_state(1)[0]), base_dir, source, (config, cluster)
        )
        for i, w in enumerate(raw_workloads)
    )
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        top.fail("workloads", f"workload names must be unique, got {names}")
    ran, skipped = parse_policies(raw_policies, base_dir, source, names)
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
        metrics=parse_metrics(
            spec_table(top.get("metrics", dict, {}), "[metrics]", source, None), seed
        ),
        report=parse_report(spec_table(top.get("report", dict, {}), "[report]", source, None)),
        source=source,
    )


def _spec_strings(items: list[Any]) -> list[str]:
    """The spec strings of a spec's ``policies`` list (malformed items are left to
    :func:`~schedlab.evaluation.spec_tables.parse_policies`)."""
    specs = [item.get("spec") if isinstance(item, dict) else item for item in items]
    return [s for s in specs if isinstance(s, str)]
