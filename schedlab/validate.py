"""Typed, key-checked access to one table of a TOML or JSON document (specs, ``model.json``).

One validator for every document schedlab reads: each error names the file, the key path and
what was expected, e.g. ``spec.toml: [[workloads]][0].lods: unknown key (did you mean
'loads'?); allowed: ...`` or ``fit/model.json: durations.params: expected table, got 3``, and is
raised as the error class the caller chooses (:class:`~schedlab.errors.SpecError`,
:class:`~schedlab.errors.WorkloadModelError`).

A ``None`` value (JSON ``null``) counts as absent; an int is accepted as a float; a bool is
never a number; floats must be finite (TOML and JSON both can write ``inf``/``nan``).
:meth:`Table.fields` checks a table against the type hints of a config dataclass, with the
machinery of registry parameters (:mod:`schedlab.params`).
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NoReturn

from schedlab.errors import ParameterError, SchedlabError
from schedlab.param_checks import check_value
from schedlab.params import REQUIRED as NO_DEFAULT
from schedlab.params import parameters


def parse_document(text: str, source: str, *, error: type[SchedlabError], fmt: str) -> Any:
    """``text`` parsed as ``fmt`` (``"json"`` or ``"toml"``); malformed or pathologically
    nested text (a ``RecursionError`` in the parser) is ``error`` naming ``source``."""
    try:
        return tomllib.loads(text) if fmt == "toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        msg = f"{source}: not valid {fmt.upper()} ({exc})"
        raise error(msg) from exc
    except RecursionError as exc:
        msg = f"{source}: not a {fmt.upper()} document schedlab reads (nested too deeply)"
        raise error(msg) from exc


def read_document(
    path: str | os.PathLike[str], *, error: type[SchedlabError], fmt: str, what: str
) -> Any:
    """The file at ``path`` parsed as ``fmt`` (see :func:`parse_document`); a missing,
    unreadable or non-UTF-8 file is ``error`` naming the path and ``what`` it should be."""
    p = Path(path)
    if not p.is_file():
        msg = f"{p}: no such {what} file"
        raise error(msg)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        with p.open("rb") as f:
            kind = " (a Parquet file)" if f.read(4) == b"PAR1" else ""
        where = f"{exc.reason} at byte {exc.start}"
        msg = f"{p}: not a {fmt.upper()} {what}: not UTF-8 text{kind} ({where})"
        raise error(msg) from exc
    except OSError as exc:
        msg = f"{p}: cannot read the {what} ({exc})"
        raise error(msg) from exc
    return parse_document(text, str(p), error=error, fmt=fmt)


REQUIRED: Any = object()
"""Default of :meth:`Table.get` and friends for a key that must be present."""

_NAMES = {
    dict: "table",
    list: "list",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}


def _name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_NAMES.get(k, k.__name__) for k in kinds)


class Table:
    """One table ``data`` found at key path ``where`` of the document ``source``.

    Parameters
    ----------
    data
        The parsed table (a dict); anything else is an error.
    where
        Its key path in the document, e.g. ``"[[workloads]][0]"`` or ``"durations"`` ('' for the
        top level).
    source
        The document's file name, first in every message.
    error
        The :class:`~schedlab.errors.SchedlabError` subclass raised.
    allowed
        The keys the table may hold (an unknown key is an error with a "did you mean");
        None: any key.
    """

    def __init__(
        self,
        data: Any,
        where: str,
        source: str,
        *,
        error: type[SchedlabError],
        allowed: Collection[str] | None = None,
    ) -> None:
        self.where, self.source, self.error = where, source, error
        if not isinstance(data, dict):
            self.fail("", f"expected a table, got {type(data).__name__}")
        self.data: dict[str, Any] = data
        unknown = [k for k in data if allowed is not None and k not in allowed]
        if unknown and allowed is not None:
            close = difflib.get_close_matches(unknown[0], list(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(unknown[0], f"unknown key{hint}; allowed: {', '.join(allowed)}")

    def path(self, key: str) -> str:
        """The key path of ``key`` in the document."""
        return ".".join(p for p in (self.where, key) if p)

    def fail(self, key: str, problem: str) -> NoReturn:
        """Raise the table's error for ``key`` ('' for the table itself)."""
        msg = f"{self.source}: {self.path(key) or '(top level)'}: {problem}"
        raise self.error(msg)

    def __contains__(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = REQUIRED) -> Any:
        """The value of ``key`` if of type ``kind``; ``default`` if absent (an error if
        :data:`REQUIRED`)."""
        value = self.data.get(key)
        if value is None:
            if default is REQUIRED:
                self.fail(key, "required key is missing")
            return default
        kinds = kind if isinstance(kind, tuple) else (kind,)
        is_bool = isinstance(value, bool)
        if float in kinds and isinstance(value, int) and not is_bool:
            value = float(value)
        if not isinstance(value, kinds) or (is_bool and bool not in kinds):
            self.fail(key, f"expected {_name(kind)}, got {value!r}"[:300])
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(key, f"must be finite, got {value!r}")
        return value

    def fields(
        self,
        target: Callable[..., Any],
        *,
        keys: Collection[str] | None = None,
        optional: Collection[str] = (),
        defaults: bool = False,
    ) -> dict[str, Any]:
        """The values the table gives for parameters of ``target`` (a config dataclass), each
        checked and converted by its type hint and bounds as registry parameters are
        (:func:`schedlab.param_checks.check_value`); an error names the key and what was expected.

        ``keys`` are the parameters read (default: all of them; the table's ``allowed`` keys
        say which others it may hold); one without a default must be present unless it is in
        ``optional``. Absent keys are left out (the dataclass's defaults apply), or with
        ``defaults`` given their default (a copy).
        """
        declared = parameters(target)
        out: dict[str, Any] = {}
        for name in declared if keys is None else keys:
            param = declared[name]
            if name not in self:
                if param.default is NO_DEFAULT and name not in optional:
                    self.fail(name, "required key is missing")
                if defaults and param.default is not NO_DEFAULT:
                    out[name] = copy.copy(param.default)
                continue
            value = self.data[name]
            try:
                converted = check_value(param, value, owner="", subject="")
            except ParameterError as exc:
                self.fail(name, str(exc)[:300])
            items = converted if isinstance(converted, list | tuple) else [converted]
            if any(isinstance(x, float) and not math.isfinite(x) for x in items):
                self.fail(name, f"numbers must be finite, got {value!r}"[:300])
            out[name] = converted
        return out

    def numbers(
        self, key: str, *, default: Any = REQUIRED, positive: bool = False, distinct: bool = False
    ) -> list[float]:
        """A list of finite numbers as floats (all > 0 with ``positive``, no repeats with
        ``distinct``)."""
        values = self.get(key, list, default)
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
            self.fail(key, f"expected a list of numbers, got {values!r}"[:300])
        if not all(math.isfinite(v) for v in values):
            self.fail(key, "numbers must be finite")
        if positive and any(v <= 0 for v in values):
            self.fail(key, f"every value must be > 0, got {values!r}"[:300])
        if distinct and len(set(values)) != len(values):
            self.fail(key, f"values must be distinct, got {values!r}"[:300])
        return [float(v) for v in values]

    def integers(
        self, key: str, *, default: Any = REQUIRED, minimum: int | None = None
    ) -> list[int]:
        """A list of integers (each >= ``minimum`` if given)."""
        values = self.get(key, list, default)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            self.fail(key, f"expected a list of integers, got {values!r}"[:300])
        if minimum is not None and any(v < minimum for v in values):
            self.fail(key, f"every value must be >= {minimum}, got {values!r}"[:300])
        return list(values)

    def strings(self, key: str, *, default: Any = REQUIRED) -> list[str]:
        """A list of strings."""
        values = self.get(key, list, default)
        if not all(isinstance(v, str) for v in values):
            self.fail(key, f"expected a list of strings, got {values!r}"[:300])
        return list(values)

    def sub(self, key: str, *, allowed: Collection[str] | None = None) -> Table:
        """The table at ``key`` (required), with the same source and error class."""
        return Table(
            self.get(key, dict), self.path(key), self.source, error=self.error, allowed=allowed
        )
