"""Shared by the hooks that generate part of a page: replace a page's marker by its content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def fill(markdown: str, page: Any, src_uri: str, marker: str, render: Callable[[], str]) -> str:
    """``markdown`` with ``marker`` replaced by ``render()`` on page ``src_uri`` (other pages
    unchanged); a ``ValueError`` if that page lost its marker."""
    if page.file.src_uri != src_uri:
        return markdown
    if marker not in markdown:
        msg = f"docs/{src_uri} lost its marker {marker}"
        raise ValueError(msg)
    return markdown.replace(marker, render())
