"""One line on standard error before schedlab's compiled code compiles, so a first run that
compiles (numba, once per installation: the result is cached) does not look like a hang.

:func:`install` registers a numba event listener (idempotent). At the start of an outermost
compilation of a schedlab function it prints, once per kind of kernel, e.g. ``compiling the
EASY and strict kernels (first use only, about 8 s)...``. Nothing is printed when the cache
already holds the code, and nothing for code outside schedlab.
"""

from __future__ import annotations

import sys
from typing import Any

from numba.core import event

KERNELS: dict[str, tuple[str, int]] = {
    "schedlab.simulator.cluster.greedy.run_scan": ("the greedy list scheduler", 8),
    "schedlab.simulator.cluster.greedy.run_tree": ("the greedy whole-queue scheduler", 7),
    "schedlab.simulator.cluster.easy": ("the EASY and strict queue kernels", 9),
    "schedlab.simulator.cluster.conservative": ("the conservative backfilling kernels", 11),
    "schedlab.simulator.cluster": ("the cluster simulator's kernels", 0),
    "schedlab.simulator.cluster.kernels": ("the agents' batched engine", 30),
    "schedlab.simulator.cluster.dispatch": ("the placement rules", 0),
    "schedlab.simulator.views": ("the DeepRM image", 0),
    "schedlab.simulator.pick": ("the pick environment", 30),
    "schedlab.simulator.multicluster": ("the multi-cluster model", 3),
    "schedlab.policies": ("the learned policies' kernels", 0),
    "schedlab.policies.heuristics": ("the heuristics' job orders", 3),
    "schedlab.policies.cnn_plus_layer1": ("DeepRM_Plus's sparse first layer", 0),
    "schedlab.dag": ("the DAG graph passes", 2),
    "schedlab.loaders.traces": ("the trace scanners", 10),
    "schedlab.evaluation": ("the report's timeline and allocation", 8),
}
"""What a compiling function is said to be (matched by the longest prefix of
``module.qualname``), with its typical compile time on one core (seconds; 0: not measured, no
estimate said), measured alone with an empty cache."""


class _Announcer(event.Listener):
    """Says once per kind of kernel that it compiles (outermost compilations only)."""

    def __init__(self) -> None:
        self.depth = 0
        self.said: set[str] = set()

    def on_start(self, ev: Any) -> None:
        if self.depth == 0:
            fn = ev.data["dispatcher"].py_func
            name = f"{fn.__module__}.{fn.__qualname__}"
            if name.startswith("schedlab."):
                self.say(name)
        self.depth += 1

    def on_end(self, ev: Any) -> None:
        self.depth -= 1

    def say(self, name: str) -> None:
        prefixes = [p for p in KERNELS if name.startswith(p)]
        key = max(prefixes, key=len) if prefixes else name.rpartition(".")[0]
        if key in self.said:
            return
        self.said.add(key)
        what, seconds = KERNELS.get(key, (key, 0))
        about = f", about {seconds} s" if seconds else ""
        print(f"compiling {what} (first use only{about})...", file=sys.stderr, flush=True)


_ANNOUNCER: _Announcer | None = None


def install() -> None:
    """Register the listener (once per process)."""
    global _ANNOUNCER
    if _ANNOUNCER is None:
        _ANNOUNCER = _Announcer()
        event.register("numba:compile", _ANNOUNCER)
