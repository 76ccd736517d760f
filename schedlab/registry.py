"""Registries map names to lazily imported entry points (Gymnasium's ``register``/``make``).

One registry per kind (generators, loaders, policies, trainers, model kinds); ``import schedlab``
imports none of the entry points, so torch or numba are loaded only when a name that needs them
is made. Entries keep their registration order (the report order of the heuristics) and carry
tags, so lists of names are derived from here (``policies.names(tag="heuristic")``), never
repeated. Parameters given by name are checked against the entry point's type hints
(:mod:`schedlab.params`).

Three kinds of names (:attr:`Entry.origin` says which, ``schedlab list`` shows it):

* **built in**: registered below;
* **plug-ins**: entry points of the installed distributions in the group ``schedlab.<kind>``
  (:data:`GROUPS`: ``schedlab.policies``, ``schedlab.generators``, ``schedlab.loaders``,
  ``schedlab.trainers``, ``schedlab.models``), found the first time a name is not a built-in one
  or the registry is listed; a plug-in is imported only when its name is used (or listed). A
  plug-in named like a built-in entry, or like another plug-in, is refused (with a
  :class:`~schedlab.errors.PluginWarning` naming both origins): the built-in name keeps its
  meaning, and the refused object stays reachable by reference;
* **references** ``package.module:attr`` (Gymnasium's ``module:EnvId``), accepted wherever a
  name is: ``schedlab simulate jobs.parquet --policy my_pkg.sched:LeastWork+easy``.

A plug-in or referenced object describes itself with optional attributes: ``summary`` (else
the first paragraph of its docstring, or of its module's for an instance), ``tags``, ``models``
(model kinds it supports, tagged ``model:<kind>``; a policy's ``models`` attribute of the
Policy protocol) and ``positional`` (the keyword a bare first option fills, for learned
policies' checkpoints).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from schedlab import extras
from schedlab.entries import Entry, described, import_target, origin_of
from schedlab.errors import MissingExtraError, ParameterError, PluginWarning, UnknownNameError
from schedlab.param_checks import check_params
from schedlab.params import Param, parameters


@dataclass(slots=True)
class Registry:
    """Name -> lazily imported callable, for one kind of object, in registration order."""

    kind: str
    """What the entries are (``"policy"``), for messages."""
    group: str | None = None
    """Entry-point group of the plug-ins of this kind (``schedlab.policies``); None: none."""
    reserved: tuple[str, ...] = ()
    """Parameters the caller passes itself, never given by name (a loader's ``options``)."""
    requires: tuple[str, ...] = ()
    """Attributes what a plug-in or reference makes must have (a policy's protocol)."""
    _entries: dict[str, Entry] = field(default_factory=dict)
    _plugins: dict[str, Entry] | None = None
    """Plug-in entries not yet described (imported) by :meth:`entry`; None: not discovered."""
    _refused: list[str] = field(default_factory=list)
    _broken: dict[str, str] = field(default_factory=dict)
    _references: dict[str, Entry] = field(default_factory=dict)

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
        extra: str | None = None,
    ) -> None:
        """Register ``target`` (``"module:attr"``) under ``name``; names are unique."""
        key = name.lower()
        if key in self._entries:
            msg = (
                f"{self.kind} {name!r} is already registered (by {self._entries[key].origin}, "
                f"as {self._entries[key].target})"
            )
            raise ValueError(msg)
        self._entries[key] = Entry(
            name=key, target=target, summary=summary, positional=positional,
            tags=frozenset(tags), config=config, report=report, extra=extra,
        )  # fmt: skip

    def entry(self, name: str) -> Entry:
        """The entry for ``name`` (built in, a plug-in or a ``package.module:attr``
        reference); an unknown name suggests the closest known ones.

        Raises
        ------
        UnknownNameError
            Neither registered nor an importable reference.
        """
        key = name.lower()
        if key not in self._entries and ":" in name:
            return self._reference(name)
        self._discover()
        if key not in self._entries:
            close = difflib.get_close_matches(key, list(self._entries), n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            msg = f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            raise UnknownNameError(msg)
        if key in self._broken:
            raise UnknownNameError(self._broken[key])
        pending = self._plugins or {}
        if key in pending:  # a plug-in's first use: import it to read its tags and summary
            plugin = pending[key]
            try:
                self._entries[key] = described(plugin)
            except Exception as exc:  # whatever its import raises, said in one line
                msg = (
                    f"{self.kind} {key!r} of {plugin.origin} ({plugin.target}) cannot be "
                    f"imported: {type(exc).__name__}: {exc}"
                )
                raise UnknownNameError(msg) from exc
            del pending[key]
        return self._entries[key]

    def broken(self) -> dict[str, str]:
        """Installed plug-ins that cannot be imported: name -> why (after listing)."""
        return dict(self._broken)

    def refuse(self, name: str, why: str) -> None:
        """Set the plug-in ``name`` aside as broken (listed by :meth:`broken`, never imported
        again), e.g. one whose import did not end in time."""
        key = name.lower()
        (self._plugins or {}).pop(key, None)
        self._entries.pop(key, None)
        self._broken[key] = why

    def _discover(self) -> None:
        """Add the installed plug-ins of :attr:`group` (once), refusing clashing names."""
        if self._plugins is not None or self.group is None:
            return
        self._plugins = {}
        found: dict[str, list[importlib.metadata.EntryPoint]] = {}
        for ep in importlib.metadata.entry_points(group=self.group):
            found.setdefault(ep.name.lower(), []).append(ep)
        for key, eps in found.items():
            origins = [origin_of(ep) for ep in eps]
            if key not in self._entries and len({ep.value for ep in eps}) == 1:
                entry = Entry(name=key, target=eps[0].value, origin=origins[0])
                self._entries[key] = self._plugins[key] = entry
                continue
            for k, (origin, ep) in enumerate(zip(origins, eps, strict=True)):
                if key in self._entries:
                    why = f"is built in ({self._entries[key].target})"
                else:
                    why = "is also registered by " + " and by ".join(
                        f"{o} ({e.value})"
                        for o, e in zip(origins, eps, strict=True) if e is not eps[k]
                    )  # fmt: skip
                msg = (
                    f"{self.kind} {key!r} of {origin} ({ep.value}, entry point group "
                    f"{self.group}) is refused: the name {why}; name it as {ep.value}"
                )
                self._refused.append(msg)
                warnings.warn(msg, PluginWarning, stacklevel=3)

    def _reference(self, name: str) -> Entry:
        """The entry of a ``package.module:attr`` reference (imported now)."""
        if name not in self._references:
            module = name.partition(":")[0]
            if module.lower() in self._entries:
                msg = (
                    f"{name!r}: a {self.kind} name takes no options after ':' here; give "
                    f"{module!r} its parameters separately (-p KEY=VALUE, a spec's params, or "
                    "keyword arguments)"
                )
                raise UnknownNameError(msg)
            try:
                import_target(name)
            except Exception as exc:  # whatever importing someone's module raises: one line
                close = difflib.get_close_matches(module.lower(), list(self._entries), n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                msg = (
                    f"unknown {self.kind} {module!r}{hint}; as a reference package.module:attr, "
                    f"{name!r} cannot be imported ({type(exc).__name__}: {exc})"
                )
                raise UnknownNameError(msg) from exc
            plain = Entry(name=name, target=name, origin="reference")
            self._references[name] = described(plain)
        return self._references[name]

    @property
    def refused(self) -> list[str]:
        """Why each refused plug-in was refused (a name clash), after discovery."""
        self._discover()
        return list(self._refused)

    def load(self, name: str) -> Any:
        """Import and return what is registered as ``name`` (a class or function to call; a
        trainer's :class:`~schedlab.policies.training.Trainer`, a model kind's
        :class:`~schedlab.simulator.model.ModelKind`).

        Raises
        ------
        MissingExtraError
            A built-in entry needs an extra that is not installed (torch for learned policies).
        """
        entry = self.entry(name)
        what = f"{self.kind} {entry.name!r}"
        if entry.extra is not None:
            extras.require(entry.extra, what)
        try:
            return import_target(entry.target)
        except ModuleNotFoundError as exc:  # a built-in needing an extra it does not declare
            extra = extras.extra_of(exc.name or "") if entry.origin == "schedlab" else None
            why = None if extra is None else extras.why_missing(extra, what)
            if why is None:
                raise
            raise MissingExtraError(why) from exc

    def load_config(self, name: str) -> type:
        """Import and return the config dataclass of ``name`` (see :attr:`Entry.config`; a
        plug-in model kind's is its ``config`` attribute)."""
        entry = self.entry(name)
        if entry.config is None and entry.origin != "schedlab":
            return self.load(name).config  # type: ignore[no-any-return]
        if entry.config is None:
            msg = f"{self.kind} {name!r} declares no config dataclass"
            raise ValueError(msg)
        cls: type = import_target(entry.config)
        return cls

    def load_report(self, name: str) -> Callable[..., Any]:
        """Import and return the report function of ``name`` (see :attr:`Entry.report`); a
        plug-in trainer's is its ``report`` attribute, else the learning-curve report."""
        entry = self.entry(name)
        if entry.report is None and entry.origin != "schedlab":
            own = getattr(self.load(name), "report", None)
            return own if callable(own) else import_target(DEFAULT_REPORT)  # type: ignore[no-any-return]
        if entry.report is None:
            msg = f"{self.kind} {name!r} declares no report function"
            raise ValueError(msg)
        report: Callable[..., Any] = import_target(entry.report)
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
        """Call the entry point ``name`` with ``params``, checked first (see :meth:`check`).

        A plug-in or reference that cannot be called so, or whose result lacks what this kind
        needs (:attr:`requires`: a policy's ``act_batch``, ...), is a
        :class:`~schedlab.errors.ParameterError` naming it."""
        entry = self.entry(name)
        checked = self.check(name, params, where=where)
        if entry.origin == "schedlab":
            return self.load(name)(**checked)
        what = f"{self.kind} {entry.name!r} ({entry.target}, {entry.origin})"
        target = self.load(name)
        if not callable(target):
            msg = f"{what} is a {type(target).__name__}, not a class or function to call"
            raise ParameterError(msg)
        try:
            made = target(**checked)
        except TypeError as exc:
            msg = f"{what} cannot be made with {dict(checked)}: {exc}"
            raise ParameterError(msg) from exc
        missing = [a for a in self.requires if not hasattr(made, a)]
        if missing:
            msg = f"{what} is not a {self.kind}: it has no {', '.join(missing)}"
            raise ParameterError(msg)
        return made

    def make(self, name: str, /, **kwargs: Any) -> Any:
        """Call the entry point registered as ``name`` with ``kwargs`` (checked)."""
        return self.create(name, kwargs)

    def names(self, *, tag: str | None = None) -> list[str]:
        """Registered names in registration order, built-in ones first, then plug-ins; with
        ``tag``, only built-in entries carrying it (``tag="plugin"``: the plug-ins), so that the
        defaults derived from tags ("every heuristic") never change with what is installed."""
        if tag is None or tag == "plugin":
            self._discover()
        if tag == "plugin":
            return [n for n, e in self._entries.items() if e.origin != "schedlab"]
        return [
            n for n, e in self._entries.items()
            if tag is None or (tag in e.tags and e.origin == "schedlab")
        ]  # fmt: skip

    def __iter__(self) -> Iterator[Entry]:
        """Every entry, plug-ins described (imported) first; one that cannot be imported is
        listed with the error as its summary."""
        self._discover()
        for key in list(self._plugins or {}):
            try:
                self.entry(key)
            except UnknownNameError as exc:  # a broken plug-in is listed, not fatal
                self.refuse(key, str(exc))
        return iter(list(self._entries.values()))

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a built-in or plug-in name, or an importable reference."""
        if not isinstance(name, str):
            return False
        if name.lower() in self._entries:
            return True
        try:
            self.entry(name)
        except UnknownNameError:
            return False
        return True


GROUPS = {kind: f"schedlab.{kind}" for kind in
          ("policies", "generators", "loaders", "trainers", "models")}  # fmt: skip
"""Entry-point group of each registry's plug-ins (``[project.entry-points."schedlab.policies"]``
in a plug-in's ``pyproject.toml``)."""


DEFAULT_REPORT = "schedlab.reports.learning:report_training"
"""The report of a plug-in trainer without its own (learning curves, checkpoint, summary)."""


generators = Registry("generator", group=GROUPS["generators"], requires=("generate_sweep",))
policies = Registry(
    "policy", group=GROUPS["policies"],
    requires=("name", "models", "view", "reset", "act_batch", "get_params"),
)  # fmt: skip
loaders = Registry("loader", group=GROUPS["loaders"], reserved=("options",))
trainers = Registry("trainer", group=GROUPS["trainers"])

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
    ("lublin", "lublin:LublinGenerator",
     "Lublin & Feitelson 2003: rigid HPC jobs on P processors, daily arrival cycle, seconds"),
]:  # fmt: skip
    generators.register(
        _name, f"schedlab.loaders.generators.{_target}", _summary, tags=("synthetic",)
    )
generators.register(
    "liu-multicluster",
    "schedlab.loaders.generators.liu_multicluster:LiuMultiClusterGenerator",
    "Liu et al. (ICPP'20): streaming/time-critical/general jobs for 5 heterogeneous clusters",
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
     "DeepRM_Plus CNN (Guo et al. 2021) trained by `schedlab train deeprm-plus` "
     "(deeprm-plus:PATH.pt)"),
    ("liu-rl", "liu_networks:LiuValuePolicy", "multicluster",
     "Liu et al.'s value model (RL-LSFC/RL-FC) trained by `schedlab train liu` "
     "(liu-rl:PATH.pt or a shipped name: liu-lsfc, liu-lsfcb, liu-fc)"),
    ("jobscore", "jobscore:JobScorePolicy", "cluster",
     "a learned priority function over the waiting jobs (per-job scores, RLScheduler-style) "
     "trained by `schedlab train jobscore` (jobscore:PATH.pt or a shipped name; +easy, +strict)"),
    ("sb3", "external:SB3Policy", "cluster",
     "an agent saved by Stable-Baselines3/sb3-contrib after training on a schedlab env "
     "(sb3:PATH.zip; needs the rl extra)"),
    ("sb3-pick", "pick_sb3:SB3PickPolicy", "cluster",
     "a Stable-Baselines3/sb3-contrib agent trained on schedlab/Pick-v0, picking from the queue "
     "(sb3-pick:PATH.zip, +easy, +strict; needs the rl extra)"),
]:  # fmt: skip
    policies.register(
        _name, f"schedlab.policies.{_target}", _summary, positional="checkpoint",
        tags=("learned", f"model:{_model}"), extra="rl" if _name.startswith("sb3") else "learned",
    )  # fmt: skip
