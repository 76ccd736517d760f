"""Typed, key-checked access to a JSON document, for validating ``model.json``.

Every error is a :class:`~schedlab.errors.WorkloadModelError` naming the file and the key path,
e.g. ``fit/model.json: durations.params: parameters ['sigma'] are missing``.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from schedlab.errors import WorkloadModelError

REQUIRED: Any = object()
"""Default of :meth:`Doc.get` for a key that must be present."""


class Doc:
    """One JSON object ``data`` found at key path ``where`` of the file ``source``."""

    def __init__(self, data: Any, where: str, source: str) -> None:
        self.where, self.source = where, source
        if not isinstance(data, dict):
            self.fail("", f"expected a JSON object, got {type(data).__name__}")
        self.data = data

    def fail(self, key: str, problem: str) -> NoReturn:
        """Raise :class:`WorkloadModelError` for ``key`` (empty: the object itself)."""
        path = ".".join(p for p in (self.where, key) if p) or "(top level)"
        msg = f"{self.source}: {path}: {problem}"
        raise WorkloadModelError(msg)

    def get(self, key: str, kind: type, default: Any = REQUIRED) -> Any:
        """The value of ``key`` if of type ``kind`` (an int is accepted as a float; a bool is
        never a number; null counts as absent); ``default`` if absent, an error if required."""
        value = self.data.get(key)
        if value is None:
            if default is REQUIRED:
                self.fail(key, "required key is missing")
            return default
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
            self.fail(key, f"expected {kind.__name__}, got {value!r}"[:200])
        if kind is float and not math.isfinite(value):
            self.fail(key, f"must be finite, got {value!r}")
        return value

    def numbers(self, key: str, *, default: Any = REQUIRED) -> list[float]:
        """A list of finite numbers, as floats."""
        values = self.get(key, list, default)
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
            self.fail(key, f"expected a list of numbers, got {values!r}"[:200])
        if not all(math.isfinite(v) for v in values):
            self.fail(key, "numbers must be finite")
        return [float(v) for v in values]

    def strings(self, key: str, *, default: Any = REQUIRED) -> list[str]:
        """A list of strings."""
        values = self.get(key, list, default)
        if not all(isinstance(v, str) for v in values):
            self.fail(key, f"expected a list of strings, got {values!r}"[:200])
        return list(values)

    def sub(self, key: str) -> Doc:
        """The JSON object at ``key`` (required)."""
        where = ".".join(p for p in (self.where, key) if p)
        return Doc(self.get(key, dict), where, self.source)
