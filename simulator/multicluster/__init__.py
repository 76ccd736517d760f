"""Liu et al.'s heterogeneous, elastic multi-cluster with deadlines (ICPP'20), model kind
``"multicluster"``: :mod:`.config` (clusters, elasticity), :mod:`.jobs` (a JobSet as job arrays),
:mod:`.kernels` (the compiled moment), :mod:`.model` (the batched Model), :mod:`.views`
(baselines' and Liu's state), :mod:`.values` (after-the-fact action values), :mod:`.run`
(simulate policies into per-job results)."""
