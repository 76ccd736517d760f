"""Values given by name, checked against a target's declared parameters (:mod:`schedlab.params`).

:func:`check_params` checks values given by name (``-p KEY=VALUE``, a policy spec
``tetris:knob=0.3``, a spec's ``params``) against a target's declarations
(:func:`~schedlab.params.parameters`), so every enumerated or bounded parameter of every
registered object is validated by one mechanism:

* an unknown name is an error listing the valid ones, with "did you mean" where one is close;
  a required parameter that is missing is an error;
* ``Literal[...]`` values must be one of the choices; ``bool``, ``int``, ``float``, ``str``,
  ``tuple[...]``, ``list[...]``/``Sequence[...]``, ``dict``/``Mapping`` and unions (``X | None``)
  are checked (an int is accepted as a float and converted; a bool is never a number; a list is
  accepted for a tuple and converted); other classes by ``isinstance``;
* ``Annotated[T, Interval(ge=0, le=1)]`` bounds a number (an error outside);
  ``Annotated[T, Typical(ge=0, le=1)]`` states its usual range (a warning outside, one line:
  :class:`~schedlab.errors.ImplausibleValueWarning`). Bounds apply to each number of a tuple.

:func:`check_value` checks one value, :func:`describe` says what a type hint expects in words and
:func:`check_load` checks an offered load.
"""

from __future__ import annotations

import collections.abc
import difflib
import types
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

from schedlab.errors import ImplausibleValueWarning, ParameterError
from schedlab.params import REQUIRED, Param, Typical, accepts_any_keyword, parameters, split_hint


class _Mismatch(Exception):
    """A value does not conform to a type hint (internal)."""


_PLURAL = {bool: "true/false values", int: "integers", float: "numbers", str: "strings"}


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` with the name of ``known`` closest to ``word`` (difflib's
    ratio), or ``""`` when none is close: the tail of every unknown-name message."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def describe(hint: Any) -> str:
    """What a value of type ``hint`` is, in words: ``one of 'code', 'paper'``, ``a number``..."""
    hint, _ = split_hint(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(describe(a) for a in args))
    if origin is tuple and args and args[-1] is not Ellipsis:
        return f"a list of {len(args)} ({', '.join(describe(a) for a in args)})"
    if origin in (tuple, list, collections.abc.Sequence):
        item = split_hint(args[0])[0] if args else Any
        return f"a list of {_PLURAL.get(item, 'values')}"
    if origin in (dict, collections.abc.Mapping) or hint is dict:
        return "a table of key = value"
    names = {
        type(None): "null",
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        Any: "any value",
    }
    if hint in names:
        return names[hint]
    return f"a {getattr(hint, '__name__', str(hint))}"


def _convert(value: Any, hint: Any) -> Any:
    """``value`` checked against ``hint`` (and converted: int -> float, list -> tuple)."""
    hint, _ = split_hint(hint)
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
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
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
            hint = did_you_mean(key, declared)
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
