"""Heuristic and learned policies; the package also fronts the policy registry.

``schedlab.policies.make("sjf")``, ``names(tag="heuristic")``, ``entry``, ``load`` and
``register`` are those of :data:`schedlab.registry.policies`, so the documented API works
whether ``schedlab.policies`` was reached as the registry or as this package.
"""

from schedlab.registry import policies as registry

entry, load, make, names, register = registry.front