policies.register(
    "callable", "schedlab.policies.image_agent:CallablePolicy",
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
        "DeepRM (Mao et al. 2016): REINFORCE with a per-step baseline; writes a `deeprm:` "
        "checkpoint",
    ),
    (
        "deeprm-plus",
        "deeprm_plus",
        "learning",
        ("model:cluster", "policy:deeprm-plus"),
        "DeepRM_Plus (Guo et al. 2021): CNN cloned from an expert (SJF), then REINFORCE; "
        "`deeprm-plus:`",
    ),
    (
        "jobscore",
        "jobscore_ppo",
        "jobscore",
        ("model:cluster", "policy:jobscore"),
        "A per-job scoring network (RLScheduler's setting: picks from the whole queue of a log's "
        "windows, under greedy/strict/EASY) trained by PPO; writes a `jobscore:` checkpoint",
    ),
    (
        "liu",
        "liu_value",
        "liu",
        ("model:multicluster", "policy:liu-rl"),
        "Liu et al. (ICPP'20): RL-LSFC/RL-FC value learning with MAF-guided ε-greedy; writes a "
        "`liu-rl:` checkpoint",
    ),
]:
    trainers.register(
        _name, f"schedlab.policies.{_module}:TRAINER", _summary,
        report=f"schedlab.reports.{_report}:report_training", tags=_tags, extra="learned",
    )  # fmt: skip

