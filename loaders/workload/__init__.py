"""The fitted workload model (durations, arrivals, demands), its duration families and its
versioned ``model.json``; fitted by :mod:`schedlab.evaluation`, sampled by the ``fitted``
generator."""
