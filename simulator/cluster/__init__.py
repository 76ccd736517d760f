"""The cluster model: m identical machines × d resources (m = 1 is DeepRM's single pool).

One semantics, three implementations (tests check identical schedules): :mod:`.engine`
(readable, one episode, and :mod:`.backfill_steps` for the queue disciplines), the compiled
decision rules of the heuristics on the event core (:mod:`.core`: :mod:`.greedy`, :mod:`.easy`,
:mod:`.conservative`, entered through :mod:`.disciplines`), and :mod:`.batched` (``B`` episodes
compiled: the :class:`~schedlab.simulator.model.Model` agents use). :mod:`.placement` says how
a job is placed on a machine; :mod:`.dispatch` holds the list-scheduling decision; :mod:`.order`
the queue's job order; :mod:`.precedence` when a job is ready (its arrival, or for a DAG task
its parents' finish); :mod:`.heap` the one heap of time-ordered events.
"""

import warnings

from numba.core.errors import NumbaExperimentalFeatureWarning

from schedlab import compiling

# Heuristics' scores and placement rules are passed to the kernels as first-class functions.
warnings.filterwarnings(
    "ignore", "First-class function type feature is experimental", NumbaExperimentalFeatureWarning
)
compiling.install()
