"""DeepRM_Plus workload generator: Poisson arrivals (Guo et al. 2021, §V-B, design.md §3).

Workload
--------
DeepRM_Plus "tested a similar workload setting" to DeepRM and states its ranges, which are the
DeepRM reference code's, so this generator *is*
:class:`~schedlab.loaders.generators.deeprm_workload.DeepRMGenerator` with Poisson arrival
counts (a subclass; the job model is shared, not copied):

* 2 resources (cpu, mem) of capacity r = 10 slots each.
* The number of jobs arriving at each of ``window`` steps (default 50) is ``Poisson(λ)``,
  independent across steps; λ is the mean number of arrivals per step. With the default window a
  jobset holds 50·λ jobs on average: 2.5–47.5 jobs over the paper's λ = 0.05–0.95 ("10%–190%"),
  the paper's "5 to 50 jobs" per jobset. The paper uses 25 jobsets (``--jobsets 25``).
* Durations: 80% uniform in {1, 2, 3} steps, 20% uniform in {10, ..., 15} steps.
* Demands: one primary resource chosen uniformly, demanding uniform {5, ..., 10} slots
  (0.5–1 r); the auxiliary resource demands uniform {1, 2} slots (0.1–0.2 r).

Load or rate
------------
Offered load (design.md §3) = λ · E[duration] · E[demand per resource] / capacity
= λ · 4.1 · 4.5 / 10 = 1.845 · λ. DeepRM_Plus labels its workloads 2·λ instead: its "140% load"
is λ = 0.7, i.e. an offered load of 1.2915 by our definition. Ask for either:

* a load: ``gen.generate(1.4, ...)`` or ``schedlab generate poisson --load 1.4 ...`` draws
  λ = 1.4 / 1.845 = 0.759;
* a rate: ``gen.generate_rates([0.7], ...)``, or on the command line the load that rate gives,
  ``--load`` :meth:`PoissonGenerator.load_for_rate` (0.7) = 1.2915.

Both are recorded in the JobSet's provenance (``loads`` and ``rates``), and every job row carries
its offered ``load``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator


@dataclass(frozen=True, kw_only=True, slots=True)
class PoissonGenerator(DeepRMGenerator):
    """Generate DeepRM_Plus jobsets: Poisson(λ) arrivals per step, DeepRM's job model.

    Every parameter of :class:`~schedlab.loaders.generators.deeprm_workload.DeepRMGenerator` is
    accepted (``window``, ``n_resources``, duration and demand ranges, ``variant``) except
    ``arrivals``, which is fixed to ``"poisson"``; the defaults are DeepRM_Plus's workload.
    """

    name: ClassVar[str] = "poisson"

    arrivals: Literal["poisson"] = field(default="poisson", init=False)
    """Arrival counts per step are Poisson(λ) (fixed; recorded in the provenance)."""
