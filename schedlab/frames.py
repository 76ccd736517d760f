"""HTML previews of polars tables for notebooks."""

from __future__ import annotations

import html

import polars as pl


def html_preview(title: str, facts: list[str], df: pl.DataFrame, *, rows: int = 10) -> str:
    """HTML of a titled object for Jupyter: a heading, a list of facts and ``rows`` table rows."""
    items = "".join(f"<li>{html.escape(f)}</li>" for f in facts)
    with pl.Config(tbl_rows=rows):
        table = df._repr_html_()
    return f"<div><strong>{html.escape(title)}</strong><ul>{items}</ul>{table}</div>"
