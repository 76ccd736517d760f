"""What a policy of the pick engine shares (RLScheduler's setting,
:mod:`schedlab.simulator.pick`): the cluster model, the view of the candidates' rows, its name
under a discipline (``jobscore+easy``), its constructor's parameters. It picks among
:func:`~schedlab.simulator.pick.engine.candidates` of the engine's mask.
"""

from __future__ import annotations

from typing import ClassVar

from schedlab.policies.base import ParamsMixin, QueueNamed
from schedlab.simulator.pick.engine import PickQueue
from schedlab.simulator.pick.features import PickView


class PickAgent(QueueNamed, ParamsMixin):
    """A policy picking the next job among the pick engine's candidates, under ``queue``."""

    models: ClassVar[frozenset[str]] = frozenset({"cluster"})
    view: ClassVar[PickView] = PickView()
    queue: PickQueue
