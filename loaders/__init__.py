"""Trace loaders and workload generators; the package also fronts the loader registry.

``schedlab.loaders.load("swf")``, ``names()``, ``entry``, ``make`` and ``register`` are those of
:data:`schedlab.registry.loaders`, so the documented API works whether ``schedlab.loaders``
was reached as the registry or as this package.
"""

from schedlab.registry import loaders as registry

entry, load, make, names, register = (
    registry.entry, registry.load, registry.make, registry.names, registry.register
)  # fmt: skip
