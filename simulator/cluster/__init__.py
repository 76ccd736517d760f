"""The cluster model: m identical machines × d resources (m = 1 is DeepRM's single pool).

Three implementations of one semantics (tests check identical schedules): :mod:`.engine`
(readable, one episode), :mod:`.list_scheduler` (heuristics, compiled and event driven) and
:mod:`.batched` (``B`` episodes compiled: the :class:`~schedlab.simulator.model.Model` agents
use). :mod:`.placement` says how a job is placed on a machine; :mod:`.dispatch` holds the one
list-scheduling decision every engine uses; :mod:`.precedence` when a job is ready (its arrival,
or for a DAG task its parents' finish); :mod:`.backfill` (compiled) and :mod:`.backfill_steps`
(readable) the queue disciplines strict, EASY and conservative.
"""

import warnings

from numba.core.errors import NumbaExperimentalFeatureWarning

# Heuristics' scores and placement rules are passed to the kernels as first-class functions.
warnings.filterwarnings(
    "ignore", "First-class function type feature is experimental", NumbaExperimentalFeatureWarning
)
