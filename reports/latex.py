r"""Report tables as LaTeX ``tabular`` environments with booktabs rules, ready to ``\input``.

:func:`to_latex` renders a :class:`~schedlab.reports.content.Table` (the same object the HTML and
Markdown reports render): ``\toprule``, header, ``\midrule``, body, ``\bottomrule``; label
columns left-aligned, numbers right-aligned, bold cells in ``\textbf``, the table's notes as a
footnote-size paragraph below. Text is escaped, and the few non-ASCII symbols reports use (en
dash, minus, χ², α, τ, ≤, †, ...) become their LaTeX spelling, so the file compiles with
pdfLaTeX as well as with LuaLaTeX/XeLaTeX. The document needs ``\usepackage{booktabs}``.
"""

from __future__ import annotations

import re

from schedlab.reports.content import Table

SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
"""Characters LaTeX reserves, and their escaped text-mode forms."""

SYMBOLS = {
    "–": "--",
    "—": "---",
    "−": "$-$",
    "×": r"$\times$",
    "±": r"$\pm$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "≈": r"$\approx$",
    "χ²": r"$\chi^2$",
    "χ": r"$\chi$",
    "²": r"\textsuperscript{2}",
    "α": r"$\alpha$",
    "τ": r"$\tau$",
    "†": r"\textsuperscript{\dag}",
    "‡": r"\textsuperscript{\ddag}",
    "…": r"\ldots{}",
    "*": r"\textsuperscript{*}",
    "\u00a0": "~",
}
"""Symbols of report text and their LaTeX spelling (``*`` marks significance: a superscript)."""

_TOKEN = re.compile("|".join(re.escape(k) for k in sorted({**SPECIAL, **SYMBOLS}, key=len)[::-1]))


def escape(text: str) -> str:
    """``text`` as LaTeX text: reserved characters escaped, known symbols spelled out."""
    return _TOKEN.sub(lambda m: {**SPECIAL, **SYMBOLS}[m.group(0)], text)


def _row(cells: list[str]) -> str:
    return " & ".join(cells) + r" \\"


def to_latex(table: Table, *, comment: str = "") -> str:
    r"""A booktabs ``tabular`` of ``table`` (one line per row), with its notes below.

    Parameters
    ----------
    table
        Header, body rows (all with ``len(header)`` cells), bold cells, label columns.
    comment
        First line of the file as a LaTeX comment (e.g. what the table shows).

    Raises
    ------
    ValueError
        If a body row has another number of cells than the header.
    """
    n = len(table.header)
    for i, row in enumerate(table.rows):
        if len(row) != n:
            msg = f"row {i} has {len(row)} cells, the header {n}: {row}"
            raise ValueError(msg)
    spec = "l" * table.left + "r" * (n - table.left)
    lines = [f"% {escape(comment)}"] if comment else []
    lines += [r"% needs \usepackage{booktabs}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    lines.append(_row([escape(h) for h in table.header]))
    lines.append(r"\midrule")
    for i, row in enumerate(table.rows):
        cells = [
            rf"\textbf{{{escape(c)}}}" if (i, j) in table.bold else escape(c)
            for j, c in enumerate(row)
        ]
        lines.append(_row(cells))
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [rf"\par\smallskip{{\footnotesize {escape(note)}\par}}" for note in table.notes]
    return "\n".join(lines) + "\n"
