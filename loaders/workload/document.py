"""A workload document saved as one atomic JSON file and read back validated (``model.json``,
``dag_shape.json``).
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar, Self

import numpy as np

from schedlab.errors import WorkloadModelError
from schedlab.io import write_text_atomic
from schedlab.validate import read_document


class JsonDocument:
    """A workload document saved as one atomic JSON file and read back validated: subclasses
    give ``what`` (its name in errors), ``to_json`` and ``from_json``."""

    __slots__ = ()
    what: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        """The JSON document."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: Any, *, source: str) -> Self:
        """Validate a document; errors name ``source`` and the key."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the document atomically."""
        text = json.dumps(self.to_json(), indent=1, default=plain, allow_nan=False)
        write_text_atomic(path, text + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read and validate the document at ``path``."""
        data = read_document(path, error=WorkloadModelError, fmt="json", what=cls.what)
        return cls.from_json(data, source=str(path))


def plain(v: Any) -> Any:
    """JSON-native version of numpy scalars and arrays."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, tuple):
        return list(v)
    return v
