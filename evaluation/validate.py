"""Typed, key-checked access to one table of a TOML file, for spec validation.

Every error is a :class:`~schedlab.errors.SpecError` naming the file, the table and the key,
e.g. ``spec.toml: [[workloads]][0].lods: unknown key (did you mean 'loads'?)``.
"""

from __future__ import annotations

import difflib
from typing import Any, NoReturn

from schedlab.errors import SpecError

REQUIRED = object()
"""Default of :meth:`TomlTable.get` for a key that must be present."""


class TomlTable:
    """One TOML table (``data``) at ``where`` in ``source``, with only the ``allowed`` keys."""

    def __init__(self, data: Any, where: str, allowed: tuple[str, ...], source: str) -> None:
        self.where, self.source = where, source
        if not isinstance(data, dict):
            self.fail("", f"expected a table, got {type(data).__name__}")
        unknown = [k for k in data if k not in allowed]
        if unknown:
            close = difflib.get_close_matches(unknown[0], allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(unknown[0], f"unknown key{hint}; allowed: {', '.join(allowed)}")
        self.data = data

    def fail(self, key: str, problem: str) -> NoReturn:
        """Raise :class:`SpecError` for ``key`` (empty: the table itself)."""
        dot = "." if key and self.where else ""
        msg = f"{self.source}: {self.where}{dot}{key}: {problem}"
        raise SpecError(msg)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        """The value of ``key`` if of type ``kind`` (an int is accepted as a float, a bool is
        never a number); ``default`` if absent, an error if absent and ``default`` is
        :data:`REQUIRED`."""
        if key not in self.data:
            if default is REQUIRED:
                self.fail(key, "required key is missing")
            return default
        value = self.data[key]
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            self.fail(key, f"expected {names}, got {value!r}")
        return value

    def numbers(self, key: str, *, positive: bool = True) -> tuple[float, ...]:
        """A list of distinct numbers (all > 0 if ``positive``) as floats; () if absent."""
        values = self.get(key, list, [])
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
            self.fail(key, f"expected a list of numbers, got {values!r}")
        if positive and any(v <= 0 for v in values):
            self.fail(key, f"every value must be > 0, got {values!r}")
        if len(set(values)) != len(values):
            self.fail(key, f"values must be distinct, got {values!r}")
        return tuple(float(v) for v in values)
