"""griffe extension: Sphinx cross-reference roles in docstrings as mkdocstrings links.

schedlab's docstrings are numpydoc, with Sphinx roles (``:class:`~schedlab.jobset.JobSet```,
``:func:`load_spec```) that Markdown would show verbatim. Each role becomes an *optional*
autorefs link (``<autoref identifier=... optional>``): linked when the object is rendered on
some page of the API reference, plain code otherwise, never a warning. A name is looked up as
written, then in the scopes around the docstring (class, module, packages), as Sphinx does. A
paragraph ending with reST's ``::`` (a literal block follows) ends with ``:``; the indented block
after it is a Markdown code block already.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):"
    r"`(?P<tilde>~?)(?P<text>[^`<]+?)(?:\s*<(?P<target>[^`>]+)>)?`"
)
"""A Sphinx role: ``:class:`~a.B```, ``:func:`a.f```, ``:meth:`Title <a.B.m>```."""

LITERAL_END = re.compile(r"(?<=\S)::$", flags=re.M)
"""reST's literal-block marker at the end of a paragraph: ``Schema::``."""

LITERAL_LINE = re.compile(r"^[ \t]*::[ \t]*\n", flags=re.M)
"""reST's literal-block marker alone on a line."""

TYPED = re.compile(r"^(?P<head>[ \t]*[\w*][\w, *]* : )(?P<type>.*``.*)$", flags=re.M)
"""A numpydoc entry with a type (``layout : ``"deeprm"`` or ``"reshaped"````): the type is
shown as code already, so its reST literals lose their backticks."""


def _candidates(obj: griffe.Object, name: str) -> list[str]:
    """Where ``name`` may be defined, seen from ``obj``: as written, then in each scope around
    ``obj``, innermost first."""
    scopes, scope = [], obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    return [name, *(f"{s}.{name}" for s in scopes)]


def _resolve(obj: griffe.Object, name: str, loader: griffe.GriffeLoader) -> str:
    """The canonical path of the first candidate griffe knows (an imported name: where it is
    defined); ``name`` itself if none."""
    for candidate in _candidates(obj, name):
        try:
            found = loader.modules_collection[candidate]
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        return str(found.target_path if found.is_alias else found.path)
    return name


def rewrite(text: str, resolve: Any) -> str:
    """``text`` with its roles as optional autorefs (``resolve(name)``: the identifier) and
    its literal-block markers as colons."""

    def link(m: re.Match[str]) -> str:
        target = (m["target"] or m["text"]).strip().lstrip(".")
        title = m["text"].strip() if m["target"] else target
        if m["tilde"]:
            title = title.rsplit(".", 1)[-1]
        identifier = html.escape(resolve(target), quote=True)
        code = f"<code>{html.escape(title)}</code>"
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    text = TYPED.sub(lambda m: m["head"] + m["type"].replace("``", ""), text)
    return LITERAL_LINE.sub("", LITERAL_END.sub(":", ROLE.sub(link, text)))


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring once the package's object tree is complete."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring (resolving names against the loaded packages)."""
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = rewrite(
                obj.docstring.value, lambda name: _resolve(obj, name, loader)
            )

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """The top-level package's own docstring (``on_object`` sees its members only)."""
        self.on_object(obj=pkg, loader=loader)
