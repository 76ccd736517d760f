"""Parameters of registered objects, declared once and checked from their type hints.

Generators, policies, loaders and trainer configs declare their parameters as keyword
arguments — dataclass fields, or keyword-only parameters of ``__init__`` or of a function —
with type hints and (for classes) one docstring per field. :func:`check_params` checks values
given by name (``-p KEY=VALUE``, a policy spec ``tetris:knob=0.3``, a spec's ``params``) against
those declarations, so every enumerated or bounded parameter of every registered object is
validated by one mechanism:

* an unknown name is an error listing the valid ones, with "did you mean" where one is close;
  a required parameter that is missing is an error;
* ``Literal[...]`` values must be one of the choices; ``bool``, ``int``, ``float``, ``str``,
  ``tuple[...]``, ``list[...]``/``Sequence[...]``, ``dict``/``Mapping`` and unions (``X | None``)
  are checked (an int is accepted as a float and converted; a bool is never a number; a list is
  accepted for a tuple and converted); other classes by ``isinstance``;
* ``Annotated[T, Interval(ge=0, le=1)]`` bounds a number (an error outside);
  ``Annotated[T, Typical(ge=0, le=1)]`` states its usual range (a warning outside, one line:
  :class:`~schedlab.errors.ImplausibleValueWarning`). Bounds apply to each number of a tuple.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import difflib
import functools
import inspect
import itertools
import sys
import textwrap
import types
import typing
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from schedlab.errors import ImplausibleValueWarning, ParameterError

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


class _Mismatch(Exception):
    """A value does not conform to a type hint (internal)."""


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


def _split(hint: Any) -> tuple[Any, tuple[Interval, ...]]:
    """The type without its metadata, and its bounds; ``Annotated[int, Interval(ge=1)] | None``
    is ``int | None`` bounded (the bounds of an optional member are not lost)."""
    if get_origin(hint) is Annotated:
        base, *meta = get_args(hint)
        return base, tuple(m for m in meta if isinstance(m, Interval))
    if get_origin(hint) in (Union, types.UnionType):
        parts = [_split(a) for a in get_args(hint)]
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
            f.name: f.default if f.default is not dataclasses.MISSING
            else f.default_factory() if f.default_factory is not dataclasses.MISSING
            else REQUIRED
            for f in fields
        }  # fmt: skip
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
        hint, bounds = _split(hints.get(name, Any))
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
            own = {k: dataclasses.replace(p, default=getattr(inner, k))
                   for k, p in parameters(typing.cast(Any, type(inner))).items()}  # fmt: skip
        else:
            hint, bounds = _split(hints.get(f.name, Any))
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


_PLURAL = {bool: "true/false values", int: "integers", float: "numbers", str: "strings"}


def describe(hint: Any) -> str:
    """What a value of type ``hint`` is, in words: ``one of 'code', 'paper'``, ``a number``..."""
    hint, _ = _split(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(describe(a) for a in args))
    if origin is tuple and args and args[-1] is not Ellipsis:
        return f"a list of {len(args)} ({', '.join(describe(a) for a in args)})"
    if origin in (tuple, list, collections.abc.Sequence):
        item = _split(args[0])[0] if args else Any
        return f"a list of {_PLURAL.get(item, 'values')}"
    if origin in (dict, collections.abc.Mapping) or hint is dict:
        return "a table of key = value"
    names = {type(None): "null", bool: "true or false", int: "an integer", float: "a number",
             str: "a string", Any: "any value"}  # fmt: skip
    if hint in names:
        return names[hint]
    return f"a {getattr(hint, '__name__', str(hint))}"


def _convert(value: Any, hint: Any) -> Any:
    """``value`` checked against ``hint`` (and converted: int -> float, list -> tuple)."""
    hint, _ = _split(hint)
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is object:
        return value
    if origin in (Union, types.UnionType):
        for member in args:
            try:
                return _convert(value, member)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in args):
            return value
        raise _Mismatch
    if hint is float and _is_number(value):
        return float(value)
    if hint in (bool, int, str, type(None)):
        if type(value) is hint or (hint is int and _is_number(value) and isinstance(value, int)):
            return value
        raise _Mismatch
    if origin is tuple or origin in (list, collections.abc.Sequence):
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise _Mismatch
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise _Mismatch
            return tuple(_convert(v, a) for v, a in zip(value, args, strict=True))
        items = [_convert(v, args[0]) for v in value] if args else list(value)
        return tuple(items) if origin is tuple else items
    if origin in (dict, collections.abc.Mapping) or hint is dict:
        if isinstance(value, Mapping):
            return dict(value)
        raise _Mismatch
    check = origin if isinstance(origin, type) else hint
    if isinstance(check, type) and not isinstance(value, check):
        raise _Mismatch
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(value: Any) -> list[float]:
    items = value if isinstance(value, list | tuple) else [value]
    return [v for v in items if _is_number(v)]


def check_value(
    param: Param, value: Any, *, owner: str, where: str = "", subject: str | None = None
) -> Any:
    """``value`` of ``param`` checked (and converted); :class:`ParameterError` if invalid, an
    :class:`ImplausibleValueWarning` if outside its :class:`Typical` range.

    Messages read ``<where>: parameter 'name' of <owner> expects ...``; ``subject`` replaces
    ``parameter 'name' of <owner>`` ('' for none, where the caller names the key itself).
    """
    who = f"parameter {param.name!r} of {owner}" if subject is None else subject
    prefix = f"{where}: " if where else ""
    prefix += f"{who} " if who else ""
    try:
        converted = _convert(value, param.hint)
    except _Mismatch:
        choices = [a for a in get_args(param.hint) if isinstance(a, str)]
        close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        msg = f"{prefix}expects {describe(param.hint)}, got {value!r}{hint}"
        raise ParameterError(msg) from None
    for bound in param.bounds:
        bad = [x for x in _numbers(converted) if not bound.contains(x)]
        if not bad:
            continue
        if isinstance(bound, Typical):
            msg = f"{prefix}is usually {bound}, got {value!r} (used as given)"
            warnings.warn(msg, ImplausibleValueWarning, stacklevel=3)
        else:
            msg = f"{prefix}must be {bound}, got {value!r}"
            raise ParameterError(msg)
    return converted


def check_params(
    target: Callable[..., Any],
    params: Mapping[str, Any],
    *,
    owner: str,
    where: str = "",
    reserved: Collection[str] = (),
) -> dict[str, Any]:
    """``params`` for ``target`` checked against its declared parameters (see module docstring).

    Parameters
    ----------
    target
        The class or function the parameters are for.
    params
        Keyword -> value, as given by the user.
    owner
        What the parameters belong to, for messages, e.g. ``"generator 'deeprm'"``.
    where
        Where the user gave them, for messages, e.g. ``"-p"`` or ``"--policy tetris:knob=7"``.
    reserved
        Parameters the caller passes itself (never given by name), e.g. a loader's ``options``.

    Returns
    -------
    dict
        The parameters, converted where the type says so (int -> float, list -> tuple).

    Raises
    ------
    ParameterError
        An unknown or reserved name, a missing required parameter, or an invalid value.
    """
    declared = {k: p for k, p in parameters(target).items() if k not in reserved}
    prefix = f"{where}: " if where else ""
    out: dict[str, Any] = {}
    for key, value in params.items():
        param = declared.get(key)
        if param is None:
            if key not in reserved and accepts_any_keyword(target):
                out[key] = value
                continue
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            valid = ", ".join(declared) or "none"
            msg = f"{prefix}{owner} has no parameter {key!r}{hint} (its parameters: {valid})"
            raise ParameterError(msg)
        out[key] = check_value(param, value, owner=owner, where=where)
    missing = [k for k, p in declared.items() if p.default is REQUIRED and k not in params]
    if missing:
        expected = describe(declared[missing[0]].hint)
        msg = f"{prefix}{owner} needs parameter {missing[0]!r} ({expected})"
        raise ParameterError(msg)
    return out


PLAUSIBLE_LOAD = 3.0
"""Offered loads above this (300% of capacity) draw a warning: usually a percentage typed as a
fraction (``--load 70`` meaning 70%)."""


def check_load(load: float, *, where: str = "load") -> float:
    """An offered load (a fraction of capacity) checked: > 0 and finite, else
    :class:`ParameterError`; above :data:`PLAUSIBLE_LOAD` an :class:`ImplausibleValueWarning`.

    ``where`` names how it was given, e.g. ``"--load 70"``.
    """
    if not 0 < load < float("inf"):
        msg = f"{where}: an offered load must be a number > 0 (0.7 or 70%), got {load!r}"
        raise ParameterError(msg)
    if load > PLAUSIBLE_LOAD:
        msg = (
            f"{where}: offered load {load:g} is {100 * load:g}% of capacity (loads are fractions: "
            f"did you mean {load:g}% = {load / 100:g}?); used as given"
        )
        warnings.warn(msg, ImplausibleValueWarning, stacklevel=2)
    return load
