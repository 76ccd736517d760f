"""Report content as blocks, rendered once to HTML (self-contained) and once to Markdown.

A report is a list of :data:`~schedlab.reports.content.Block`: headings, paragraphs, notes,
preformatted text, tables (:class:`~schedlab.reports.content.Table`) and figures (file name +
caption). :func:`to_html` embeds figures as base64
PNG with inline CSS (no other file needed); :func:`to_markdown` links the PNG files written
beside it. Both link the vector copies (PDF, SVG) of each figure. :func:`write_bundle` writes a
whole report: figures (:mod:`schedlab.reports.output`), CSV tables, and the formatted tables as
LaTeX (:mod:`schedlab.reports.latex`) and Markdown files.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from schedlab.io import atomic_path, write_text_atomic
from schedlab.reports.content import Block, Table
from schedlab.reports.latex import to_latex
from schedlab.reports.output import FigureOptions, Plot, draw, encode

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1, h2, h3 { font-weight: 600; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .85em; }
.scroll { overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: right; }
td { white-space: normal; min-width: 3.5em; } th { white-space: normal; }
td:first-child { white-space: nowrap; }
table.wide { font-size: .74em; } table.wide th, table.wide td { padding: .25em .35em; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; }
figcaption { color: #555; font-size: .9em; } figcaption a { margin-left: .4em; }
.tnote { color: #555; font-size: .85em; margin-top: -.6em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
.note { background: #eef4fb; border-left: 4px solid #4a7ebb; padding: .6em 1em; }
.warning { background: #fdf3e7; border-left: 4px solid #d9822b; padding: .6em 1em; }
"""


WIDE = 8
"""Tables with more columns than this are set smaller, so that they fit the page."""
INTERVAL = re.compile(r"\[[^\]]*\]")
"""An interval in a cell (``[1.2, 3.4]``): an HTML cell wraps before it, never inside it."""


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


def _downloads(name: str, vector: Sequence[str]) -> list[tuple[str, str]]:
    """(label, file name) of the copies of figure ``name`` (a PNG file name) to link."""
    stem = Path(name).stem
    return [(ext.upper(), f"{stem}.{ext}") for ext in vector] + ([("PNG", name)] if vector else [])


def to_html(
    blocks: Sequence[Block], title: str, images: dict[str, bytes], vector: Sequence[str] = ()
) -> str:
    """One self-contained HTML page; ``images`` maps figure file names to PNG bytes.

    Each caption links the figure's files beside the page (``vector`` formats and the PNG),
    when there are vector copies.
    """
    out = [
        f"<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>"
    ]
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            data = base64.b64encode(images[name]).decode("ascii")
            links = "".join(
                f"<a href='{html.escape(f)}'>{label}</a>" for label, f in _downloads(name, vector)
            )
            out.append(
                f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(caption)}'>"
                f"<figcaption>{html.escape(caption)}{links}</figcaption></figure>"
            )
        elif kind == "table":
            out.append(html_table(content))
        elif kind == "links":
            items = "".join(
                f"<li><a href='{html.escape(href)}'>{html.escape(text)}</a></li>"
                for text, href in content
            )
            out.append(f"<ul>{items}</ul>")
        else:
            out.append(HTML_TEXT[kind].format(html.escape(content)))
    out.append("</body>\n</html>\n")
    return "\n".join(out)


