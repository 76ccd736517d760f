"""The registry machinery: :class:`Registry` maps names to lazily imported entry points of one
kind (built in, plug-ins, references), checks parameters given by name and describes entries;
:mod:`schedlab.registry` documents it and holds the registries."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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
            name=key,
            target=target,
            summary=summary,
            positional=positional,
            tags=frozenset(tags),
            config=config,
            report=report,
            extra=extra,
        )

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
                        for o, e in zip(origins, eps, strict=True)
                        if e is not eps[k]
                    )
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
            n
            for n, e in self._entries.items()
            if tag is None or (tag in e.tags and e.origin == "schedlab")
        ]

    @property
    def front(
        self,
    ) -> tuple[
        Callable[[str], Entry],
        Callable[[str], Any],
        Callable[..., Any],
        Callable[..., list[str]],
        Callable[..., None],
    ]:
        """``entry``, ``load``, ``make``, ``names`` and ``register``: the functions a package
        that fronts this registry exports (``schedlab.policies``, ``schedlab.loaders``)."""
        return self.entry, self.load, self.make, self.names, self.register

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


GROUPS = {
    kind: f"schedlab.{kind}" for kind in ("policies", "generators", "loaders", "trainers", "models")
}
"""Entry-point group of each registry's plug-ins (``[project.entry-points."schedlab.policies"]``
in a plug-in's ``pyproject.toml``)."""


DEFAULT_REPORT = "schedlab.reports.learning:report_training"
"""The report of a plug-in trainer without its own (learning curves, checkpoint, summary)."""
