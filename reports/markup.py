"""Report content as blocks, rendered once to HTML (self-contained) and once to Markdown.

A report is a list of :data:`Block`: headings, paragraphs, notes, preformatted text, tables
(:class:`Table`) and figures (file name + caption). :func:`to_html` embeds figures as base64
PNG with inline CSS (no other file needed); :func:`to_markdown` links the PNG files written
beside it. :func:`png` draws a figure without pyplot (no global state, no GUI backend).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.io import atomic_path, write_text_atomic

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1, h2, h3 { font-weight: 600; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; }
figcaption { color: #555; font-size: .9em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
.note { background: #eef4fb; border-left: 4px solid #4a7ebb; padding: .6em 1em; }
.warning { background: #fdf3e7; border-left: 4px solid #d9822b; padding: .6em 1em; }
"""


@dataclass
class Table:
    """A rendered table: header cells, body rows (strings) and the cells to set in bold."""

    header: list[str]
    rows: list[list[str]]
    bold: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) indices of the body cells to set in bold."""
    left: int = 1
    """The first ``left`` columns are left-aligned (labels); the others right-aligned."""


Block = tuple[str, Any]
"""``("h1" | "h2" | "h3" | "p" | "note" | "warning" | "pre", str)``, ``("table", Table)`` or
``("figure", (file name, caption))``."""

HTML_TEXT = {
    "h1": "<h1>{}</h1>",
    "h2": "<h2>{}</h2>",
    "h3": "<h3>{}</h3>",
    "p": "<p>{}</p>",
    "note": "<p class='note'>{}</p>",
    "warning": "<p class='warning'><strong>Warning:</strong> {}</p>",
    "pre": "<pre>{}</pre>",
}
MD_TEXT = {
    "h1": "# {}",
    "h2": "## {}",
    "h3": "### {}",
    "p": "{}",
    "note": "> {}",
    "warning": "> **Warning:** {}",
    "pre": "```\n{}\n```",
}


def to_html(blocks: Sequence[Block], title: str, images: dict[str, bytes]) -> str:
    """One self-contained HTML page; ``images`` maps figure file names to PNG bytes."""
    out = [
        f"<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>"
    ]
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            data = base64.b64encode(images[name]).decode("ascii")
            out.append(
                f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(caption)}'>"
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
        elif kind == "table":
            out.append(_html_table(content))
        else:
            out.append(HTML_TEXT[kind].format(html.escape(content)))
    out.append("</body>\n</html>\n")
    return "\n".join(out)


def _html_table(t: Table) -> str:
    def cell(tag: str, text: str, j: int, strong: bool = False) -> str:
        body = f"<strong>{html.escape(text)}</strong>" if strong else html.escape(text)
        style = " style='text-align:left'" if 0 < j < t.left else ""
        return f"<{tag}{style}>{body}</{tag}>"

    head = "".join(cell("th", h, j) for j, h in enumerate(t.header))
    body = "\n".join(
        "<tr>" + "".join(cell("td", c, j, (i, j) in t.bold) for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(t.rows)
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def to_markdown(blocks: Sequence[Block]) -> str:
    """The same blocks as Markdown; figures link their PNG file by name."""
    out = []
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            out.append(f"![{caption}]({name})\n\n*{caption}*")
        elif kind == "table":
            out.append(_md_table(content))
        else:
            out.append(MD_TEXT[kind].format(content))
    return "\n\n".join(out) + "\n"


def _md_table(t: Table) -> str:
    def cell(text: str, strong: bool) -> str:
        text = text.replace("|", "\\|")
        return f"**{text}**" if strong else text

    lines = ["| " + " | ".join(cell(h, False) for h in t.header) + " |"]
    lines.append("|" + "|".join([":---"] * t.left + ["---:"] * (len(t.header) - t.left)) + "|")
    lines += [
        "| " + " | ".join(cell(c, (i, j) in t.bold) for j, c in enumerate(row)) + " |"
        for i, row in enumerate(t.rows)
    ]
    return "\n".join(lines)


def png(draw: Callable[[Axes], Any], size: tuple[float, float], dpi: int = 110) -> bytes:
    """Draw on a fresh Figure (no pyplot, so no global state or GUI backend) and return PNG."""
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=size, layout="constrained")
        draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def write_bundle(
    out: Path,
    *,
    stem: str,
    title: str,
    blocks: Sequence[Block],
    tables: Mapping[str, pl.DataFrame],
    images: Mapping[str, tuple[bytes, Any]],
) -> dict[str, Path]:
    """Write a report atomically: CSV tables, PNG figures, ``<stem>.md`` and ``<stem>.html``.

    Returns the paths keyed by file stem, plus ``"md"`` and ``"html"``.
    """
    paths: dict[str, Path] = {}
    for name, df in tables.items():
        with atomic_path(out / name) as tmp:
            df.write_csv(tmp)
        paths[Path(name).stem] = out / name
    for name, (data, _) in images.items():
        with atomic_path(out / name) as tmp:
            tmp.write_bytes(data)
        paths[Path(name).stem] = out / name
    paths["md"], paths["html"] = out / f"{stem}.md", out / f"{stem}.html"
    write_text_atomic(paths["md"], to_markdown(blocks))
    write_text_atomic(paths["html"], to_html(blocks, title, {k: v[0] for k, v in images.items()}))
    return paths
