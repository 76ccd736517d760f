"""Workload fitting (design.md §7): ``schedlab.fit(jobset)`` and its parts.

* :mod:`~schedlab.evaluation.fitting.workload`: :func:`fit` and :class:`FitResult` (the entry
  point, ``schedlab.fit``);
* :mod:`~schedlab.evaluation.fitting.durations`: duration families by maximum likelihood on
  interval- and right-censored integer durations; :mod:`~schedlab.evaluation.fitting.gof`:
  KS/AD distances, quantile errors, Kaplan–Meier;
* :mod:`~schedlab.evaluation.fitting.arrivals`: Poisson / NHPP / batch arrival models;
  :mod:`~schedlab.evaluation.fitting.timeline`: the absolute time axis they are fitted on;
* :mod:`~schedlab.evaluation.fitting.demands`: empirical joint demand tables;
* :mod:`~schedlab.evaluation.fitting.check`: heuristics on trace windows vs fitted jobsets.

The fitted model's dataclasses and its sampling live in ``schedlab.loaders`` (the ``fitted``
generator needs them and ``loaders`` may not import ``evaluation``).
"""
