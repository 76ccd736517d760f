"""Polars tables for notebooks: conversion to pandas without pyarrow, and HTML previews."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pandas as pd


def to_pandas(df: pl.DataFrame) -> pd.DataFrame:
    """A pandas copy of ``df``, built column by column (polars' own needs pyarrow).

    Numbers without nulls become numpy columns of the same dtype; integers with nulls become
    pandas' nullable ``Int64``; floats keep nulls as NaN; booleans with nulls become
    ``boolean``; Enum and Categorical columns become pandas categoricals (Enum order kept);
    strings, lists and other types become object columns.
    """
    import pandas as pd

    cols = {}
    for name, s in df.to_dict().items():
        dtype = s.dtype
        if isinstance(dtype, pl.Enum | pl.Categorical):
            cats = dtype.categories.to_list() if isinstance(dtype, pl.Enum) else None
            cols[name] = pd.Categorical(s.cast(pl.String).to_list(), categories=cats)
        elif dtype.is_integer() and s.null_count():
            cols[name] = pd.array(s.to_list(), dtype="Int64")
        elif dtype == pl.Boolean and s.null_count():
            cols[name] = pd.array(s.to_list(), dtype="boolean")
        elif dtype.is_numeric() or dtype == pl.Boolean:
            cols[name] = s.to_numpy()
        else:
            cols[name] = pd.Series(s.to_list(), dtype=object)
    return pd.DataFrame(cols, index=pd.RangeIndex(df.height))


def html_preview(title: str, facts: list[str], df: pl.DataFrame, *, rows: int = 10) -> str:
    """HTML of a titled object for Jupyter: a heading, a list of facts and ``rows`` table rows."""
    items = "".join(f"<li>{html.escape(f)}</li>" for f in facts)
    with pl.Config(tbl_rows=rows):
        table = df._repr_html_()
    return f"<div><strong>{html.escape(title)}</strong><ul>{items}</ul>{table}</div>"
