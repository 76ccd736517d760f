"""The optional parts of schedlab (the extras of ``pyproject.toml``) and the one line said when
one is asked for but not installed.

``pip install .`` installs the core: workloads, trace replay, heuristics and backfilling, the
simulator and its Gymnasium environments, fitting, statistics and reports. The extras add:

* ``learned``: torch, for the learned policies (DeepRM, Chen et al., DeepRM_Plus, Liu et al.)
  and their trainers;
* ``rl``: Stable-Baselines3 and sb3-contrib (and ``learned``), for ``sb3:`` agents;
* ``ray``: Ray, for ``--backend ray``.

schedlab is installed from its source tree, so the hint names ``pip install '.[EXTRA]'`` there
(``make venv`` installs every extra).
"""

from __future__ import annotations

import importlib.util

from schedlab.errors import MissingExtraError

EXTRAS: dict[str, tuple[str, ...]] = {
    "learned": ("torch",),
    "rl": ("torch", "stable_baselines3", "sb3_contrib"),
    "ray": ("ray",),
}
"""Extra -> the modules it installs that schedlab imports (smallest extra first)."""

NAMES = {
    "torch": "torch",
    "stable_baselines3": "Stable-Baselines3",
    "sb3_contrib": "sb3-contrib",
    "ray": "Ray",
}
"""Module -> the name of its project, for messages."""


def install_hint(extra: str) -> str:
    """How to install ``extra``: from schedlab's source tree (it is not on PyPI)."""
    return (
        f"install schedlab's '{extra}' extra from its source tree: pip install '.[{extra}]' "
        "(make venv installs every extra)"
    )


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found (none when it is installed)."""
    absent = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a blocked or half-removed package
            found = False
        if not found:
            absent.append(module)
    return absent


def why_missing(extra: str, what: str) -> str | None:
    """Why ``what`` (``"policy 'deeprm'"``) cannot be used here: the modules of ``extra`` it
    needs that are not installed, and how to install them; None when they are."""
    absent = missing_modules(extra)
    if not absent:
        return None
    names = " and ".join(NAMES.get(m, m) for m in absent)
    verb = "is" if len(absent) == 1 else "are"
    return f"{what} needs {names}, which {verb} not installed: {install_hint(extra)}"


def require(extra: str, what: str) -> None:
    """Raise :class:`~schedlab.errors.MissingExtraError` (see :func:`why_missing`) unless the
    modules of ``extra`` are installed."""
    why = why_missing(extra, what)
    if why is not None:
        raise MissingExtraError(why)


def extra_of(module: str) -> str | None:
    """The smallest extra that installs the top-level module of ``module`` (``torch.nn`` ->
    ``learned``), or None if no extra does."""
    top = module.partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)
