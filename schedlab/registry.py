"""Registries map names to lazily imported entry points (Gymnasium's ``register``/``make``).

One registry per kind (generators, loaders, policies, trainers, model kinds); ``import schedlab``
imports none of the entry points, so torch or numba are loaded only when a name that needs them
is made. Entries keep their registration order (the report order of the heuristics) and carry
tags, so lists of names are derived from here (``policies.names(tag="heuristic")``), never
repeated. Parameters given by name are checked against the entry point's type hints
(:mod:`schedlab.params`).

Three kinds of names (:attr:`Entry.origin` says which, ``schedlab list`` shows it):

* **built in**: registered in :mod:`schedlab.builtin_entries` (the machinery is in
  :mod:`schedlab.registry_machinery`, the spec parser in :mod:`schedlab.policy_specs`);
* **plug-ins**: entry points of the installed distributions in the group ``schedlab.<kind>``
  (:data:`GROUPS`: ``schedlab.policies``, ``schedlab.generators``, ``schedlab.loaders``,
  ``schedlab.trainers``, ``schedlab.models``), found the first time a name is not a built-in one
  or the registry is listed; a plug-in is imported only when its name is used (or listed). A
  plug-in named like a built-in entry, or like another plug-in, is refused (with a
  :class:`~schedlab.errors.PluginWarning` naming both origins): the built-in name keeps its
  meaning, and the refused object stays reachable by reference;
* **references** ``package.module:attr`` (Gymnasium's ``module:EnvId``), accepted wherever a
  name is: ``schedlab simulate jobs.parquet --policy my_pkg.sched:LeastWork+easy``.

A plug-in or referenced object describes itself with optional attributes: ``summary`` (else
the first paragraph of its docstring, or of its module's for an instance), ``tags``, ``models``
(model kinds it supports, tagged ``model:<kind>``; a policy's ``models`` attribute of the
Policy protocol) and ``positional`` (the keyword a bare first option fills, for learned
policies' checkpoints).
"""

from __future__ import annotations

from schedlab.builtin_entries import generators, loaders, models, policies, trainers
from schedlab.policy_specs import (
    make_policy,
    parse_policy,
    parse_spec,
    policy_key,
    policy_name,
    split_name,
)
from schedlab.registry_machinery import DEFAULT_REPORT, GROUPS, Registry

__all__ = [
    "DEFAULT_REPORT",
    "GROUPS",
    "Registry",
    "generators",
    "loaders",
    "make_policy",
    "models",
    "parse_policy",
    "parse_spec",
    "policies",
    "policy_key",
    "policy_name",
    "split_name",
    "trainers",
]
