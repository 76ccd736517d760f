"""What a report holds, before any format renders it: blocks of text, tables and figures.

A report is a list of :data:`Block`; a table is a :class:`Table` of formatted cells. The
formats are :mod:`schedlab.reports.markup` (HTML, Markdown, the bundle of files) and
:mod:`schedlab.reports.latex` (booktabs tables).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    """A rendered table: header cells, body rows (strings) and the cells to set in bold."""

    header: list[str]
    rows: list[list[str]]
    bold: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) indices of the body cells to set in bold."""
    left: int = 1
    """The first ``left`` columns are left-aligned (labels); the others right-aligned."""
    notes: list[str] = field(default_factory=list)
    """Footnotes shown below the table (e.g. explaining a marker)."""


Block = tuple[str, Any]
"""``("h1" | "h2" | "h3" | "p" | "note" | "warning" | "pre", str)``, ``("table", Table)``,
``("figure", (file name, caption))`` or ``("links", [(text, relative path), ...])``."""
