"""Registries map names to lazily imported entry points (Gymnasium's ``register``/``make``).

One registry per kind (generators, loaders, policies, trainers); ``import schedlab`` imports none
of the entry points, so torch or numba are loaded only when a name that needs them is made.
Entries keep their registration order (the report order of the heuristics) and carry tags, so
lists of names are derived from here (``policies.names(tag="heuristic")``), never repeated.
Parameters given by name are checked against the entry point's type hints
(:mod:`schedlab.params`).
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from schedlab.errors import ParameterError, UnknownNameError
from schedlab.params import Param, check_params, parameters


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """A registered name."""

    name: str
    """The name users type (lower case)."""
    target: str
    """``"module.path:attribute"`` of the class or function to call."""
    summary: str = ""
    """One line for ``--help`` and listings."""
    positional: str | None = None
    """Keyword that a bare first option of a spec fills (``deeprm:run/best.pt`` -> checkpoint)."""
    tags: frozenset[str] = frozenset()
    """What the entry is, for selections: ``heuristic``/``learned``, ``model:cluster`` (a simulator
    model it supports), ``baseline`` (a heuristic learned policies are compared with) ..."""
    config: str | None = None
    """``"module:attribute"`` of the config dataclass of the entry (model kinds: loaded
    without importing the simulator, for spec validation)."""
    report: str | None = None
    """``"module:attribute"`` of the function drawing a result's report (trainers:
    ``report(result, config_dict) -> Path``); reports live above policies, so the CLI calls it."""


@dataclass(slots=True)
class Registry:
    """Name -> lazily imported callable, for one kind of object, in registration order."""

    kind: str
    """What the entries are (``"policy"``), for messages."""
    reserved: tuple[str, ...] = ()
    """Parameters the caller passes itself, never given by name (a loader's ``options``)."""
    _entries: dict[str, Entry] = field(default_factory=dict)

    def register(
        self,
        name: str,
        target: str,
        summary: str = "",
        *,
        positional: str | None = None,
        tags: Iterable[str] = (),
        config: str | None = None,
        report: str | None = None,
    ) -> None:
        """Register ``target`` (``"module:attr"``) under ``name``; names are unique."""
        key = name.lower()
        if key in self._entries:
            msg = f"{self.kind} {name!r} is already registered"
            raise ValueError(msg)
        self._entries[key] = Entry(
            name=key, target=target, summary=summary, positional=positional,
            tags=frozenset(tags), config=config, report=report,
        )  # fmt: skip

    def entry(self, name: str) -> Entry:
        """The entry for ``name``; an unknown name suggests the closest known ones."""
        key = name.lower()
        if key not in self._entries:
            close = difflib.get_close_matches(key, list(self._entries), n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            msg = f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            raise UnknownNameError(msg)
        return self._entries[key]

    def load(self, name: str) -> Any:
        """Import and return what is registered as ``name`` (a class or function to call; a
        trainer's :class:`~schedlab.policies.training.Trainer`, a model kind's
        :class:`~schedlab.simulator.model.ModelKind`)."""
        return _import(self.entry(name).target)

    def load_config(self, name: str) -> type:
        """Import and return the config dataclass of ``name`` (see :attr:`Entry.config`)."""
        entry = self.entry(name)
        if entry.config is None:
            msg = f"{self.kind} {name!r} declares no config dataclass"
            raise ValueError(msg)
        cls: type = _import(entry.config)
        return cls

    def load_report(self, name: str) -> Callable[..., Any]:
        """Import and return the report function of ``name`` (see :attr:`Entry.report`)."""
        entry = self.entry(name)
        if entry.report is None:
            msg = f"{self.kind} {name!r} declares no report function"
            raise ValueError(msg)
        report: Callable[..., Any] = _import(entry.report)
        return report

    def parameters(self, name: str) -> dict[str, Param]:
        """The parameters ``name`` takes by name (see :func:`schedlab.params.parameters`)."""
        return {k: p for k, p in parameters(self.load(name)).items() if k not in self.reserved}

    def check(self, name: str, params: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
        """``params`` of ``name`` checked against its type hints (:func:`check_params`);
        ``where`` says where the user gave them (``"-p"``), for messages."""
        owner = f"{self.kind} {self.entry(name).name!r}"
        return check_params(
            self.load(name), params, owner=owner, where=where, reserved=self.reserved
        )

    def create(self, name: str, params: Mapping[str, Any], *, where: str = "") -> Any:
        """Call the entry point ``name`` with ``params``, checked first (see :meth:`check`)."""
        return self.load(name)(**self.check(name, params, where=where))

    def make(self, name: str, /, **kwargs: Any) -> Any:
        """Call the entry point registered as ``name`` with ``kwargs`` (checked)."""
        return self.create(name, kwargs)

    def names(self, *, tag: str | None = None) -> list[str]:
        """Registered names in registration order; with ``tag``, only entries carrying it."""
        return [n for n, e in self._entries.items() if tag is None or tag in e.tags]

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._entries


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


generators = Registry("generator")
policies = Registry("policy")
loaders = Registry("loader", reserved=("options",))
trainers = Registry("trainer")

for _name, _target, _summary in [
    ("deeprm", "deeprm_workload:DeepRMGenerator",
     "DeepRM (Mao et al. 2016): Bernoulli/binomial arrivals, bimodal durations, dominant demands"),
    ("poisson", "poisson:PoissonGenerator",
     "DeepRM_Plus: Poisson(λ) arrivals per step, DeepRM's job model (load = 1.845·λ)"),
    ("liu-uniform", "liu:LiuUniformGenerator",
     "Liu et al.: intervals uniform on a..b steps (1..33), scaled to the load; DeepRM jobs"),
    ("liu-bernoulli", "liu:LiuBernoulliGenerator",
     "Liu et al.: intervals b with probability p else a (33/1, p=0.5), scaled; DeepRM jobs"),
    ("liu-beta", "liu:LiuBetaGenerator",
     "Liu et al.: intervals a + (b−a)·Beta(alpha, beta) (2, 2), scaled; DeepRM jobs"),
    ("dag", "dag_jobs:DagGenerator",
     "DAG jobs (chain, fork-join, or shapes fitted by `schedlab fit`) of DeepRM tasks, Poisson"),
]:  # fmt: skip
    generators.register(
        _name, f"schedlab.loaders.generators.{_target}", _summary, tags=("synthetic",)
    )
generators.register(
    "liu-multicluster",
    "schedlab.loaders.generators.liu_multicluster:LiuMultiClusterGenerator",
    "Liu et al. (seed 003): streaming/time-critical/general jobs for 5 heterogeneous clusters",
    tags=("synthetic", "model:multicluster"),
)
generators.register(
    "fitted",
    "schedlab.loaders.generators.fitted:FittedGenerator",
    "a workload model fitted to a trace by `schedlab fit` (--model fit/model.json)",
    tags=("fitted",),
)
for _name, _cls, _summary, _tags in [
    ("random", "RandomPolicy", "uniformly random job among those that fit now", ()),
    ("fcfs", "FCFS", "first come, first served among jobs that fit now", ()),
    ("sjf", "SJF", "shortest job first (score 1/duration)", ("baseline",)),
    ("packer", "Packer", "alignment of demand with free resources (Tetris packing score)",
     ("baseline",)),
    ("tetris", "TetrisStar", "Tetris*: knob-weighted packing + shortest-job score", ("baseline",)),
    ("hrrn", "HRRN", "highest response ratio next ((wait + duration) / duration)", ()),
    ("wfp3", "WFP3", "HPC: (wait / estimate)^3 * processors (Tang et al. 2009)", ("hpc",)),
    ("unicep", "UNICEP", "HPC: wait / (log2(processors) * estimate) (Tang et al. 2009)", ("hpc",)),
    ("f1", "F1", "HPC: lowest log10(estimate) * processors + 870 log10(submit) first "
     "(Carastan-Santos & de Camargo 2017)", ("hpc",)),
    ("cpf", "CPF", "DAG: critical path first (longest remaining path to the job's end)", ("dag",)),
    ("srjf", "SRJF", "DAG: shortest remaining job first, by remaining critical path", ("dag",)),
]:  # fmt: skip
    policies.register(
        _name, f"schedlab.policies.heuristics:{_cls}", _summary,
        tags=("heuristic", "model:cluster", *_tags),
    )  # fmt: skip
for _name, _cls, _summary in [
    ("liu-ran", "RAN", "Liu et al.: a random cluster for the job of least executor request"),
    ("liu-rr", "RR", "Liu et al.: round-robin clusters for the job of least executor request"),
    ("liu-maf", "MAF", "Liu et al.: most available capacity (1 − RO)·CAP/ER over a past window"),
]:
    policies.register(
        _name, f"schedlab.policies.liu_baselines:{_cls}", _summary,
        tags=("model:multicluster", "baseline:multicluster"),
    )  # fmt: skip
for _name, _target, _model, _summary in [
    ("deeprm", "deeprm:DeepRMPolicy", "cluster",
     "DeepRM policy network trained by `schedlab train` (deeprm:PATH.pt or a shipped name)"),
    ("deeprm-plus", "deeprm:DeepRMPlusPolicy", "cluster",
     "DeepRM_Plus CNN (seed 004) trained by `schedlab train deeprm-plus` (deeprm-plus:PATH.pt)"),
    ("liu-rl", "liu_networks:LiuValuePolicy", "multicluster",
     "Liu et al.'s value model (RL-LSFC/RL-FC) trained by `schedlab train liu` "
     "(liu-rl:PATH.pt or a shipped name: liu-lsfc, liu-lsfcb, liu-fc)"),
    ("sb3", "external:SB3Policy", "cluster",
     "an agent saved by Stable-Baselines3/sb3-contrib after training on a schedlab env "
     "(sb3:PATH.zip; pip install 'schedlab[rl]')"),
]:  # fmt: skip
    policies.register(
        _name, f"schedlab.policies.{_target}", _summary, positional="checkpoint",
        tags=("learned", f"model:{_model}"),
    )  # fmt: skip
policies.register(
    "callable", "schedlab.policies.external:CallablePolicy",
    "any function (obs, mask) -> action of a schedlab env's observation "
    "(callable:package.module:function)",
    positional="fn", tags=("learned", "model:cluster"),
)  # fmt: skip
for _name, _target, _summary in [
    ("alibaba2018", "alibaba2018:read_alibaba2018", "Alibaba cluster-trace-v2018 batch_task"),
    ("alibaba2017", "alibaba2017:read_alibaba2017", "Alibaba cluster-trace-v2017 batch_task"),
    ("swf", "swf:read_swf", "Standard Workload Format (Parallel Workloads Archive)"),
]:
    loaders.register(_name, f"schedlab.loaders.traces.{_target}", _summary, tags=("trace",))
for _name, _module, _report, _tags, _summary in [
    (
        "deeprm",
        "reinforce",
        "learning",
        ("model:cluster", "policy:deeprm"),
        "DeepRM (seed 000): REINFORCE with a per-step baseline; writes a `deeprm:` checkpoint",
    ),
    (
        "deeprm-plus",
        "deeprm_plus",
        "learning",
        ("model:cluster", "policy:deeprm-plus"),
        "DeepRM_Plus (seed 004): CNN cloned from an expert (SJF), then REINFORCE; `deeprm-plus:`",
    ),
    (
        "liu",
        "liu_value",
        "liu",
        ("model:multicluster", "policy:liu-rl"),
        "Liu et al. (seed 003): RL-LSFC/RL-FC value learning with MAF-guided ε-greedy; writes a "
        "`liu-rl:` checkpoint",
    ),
]:
    trainers.register(
        _name, f"schedlab.policies.{_module}:TRAINER", _summary,
        report=f"schedlab.reports.{_report}:report_training", tags=_tags,
    )  # fmt: skip

models = Registry("model kind")
"""Simulator model kinds: each target is a :class:`~schedlab.simulator.model.ModelKind` (its
config class, constructor, results, schedule and policy checks); ``config`` names the config
class so that it loads without the simulator (spec validation). Policies and generators for a
kind carry the tag ``model:<name>``; the first registered kind is the default."""
for _name, _target, _config, _summary in [
    ("cluster", "run:CLUSTER", "config:ClusterConfig",
     "m identical machines, d resources, a queue of M visible slots (DeepRM, seeds 000/002/004)"),
    ("multicluster", "multicluster.run:MULTICLUSTER", "multicluster.config:MultiClusterConfig",
     "Liu et al.: heterogeneous, elastic clusters with deadlines (seed 003)"),
]:  # fmt: skip
    models.register(
        _name, f"schedlab.simulator.{_target}", _summary,
        config=f"schedlab.simulator.{_config}", tags=(f"model:{_name}",),
    )  # fmt: skip


def parse_spec(spec: str, *, positional: str | None = None) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and keyword arguments.

    Values are read as JSON where they parse (numbers, booleans), else kept as strings, e.g.
    ``"tetris:knob=0.3"`` -> ``("tetris", {"knob": 0.3})``. When ``positional`` names a keyword,
    a first option without ``=`` is its value: ``"deeprm:runs/a/best.pt"`` with
    ``positional="checkpoint"`` -> ``("deeprm", {"checkpoint": "runs/a/best.pt"})``.

    Raises
    ------
    ParameterError
        An option that is not ``key=value``, or a key given twice.
    """
    name, _, rest = spec.partition(":")
    kwargs: dict[str, Any] = {}
    for i, item in enumerate(filter(None, rest.split(","))):
        key, eq, raw = item.partition("=")
        if not eq and i == 0 and positional is not None:
            key, value = positional, item.strip()
        elif not eq or not key.strip():
            msg = f"bad option {item!r} in {spec!r}: expected key=value"
            raise ParameterError(msg)
        else:
            key = key.strip()
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, RecursionError):
                value = raw
        if key in kwargs:
            msg = f"{spec!r}: option {key!r} is given twice"
            raise ParameterError(msg)
        kwargs[key] = value
    return name.strip(), kwargs


def policy_name(spec: str) -> str:
    """The registered name a policy spec starts with: ``"tetris+align:knob=0.3"`` -> ``tetris``."""
    return spec.partition(":")[0].partition("+")[0].strip()


def parse_policy(spec: str) -> tuple[str, dict[str, Any]]:
    """``(name, parameters)`` of a policy spec, its positional option filled (see
    :func:`parse_spec`); the name must be registered. ``order+word+word`` names a heuristic with
    a queue discipline and/or a placement rule, in any order: ``sjf+bestfit`` is
    ``sjf:placement=bestfit``, ``fcfs+easy`` is ``fcfs:queue=easy``, ``sjf+easy+bestfit`` both
    (a word is a queue discipline if the policy's ``queue`` parameter lists it, else a rule).

    Raises
    ------
    ParameterError
        A discipline or rule given twice (``+`` and ``queue=``/``placement=`` included).
    """
    head, colon, rest = spec.partition(":")
    name, *words = (w.strip() for w in head.split("+"))
    base, kwargs = parse_spec(name + colon + rest, positional=policies.entry(name).positional)
    queue = policies.parameters(name).get("queue") if words else None
    queues = get_args(queue.hint) if queue is not None else ()
    extra: dict[str, str] = {}
    for word in words:
        key = "queue" if word in queues else "placement"
        if key in extra or key in kwargs:
            msg = f"{spec!r}: {key} is given twice"
            raise ParameterError(msg)
        extra[key] = word
    return base, {**extra, **kwargs}


def make_policy(spec: str, *, where: str | None = None) -> Any:
    """A policy from a spec such as ``"sjf"`` or ``"tetris:knob=0.3"``, parameters checked.

    A policy made with parameters is named by its spec, so variants stay apart in results;
    ``label=NAME`` names it explicitly (``deeprm:runs/a/best.pt,label=deeprm-0.7``). ``where``
    says where the spec was given, for messages (default: the spec itself).
    """
    name, kwargs = parse_policy(spec)
    label = kwargs.pop("label", None)
    policy = policies.create(name, kwargs, where=spec if where is None else where)
    if label is not None:
        policy.name = str(label)
    elif not set(kwargs) <= {"placement", "queue"}:
        policy.name = spec  # (a placement and a discipline name themselves: sjf+easy+bestfit)
    return policy


def policy_key(policy: Any) -> str:
    """What makes two policies the same: class and every parameter (equal keys, equal
    schedules), e.g. ``tetris`` and ``tetris:knob=0.5``."""
    params = json.dumps(policy.get_params(), sort_keys=True, default=str)
    return f"{type(policy).__module__}.{type(policy).__qualname__}:{params}"
