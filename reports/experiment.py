"""The report of an experiment directory (``schedlab report runs/x/ -o out/``).

The experiment's resolved spec gives the reference policy, the metrics, the statistics
settings, the focus load and the title; its failures, missing runs, skipped optional policies
and environment are shown in the report. One workload gives one report in ``out/``; several
give one report per workload in ``out/<workload>/`` and an index page ``out/report.html``
(and ``report.md``) linking them.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from schedlab.errors import SpecError
from schedlab.evaluation.collect import Experiment, read_experiment
from schedlab.evaluation.spec import checkpoint_path
from schedlab.io import write_text_atomic
from schedlab.reports.markup import to_html, to_markdown
from schedlab.reports.render import write_report


def training_run(spec: str) -> Path | None:
    """The training-run folder of a learned policy's checkpoint (holding ``curve.csv``), if any.

    The checkpoint named by the spec is a file (its folder), a run directory, or a shipped name
    (``policies/checkpoints/<name>/``).
    """
    ckpt = checkpoint_path(spec)
    if ckpt is None:
        return None
    p = Path(ckpt)
    if not p.exists():
        p = Path(str(resources.files("schedlab.policies") / "checkpoints" / ckpt))
    folder = p if p.is_dir() else p.parent
    return folder if (folder / "curve.csv").is_file() else None


def _context(exp: Experiment, workload: str) -> dict[str, Any]:
    learning = {p.name: str(f) for p in exp.spec.policies if (f := training_run(p.spec))}
    return {
        "spec": exp.spec.to_json(),
        "environment": exp.environment,
        "failures": [f for f in exp.failures if f.get("workload") == workload],
        "missing": exp.missing,
        "skipped": [list(s) for s in exp.spec.skipped],
        "learning": learning,
    }


def write_experiment_report(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int | None = None,
    reference: str | None = None,
) -> dict[str, Path]:
    """Write the report(s) of the experiment directory ``path`` into ``out_dir``.

    Parameters
    ----------
    path
        Directory written by :func:`~schedlab.evaluation.runner.run_experiment`.
    out_dir
        Output folder.
    seed
        Bootstrap seed; default the experiment's seed.
    reference
        Reference policy; default the spec's.

    Returns
    -------
    dict
        As :func:`~schedlab.reports.render.write_report` for one workload; with several, the
        index's ``"html"`` and ``"md"`` plus ``"<workload>"`` -> that report's HTML.

    Raises
    ------
    SpecError
        If ``path`` is not an experiment directory or no run has completed.
    """
    exp = read_experiment(path)
    spec, out = exp.spec, Path(out_dir)
    if not exp.results:
        msg = f"{path}: no run of experiment {spec.name!r} has completed; nothing to report"
        raise SpecError(msg)
    m = spec.metrics
    kwargs: dict[str, Any] = {
        "seed": spec.seed if seed is None else seed,
        "confidence": m.confidence,
        "n_resamples": m.n_resamples,
        "reference": reference or spec.reference,
        "primary": m.primary,
        "secondary": m.secondary,
        "alpha": m.alpha,
        "bsld_threshold": m.bounded_slowdown_threshold,
        "focus_load": spec.report.focus_load,
    }
    title = spec.report.title or spec.description or spec.name
    if len(exp.results) == 1:
        ((workload, results),) = exp.results.items()
        return write_report(results, out, title=title, experiment=_context(exp, workload), **kwargs)
    paths: dict[str, Path] = {}
    links = []
    for workload, results in exp.results.items():
        sub = write_report(
            results,
            out / workload,
            title=f"{title}: {workload}",
            experiment=_context(exp, workload),
            **kwargs,
        )
        paths[workload] = sub["html"]
        links.append(f"{workload}: {workload}/report.html")
    blocks = [
        ("h1", title),
        ("p", f"Experiment {spec.name}: one report per workload."),
        ("pre", "\n".join(links)),
    ]
    write_text_atomic(out / "report.md", to_markdown(blocks))
    write_text_atomic(out / "report.html", to_html(blocks, title, {}))
    paths["html"], paths["md"] = out / "report.html", out / "report.md"
    return paths