def html_table(t: Table) -> str:
    """HTML of ``t`` (``<table>``, then its notes as paragraphs)."""

    def cell(tag: str, text: str, j: int, strong: bool = False) -> str:
        text = INTERVAL.sub(lambda m: m.group(0).replace(" ", "\u00a0"), text)
        body = f"<strong>{html.escape(text)}</strong>" if strong else html.escape(text)
        style = " style='text-align:left'" if 0 < j < t.left else ""
        return f"<{tag}{style}>{body}</{tag}>"

    head = "".join(cell("th", h, j) for j, h in enumerate(t.header))
    body = "\n".join(
        "<tr>" + "".join(cell("td", c, j, (i, j) in t.bold) for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(t.rows)
    )
    notes = "".join(f"\n<p class='tnote'>{html.escape(n)}</p>" for n in t.notes)
    wide = " class='wide'" if len(t.header) > WIDE else ""
    return (
        f"<div class='scroll'><table{wide}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n"
        f"</tbody>\n</table></div>{notes}"
    )


def to_markdown(blocks: Sequence[Block], vector: Sequence[str] = ()) -> str:
    """The same blocks as Markdown; figures link their PNG file by name, and their copies."""
    out = []
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            links = "".join(f" [{label}]({f})" for label, f in _downloads(name, vector))
            out.append(f"![{caption}]({name})\n\n*{caption}*{links}")
        elif kind == "table":
            out.append(_md_table(content))
        elif kind == "links":
            out.append("\n".join(f"- [{text}]({href})" for text, href in content))
        else:
            out.append(MD_TEXT[kind].format(content))
    return "\n\n".join(out) + "\n"


def _md_escape(text: str) -> str:
    """``text`` with the Markdown characters of table cells and notes escaped (``|``, ``*``)."""
    return text.replace("|", "\\|").replace("*", "\\*")


def _md_table(t: Table) -> str:
    def cell(text: str, strong: bool) -> str:
        text = _md_escape(text)
        return f"**{text}**" if strong else text

    lines = ["| " + " | ".join(cell(h, False) for h in t.header) + " |"]
    lines.append("|" + "|".join([":---"] * t.left + ["---:"] * (len(t.header) - t.left)) + "|")
    lines += [
        "| " + " | ".join(cell(c, (i, j) in t.bold) for j, c in enumerate(row)) + " |"
        for i, row in enumerate(t.rows)
    ]
    return "\n".join(lines + [f"\n{_md_escape(n)}" for n in t.notes])


def write_bundle(
    out: Path,
    *,
    stem: str,
    title: str,
    blocks: Sequence[Block],
    tables: Mapping[str, pl.DataFrame],
    images: Mapping[str, tuple[Plot, str]],
    options: FigureOptions | None = None,
    formatted: Mapping[str, tuple[Table, str]] | None = None,
) -> dict[str, Path]:
    """Write a report atomically: CSV tables, figures, formatted tables, ``<stem>.md`` and
    ``<stem>.html``.

    Parameters
    ----------
    out
        Output folder (created if missing).
    stem
        File stem of the report (``"report"``).
    title
        Title of the HTML page.
    blocks
        Content (:data:`Block`); figure blocks name keys of ``images``.
    tables
        CSV file name -> data.
    images
        PNG file name -> (figure, caption); each is written as PNG at ``options.dpi``, in the
        vector formats of ``options``, and embedded in the HTML at ``options.html_dpi``
        (downscaled from the PNG).
    options
        Resolution, style and vector formats of the figures; default :class:`FigureOptions`.
    formatted
        File stem -> (table, comment): written as ``<stem>.tex`` (booktabs) and ``<stem>.md``.

    Returns
    -------
    dict
        Paths keyed by file stem for CSV tables and PNG figures, by file name for the other
        files (``"load_sweep.pdf"``, ``"summary_table.tex"``), plus ``"md"`` and ``"html"``.
    """
    opts = options or FigureOptions()
    paths: dict[str, Path] = {}
    for name, df in tables.items():
        with atomic_path(out / name) as tmp:
            df.write_csv(tmp)
        paths[Path(name).stem] = out / name
    embedded: dict[str, bytes] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:  # encode one figure while drawing the next
        pending = [
            (
                name,
                pool.submit(
                    encode,
                    draw(plot, ("png", *opts.vector_formats), dpi=opts.dpi, style=opts.style),
                    opts.html_dpi / opts.dpi,
                ),
            )
            for name, (plot, _) in images.items()
        ]
    for name, job in pending:
        files = job.result()
        embedded[name] = files.pop("html")
        for key, data in files.items():
            target = out / (name if key == "png" else f"{Path(name).stem}.{key}")
            with atomic_path(target) as tmp:
                tmp.write_bytes(data)
            paths[Path(name).stem if key == "png" else target.name] = target
    for name, (table, comment) in (formatted or {}).items():
        for ext, text in (("tex", to_latex(table, comment=comment)), ("md", _md_table(table))):
            write_text_atomic(out / f"{name}.{ext}", text + ("" if ext == "tex" else "\n"))
            paths[f"{name}.{ext}"] = out / f"{name}.{ext}"
    paths["md"], paths["html"] = out / f"{stem}.md", out / f"{stem}.html"
    write_text_atomic(paths["md"], to_markdown(blocks, opts.vector_formats))
    write_text_atomic(paths["html"], to_html(blocks, title, embedded, opts.vector_formats))
    return paths
