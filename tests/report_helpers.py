"""Checks that written report files are what their suffix says (PDF, SVG, PNG, LaTeX).

Import as ``from tests.report_helpers import ...``. The PDF check is a small structural parse
(header, cross-reference table whose offsets point at the objects, trailer, page count, font
embedding) rather than a full reader, so no PDF library is needed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG (from its IHDR chunk)."""
    assert data[:8] == PNG_MAGIC, data[:8]
    assert data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def check_pdf(data: bytes) -> dict[str, int]:
    """Parse the structure of a PDF written by matplotlib; return counts of what it holds.

    Checks the header and ``%%EOF``, that ``startxref`` points at the ``xref`` table and that
    every in-use entry of the table points at ``<n> 0 obj``. Returns ``pages`` (``/Type
    /Page`` objects), ``truetype`` (embedded TrueType font programs, ``/FontFile2``) and
    ``type3`` (Type 3 fonts).
    """
    assert data.startswith(b"%PDF-1."), data[:16]
    assert data.rstrip().endswith(b"%%EOF")
    start = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
    assert data[start : start + 4] == b"xref", data[start : start + 20]
    first, count = (int(x) for x in re.match(rb"xref\s+(\d+)\s+(\d+)", data[start:]).groups())
    entries = re.findall(rb"(\d{10}) (\d{5}) ([nf])", data[start : start + 40 + 20 * count])
    assert len(entries) == count
    for number, (offset, _, kind) in enumerate(entries, start=first):
        if kind == b"n":
            obj = data[int(offset) : int(offset) + 30]
            assert obj.startswith(f"{number} 0 obj".encode()), (number, obj)
    assert b"trailer" in data[start:]
    return {
        "pages": len(re.findall(rb"/Type\s*/Page\b", data)),
        "truetype": data.count(b"/FontFile2"),
        "type3": data.count(b"/Type3"),
    }


def check_svg(data: bytes) -> ET.Element:
    """Parse an SVG as XML; return its root (an ``svg`` element)."""
    root = ET.fromstring(data)
    assert root.tag.endswith("svg"), root.tag
    return root


def svg_texts(root: ET.Element) -> list[str]:
    """Text of every ``<text>`` element (text kept as text, not paths)."""
    return ["".join(t.itertext()) for t in root.iter() if t.tag.endswith("text")]


def strip_comments(tex: str) -> str:
    """LaTeX source without ``%`` comments (an escaped ``\\%`` stays)."""
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())


def check_latex_table(tex: str) -> list[list[str]]:
    """Check a booktabs ``tabular``; return the cells of its header and body rows.

    Braces balance (ignoring escaped ones), the rules come in order, and every row between the
    rules has as many ``&``-separated cells as the column specification has columns.
    """
    body = strip_comments(tex)
    unescaped = re.sub(r"\\[{}]", "", body)
    assert unescaped.count("{") == unescaped.count("}"), "unbalanced braces"
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, "a brace closes before it opens"
    spec = re.search(r"\\begin\{tabular\}\{([lrc]+)\}", body)
    assert spec is not None, "no tabular"
    n = len(spec.group(1))
    top, mid, bottom = (body.index(r) for r in (r"\toprule", r"\midrule", r"\bottomrule"))
    assert top < mid < bottom
    assert body.index(r"\end{tabular}") > bottom
    rows = []
    for line in body[top:bottom].splitlines()[1:]:
        if line.startswith("\\midrule") or not line.strip():
            continue
        assert line.rstrip().endswith(r"\\"), line
        cells = re.split(r"(?<!\\)&", line.rstrip()[:-2])
        assert len(cells) == n, (n, line)
        rows.append([c.strip() for c in cells])
    return rows


def check_files(paths: dict[str, Path]) -> None:
    """Every written file parses as its suffix says."""
    for path in paths.values():
        data = path.read_bytes()
        assert data, path
        match path.suffix:
            case ".png":
                png_size(data)
            case ".pdf":
                assert check_pdf(data)["pages"] == 1, path
            case ".svg":
                check_svg(data)
            case ".tex":
                check_latex_table(data.decode("utf-8"))
