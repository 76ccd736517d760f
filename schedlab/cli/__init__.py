"""The ``schedlab`` command line (``schedlab --help``), one module per command group.

``generate``, ``load``/``traces``, ``simulate``, ``report``/``show``/``export``, ``experiment``,
``demo``, ``fit``, ``train``, ``list``, ``check`` and ``compile`` (:mod:`.kernels`); options
shared across them live in :mod:`schedlab.cli.options`. Every user mistake is reported as one
line (what was expected, what was given, the option), and warnings print as one line each
(:mod:`schedlab.cli.app`). Importing this package imports only click and the registries: each
command imports what it needs when it runs (worker processes of ``experiment run`` re-import it).
"""

from schedlab.cli import (
    check,
    demo,
    experiment,
    fit,
    generate,
    kernels,
    listing,
    load,
    report,
    simulate,
    train,
)
from schedlab.cli.app import main

for _command in (
    generate.generate_cmd,
    fit.fit_cmd,
    load.load_cmd,
    load.traces_group,
    simulate.simulate_cmd,
    report.report_cmd,
    report.show_cmd,
    report.export_cmd,
    experiment.experiment_group,
    demo.demo_cmd,
    train.train_group,
    listing.list_cmd,
    check.check_group,
    kernels.compile_cmd,
):
    main.add_command(_command)

__all__ = ["main"]