models = Registry("model kind", group=GROUPS["models"])
"""Simulator model kinds: each target is a :class:`~schedlab.simulator.model.ModelKind` (its
config class, constructor, results, schedule and policy checks); ``config`` names the config
class so that it loads without the simulator (spec validation). Policies and generators for a
kind carry the tag ``model:<name>``; the first registered kind is the default."""
for _name, _target, _config, _summary in [
    ("cluster", "run:CLUSTER", "config:ClusterConfig",
     "m identical machines, d resources, a queue of M visible slots (DeepRM, Chen et al., "
     "DeepRM_Plus)"),
    ("multicluster", "multicluster.run:MULTICLUSTER", "multicluster.config:MultiClusterConfig",
     "Liu et al. (ICPP'20): heterogeneous, elastic clusters with deadlines"),
]:  # fmt: skip
    models.register(
        _name, f"schedlab.simulator.{_target}", _summary,
        config=f"schedlab.simulator.{_config}", tags=(f"model:{_name}",),
    )  # fmt: skip


def parse_spec(
    spec: str, *, positional: str | None = None, registry: Registry | None = None
) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and keyword arguments.

    Values are read as JSON where they parse (numbers, booleans), else kept as strings, e.g.
    ``"tetris:knob=0.3"`` -> ``("tetris", {"knob": 0.3})``. When ``positional`` names a keyword,
    a first option without ``=`` is its value: ``"deeprm:runs/a/best.pt"`` with
    ``positional="checkpoint"`` -> ``("deeprm", {"checkpoint": "runs/a/best.pt"})``. A
    reference keeps its attribute: ``"my_pkg.sched:Lwf:alpha=2"`` -> ``("my_pkg.sched:Lwf",
    {"alpha": 2})`` (:func:`split_name`, which ``registry`` helps).

    Raises
    ------
    ParameterError
        An option that is not ``key=value``, or a key given twice.
    """
    name, rest = split_name(spec, registry)
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


def split_name(spec: str, registry: Registry | None = None) -> tuple[str, str]:
    """``(name, options)`` of a spec: the name ends at the first ``:``, except in a reference
    ``package.module:attr`` (a dotted module path; with ``registry``, also ``module:attr`` when
    ``module`` is not one of its names), where it ends at the second. ``"sjf+easy:x=1"`` ->
    ``("sjf+easy", "x=1")``; ``"my_pkg.sched:Lwf+easy:x=1"`` -> ``("my_pkg.sched:Lwf+easy",
    "x=1")``."""
    head, colon, rest = spec.partition(":")
    attr, _, options = rest.partition(":")
    named = head.strip().partition("+")[0]
    dotted = "." in head or (registry is not None and named not in registry)
    if colon and dotted and _ATTRIBUTE.fullmatch(attr.strip()):
        return f"{head.strip()}:{attr.strip()}", options
    return head.strip(), rest


_ATTRIBUTE = re.compile(r"[A-Za-z_][\w.]*(\+[\w-]+)*")
"""The ``attr`` of a reference ``module:attr``, with ``+word`` suffixes (``Lwf+easy``)."""


def policy_name(spec: str) -> str:
    """The name a policy spec starts with: ``"tetris+align:knob=0.3"`` -> ``tetris``,
    ``"my_pkg.sched:Lwf+easy"`` -> ``my_pkg.sched:Lwf``."""
    return split_name(spec, policies)[0].partition("+")[0].strip()


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
    head, rest = split_name(spec, policies)
    name, *words = (w.strip() for w in head.split("+"))
    words = [w.lower() for w in words]
    positional = policies.entry(name).positional
    base, kwargs = parse_spec(
        f"{name}:{rest}" if rest else name, positional=positional, registry=policies
    )
    queue = policies.parameters(name).get("queue") if words else None
    queues, extra = get_args(queue.hint) if queue is not None else (), dict[str, str]()
    for word in words:
        key = "queue" if word in queues else "placement"
        if (first := extra.get(key, kwargs.get(key))) is not None:
            kind = "queue discipline" if key == "queue" else "placement rule"
            same, two = f"{kind} {word!r} is repeated", f"two {kind}s, {first!r} and {word!r}"
            raise ParameterError(f"{spec!r}: {same if first == word else two}; name one")
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
    elif not set(kwargs) <= {"placement", "queue"} or policies.entry(name).origin != "schedlab":
        # (a built-in's placement and discipline name themselves: sjf+easy+bestfit; a plug-in
        # or reference is named as typed, never by its class's key, which may be anything)
        policy.name = spec
    return policy


def policy_key(policy: Any) -> str:
    """What makes two policies the same: class and every parameter (equal keys, equal
    schedules), e.g. ``tetris`` and ``tetris:knob=0.5``."""
    params = json.dumps(policy.get_params(), sort_keys=True, default=str)
    return f"{type(policy).__module__}.{type(policy).__qualname__}:{params}"
