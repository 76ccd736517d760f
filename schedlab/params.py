"""Parameters of registered objects, declared once by their type hints.

Generators, policies, loaders and trainer configs declare their parameters as keyword
arguments — dataclass fields, or keyword-only parameters of ``__init__`` or of a function —
with type hints and (for classes) one docstring per field. :func:`parameters` reads those
declarations (:class:`Param`: name, type, default, bounds, docstring); ``Annotated[T,
Interval(ge=0, le=1)]`` bounds a number and ``Annotated[T, Typical(ge=0, le=1)]`` states its
usual range. Values given by name are checked against them by
:func:`schedlab.param_checks.check_params`.

A config may hold another whose fields count as its own (:func:`composed`): :func:`flat`
writes the flat settings, :func:`build` and :func:`updated` take them back.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

REQUIRED: Any = inspect.Parameter.empty
"""Default of a :class:`Param` that must be given."""


@dataclass(frozen=True, slots=True)
class Interval:
    """``Annotated`` metadata: a number must lie within these bounds (None: unbounded)."""

    ge: float | None = None
    """Inclusive lower bound."""
    gt: float | None = None
    """Exclusive lower bound."""
    le: float | None = None
    """Inclusive upper bound."""
    lt: float | None = None
    """Exclusive upper bound."""

    def contains(self, x: float) -> bool:
        """True if ``x`` satisfies every bound."""
        return (
            (self.ge is None or x >= self.ge)
            and (self.gt is None or x > self.gt)
            and (self.le is None or x <= self.le)
            and (self.lt is None or x < self.lt)
        )

    def __str__(self) -> str:
        ops = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
        bounds = ((op, getattr(self, k)) for k, op in ops)
        return " and ".join(f"{op} {v:g}" for op, v in bounds if v is not None)


@dataclass(frozen=True, slots=True)
class Typical(Interval):
    """``Annotated`` metadata: the usual range of a number; outside it is allowed, with a
    warning (e.g. Tetris*' knob outside [0, 1] inverts one of its two terms)."""


Count = Annotated[int, Interval(ge=1)]
"""A number of things, >= 1 (iterations, jobsets, environments, units of a layer)."""
Positive = Annotated[float, Interval(gt=0)]
"""A real number > 0 (a rate, a time step, a learning rate)."""
Share = Annotated[float, Interval(ge=0, le=1)]
"""A fraction or a probability, in [0, 1]."""
NonNegative = Annotated[float, Interval(ge=0)]
"""A weight or a coefficient, >= 0."""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter that can be given by name."""

    name: str
    """Keyword of the parameter."""
    hint: Any = Any
    """Its type, without ``Annotated`` metadata."""
    default: Any = REQUIRED
    """Its default (:data:`REQUIRED`: none)."""
    bounds: tuple[Interval, ...] = ()
    """``Interval`` and ``Typical`` metadata of its type."""
    doc: str = ""
    """Its docstring (first paragraph), '' if none."""


def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (the string literal after ``name: T = ...``) of ``cls`` and its bases,
    by attribute name; classes without source give none."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for prev, node in itertools.pairwise(body):
            if (
                isinstance(prev, ast.AnnAssign)
                and isinstance(prev.target, ast.Name)
                and isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                docs[prev.target.id] = inspect.cleandoc(node.value.value).split("\n\n")[0]
    return docs


def _hints(obj: Any, names: Collection[str]) -> dict[str, Any]:
    """Resolved type hints (with ``Annotated`` extras) of ``names``; a name whose annotation
    cannot be resolved (e.g. imported only for type checking) gets ``Any``."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:  # one unresolvable annotation: resolve the others one by one
        out: dict[str, Any] = {}
    owners = obj.__mro__ if isinstance(obj, type) else (obj,)
    for owner in reversed(owners):
        env = vars(sys.modules.get(owner.__module__, types.ModuleType("_")))
        for name, ann in getattr(owner, "__annotations__", {}).items():
            if name in names:
                try:
                    out[name] = eval(ann, env) if isinstance(ann, str) else ann
                except Exception:
                    out[name] = Any
    return out


def split_hint(hint: Any) -> tuple[Any, tuple[Interval, ...]]:
    """The type without its metadata, and its bounds; ``Annotated[int, Interval(ge=1)] | None``
    is ``int | None`` bounded (the bounds of an optional member are not lost)."""
    if get_origin(hint) is Annotated:
        base, *meta = get_args(hint)
        return base, tuple(m for m in meta if isinstance(m, Interval))
    if get_origin(hint) in (Union, types.UnionType):
        parts = [split_hint(a) for a in get_args(hint)]
        if any(bounds for _, bounds in parts):
            return Union[tuple(base for base, _ in parts)], tuple(  # noqa: UP007
                b for _, bounds in parts for b in bounds
            )
    return hint, ()


@functools.cache
def parameters(target: Callable[..., Any]) -> dict[str, Param]:
    """The parameters of ``target`` that can be given by name, in declaration order.

    A dataclass: its ``init`` fields. Another class: the keyword-only parameters of its
    ``__init__``. A function: its keyword-only parameters. A builtin without a signature: none
    (it takes any keyword, see :func:`accepts_any_keyword`).
    """
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        fields = [f for f in dataclasses.fields(target) if f.init]
        hints = _hints(target, {f.name for f in fields})
        defaults = {
            f.name: f.default
            if f.default is not dataclasses.MISSING
            else f.default_factory()
            if f.default_factory is not dataclasses.MISSING
            else REQUIRED
            for f in fields
        }
        if any(_is_composed(f) for f in fields):
            return _composed_parameters(target, fields, defaults)
    else:
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to check
            return {}
        kw = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        fn = typing.cast(Any, target).__init__ if isinstance(target, type) else target
        hints = _hints(fn, {p.name for p in kw})
        defaults = {p.name: p.default for p in kw}
    docs = field_docs(target) if isinstance(target, type) else {}
    out = {}
    for name, default in defaults.items():
        hint, bounds = split_hint(hints.get(name, Any))
        out[name] = Param(name, hint, default, bounds, docs.get(name, ""))
    return out


COMPOSED = "schedlab.composed"
"""Field metadata key of a field holding another config whose fields are its owner's."""


def composed(factory: Callable[[], Any]) -> Any:
    """A dataclass field holding another config dataclass (``factory()``: its defaults for this
    owner) whose fields count as the owner's own: :func:`parameters` lists them, :func:`flat`
    writes them and :func:`build` fills them by name, so a config that *holds* another (a
    DeepRM_Plus config holds its REINFORCE stage's) takes, saves and shows one flat set of
    settings without re-declaring any."""
    return dataclasses.field(default_factory=factory, metadata={COMPOSED: True})


def _is_composed(f: dataclasses.Field[Any]) -> bool:
    return bool(f.metadata.get(COMPOSED))


def _composed_parameters(
    target: type, fields: list[dataclasses.Field[Any]], defaults: dict[str, Any]
) -> dict[str, Param]:
    """:func:`parameters` of a dataclass with :func:`composed` fields, theirs inlined (with the
    defaults of the owner's default inner config)."""
    docs = field_docs(target)
    hints = _hints(target, {f.name for f in fields})
    out: dict[str, Param] = {}
    for f in fields:
        if _is_composed(f):
            inner = defaults[f.name]
            own = {
                k: dataclasses.replace(p, default=getattr(inner, k))
                for k, p in parameters(typing.cast(Any, type(inner))).items()
            }
        else:
            hint, bounds = split_hint(hints.get(f.name, Any))
            own = {f.name: Param(f.name, hint, defaults[f.name], bounds, docs.get(f.name, ""))}
        clash = set(own) & set(out)
        if clash:
            msg = f"{target.__name__}: fields {sorted(clash)} are declared twice"
            raise TypeError(msg)
        out |= own
    return out


def flat(config: Any) -> dict[str, Any]:
    """``dataclasses.asdict(config)`` with the fields of :func:`composed` configs inlined: the
    flat settings :func:`build` takes back (saved as a run's ``train_config``)."""
    whole, out = dataclasses.asdict(config), dict[str, Any]()
    for f in dataclasses.fields(config):
        if _is_composed(f):
            out |= flat(getattr(config, f.name))
        elif f.init:
            out[f.name] = whole[f.name]
    return out


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls`` from flat settings (:func:`flat`; the fields of :func:`composed` configs by
    name); settings not given keep their defaults.

    Raises
    ------
    TypeError
        A name that is no field of ``cls`` or of a config it composes.
    """
    unknown = set(values) - set(parameters(cls))
    if unknown:
        msg = f"{cls.__name__} has no settings {sorted(unknown)}"
        raise TypeError(msg)
    return _fill(cls, None, values)


def updated(config: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` by flat setting name (:func:`build`): ``updated(plus, lr=0.5)``
    changes the ``lr`` of the REINFORCE config a DeepRM_Plus config holds."""
    return build(type(config), {**flat(config), **changes})


def _fill(cls: type, base: Any, values: Mapping[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if _is_composed(f):
            inner = getattr(base, f.name) if base is not None else f.default_factory()  # type: ignore[misc]
            kwargs[f.name] = _fill(type(inner), inner, values)
        elif f.name in values:
            kwargs[f.name] = values[f.name]
        elif base is not None:
            kwargs[f.name] = getattr(base, f.name)
    return cls(**kwargs)


def accepts_any_keyword(target: Callable[..., Any]) -> bool:
    """True if ``target`` (or its ``__init__``) takes ``**kwargs``."""
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
