"""Synthetic workload generators: the :class:`~schedlab.loaders.generators.base.SyntheticGenerator`
base class and the DeepRM, Poisson (DeepRM_Plus), Liu et al. and fitted generators."""
