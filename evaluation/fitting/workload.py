"""Fit a workload model (durations, arrivals, demands) to a JobSet: ``schedlab.fit(jobset)``.

The result's :attr:`FitResult.model` is a :class:`~schedlab.loaders.workload.model.WorkloadModel`
(``result.save("fit/model.json")``) that the ``fitted`` generator samples at any offered load;
the other attributes are the tidy tables the fit report draws
(:func:`schedlab.reports.fit_report.write_fit_report`).

Choices (see the modules for the details):

* **Durations** (:mod:`~schedlab.evaluation.fitting.durations`): every family by maximum likelihood
  on interval-censored integer durations (``(d-1, d]`` steps) and right-censored running jobs,
  location 0; the model is the best by AIC (or BIC). Likelihoods, AIC/BIC and quantile errors use
  every job (the likelihood is computed per distinct duration); the KS/AD distances use a random
  subsample of at most ``subsample`` completed jobs.
* **Arrivals** (:mod:`~schedlab.evaluation.fitting.arrivals`): Poisson, daily NHPP and their batch
  versions, chosen by the held-out log-likelihood of per-step counts.
* **Demands** (:mod:`~schedlab.evaluation.fitting.demands`): empirical joint tables per duration
  class.
* **Held-out check**: every model is also fitted on the first ``1 - holdout`` of the observed
  time and scored on the rest (log-likelihood per held-out job); the saved model is refitted on
  all jobs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import polars as pl

from schedlab import __version__
from schedlab.evaluation.fitting import arrivals as arr
from schedlab.evaluation.fitting.demands import fit_demands
from schedlab.evaluation.fitting.durations import FamilyFit, fit_family
from schedlab.evaluation.fitting.gof import goodness, kaplan_meier
from schedlab.evaluation.fitting.observations import DurationData
from schedlab.evaluation.fitting.timeline import resolve_censored, timeline
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.workload.components import DurationModel
from schedlab.loaders.workload.families import FAMILIES
from schedlab.loaders.workload.model import WorkloadModel

WINDOW_SECONDS = (600, 3600, 6 * 3600, 86_400, 7 * 86_400)
"""Candidate default windows (s) of generated jobsets: the first holding >= 200 jobs on average."""
WINDOW_STEPS = (50, 100, 500, 1000, 5000, 10_000)
"""The same, in steps, for workloads without seconds per step."""
TARGET_JOBS = 200
INIT_SAMPLE = 50_000
"""Jittered durations used for starting values."""
SOURCE_KEYS = (
    "loader",
    "path",
    "sha256",
    "options",
    "trace_start_s",
    "generator",
    "params",
    "seed",
    "loads",
    "rows",
)


@dataclass(frozen=True, slots=True, eq=False)
class FitResult:
    """A fitted workload model and the tables that justify it."""

    model: WorkloadModel
    durations: pl.DataFrame
    """One row per family: ``family``, ``n_params``, ``loglik``, ``aic``, ``bic``, ``delta``
    (criterion minus the best), ``ks``, ``ad``, ``q50_ratio`` .. ``q999_ratio``,
    ``heldout_ll_per_job``, ``converged``, ``starts`` and ``starts_at_optimum`` (mixtures: EM
    starting points, and how many reached the best log-likelihood; null for the other
    families), ``params`` (JSON); best first."""
    fits: dict[str, FamilyFit]
    """Full-data fit of every family that could be fitted."""
    arrivals: pl.DataFrame
    """One row per arrival model: ``model``, ``n_params``, ``rate_per_step``, ``mean_batch``,
    ``loglik``, ``aic``, ``heldout_ll_per_job``, ``selected``, ``note``."""
    dispersion: pl.DataFrame
    hourly: pl.DataFrame
    demands: pl.DataFrame
    data: DurationData
    """Every job's duration (steps), tallied."""
    sample: np.ndarray
    """The completed durations (steps) used for the KS/AD distances."""
    notes: tuple[str, ...] = field(default=())

    def save(self, path: Any) -> None:
        """Write the model's ``model.json``."""
        self.model.save(path)


def fit(
    jobset: JobSet,
    *,
    censored: Any = None,
    families: Sequence[str] = FAMILIES,
    selection: Literal["aic", "bic"] = "aic",
    demand_classes: int = 4,
    max_demand_values: int = 5000,
    window: int | None = None,
    holdout: float = 0.3,
    subsample: int = 200_000,
    seed: int = 0,
) -> FitResult:
    """Fit durations, arrivals and demands of ``jobset``.

    Parameters
    ----------
    jobset
        The workload (a loaded trace, or generated jobsets); times in its steps.
    censored
        Right-censored (still running) jobs: None (a boolean ``censored`` column if present),
        a column name, or a boolean mask in jobs order. The trace loaders drop running tasks by
        default, so without such a column nothing is censored.
    families
        Duration families to compare (:data:`~schedlab.loaders.workload.families.FAMILIES`).
    selection
        ``"aic"`` or ``"bic"``: the criterion choosing the duration family.
    demand_classes
        Duration classes the demand table is conditioned on (1: no conditioning).
    max_demand_values
        Distinct demand vectors kept per class.
    window
        Arrival window (steps) of generated jobsets; default: the JobSet's, else the shortest of
        10 min, 1 h, 6 h, 1 day, 1 week holding 200 jobs on average.
    holdout
        Share of the observed time (the end) held out for the out-of-sample likelihoods.
    subsample
        Completed jobs used for the KS/AD distances (a random subsample when there are more).
    seed
        Seed of the subsample and of the randomised PIT.
    """
    if not 0 < holdout < 1:
        msg = f"holdout must be in (0, 1), got {holdout}"
        raise ValueError(msg)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        msg = f"unknown duration families {unknown}; known: {', '.join(FAMILIES)}"
        raise ValueError(msg)
    if len(jobset) == 0:
        msg = "cannot fit a workload model to a JobSet without jobs"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    mask = resolve_censored(jobset, censored)
    tl, times = timeline(jobset)
    cut = tl.split_step(1 - holdout)
    duration = jobset.jobs.get_column("duration").to_numpy()
    train = times < cut
    data = DurationData.from_arrays(duration, mask)
    parts = [
        DurationData.from_arrays(duration[m], None if mask is None else mask[m])
        for m in (train, ~train)
    ]
    done = duration if mask is None else duration[~mask]
    sample = done if done.size <= subsample else rng.choice(done, size=subsample, replace=False)
    table, fits = _durations(data, parts, sample, families, selection, rng)
    best = table.row(0, named=True)["family"]
    arrivals, arrival_model = _arrivals(tl, cut)
    dispersion = arr.dispersion(tl, arrival_model)
    demand_model, demand_table = fit_demands(
        jobset.jobs, jobset.resources, n_classes=demand_classes, max_values=max_demand_values
    )
    chosen_window = int(window or jobset.meta.arrival_window or _window(tl, len(jobset)))
    modulation = arr.window_modulation(arrival_model, tl, chosen_window)
    arrival_model = replace(
        arrival_model,
        modulation=modulation,
        modulation_window=chosen_window if modulation else None,
    )
    notes = _notes(data, sample, parts, cut, holdout, mask)
    model = WorkloadModel(
        resources=jobset.resources,
        capacity=tuple(jobset.meta.capacity),
        units=tuple(jobset.meta.units),
        time_step_seconds=jobset.meta.time_step_seconds,
        window=chosen_window,
        durations=DurationModel(
            family=best, params=fits[best].params, max_steps=int(data.value.max())
        ),
        arrivals=arrival_model,
        demands=demand_model,
        source=_source(jobset),
        diagnostics=_finite(
            {
                "selection": selection,
                "durations": table.to_dicts(),
                "arrivals": arrivals.to_dicts(),
                "dispersion": dispersion.to_dicts(),
                "holdout": holdout,
                "split_step": cut,
                "seed": seed,
                "notes": list(notes),
            }
        ),
    )
    return FitResult(
        model,
        table,
        fits,
        arrivals,
        dispersion,
        arr.hourly_rates(tl),
        demand_table,
        data,
        sample,
        notes,
    )


def _durations(
    data: DurationData,
    parts: list[DurationData],
    sample: np.ndarray,
    names: Sequence[str],
    selection: str,
    rng: np.random.Generator,
) -> tuple[pl.DataFrame, dict[str, FamilyFit]]:
    train, test = parts
    x_all = data.jitter(rng, min(INIT_SAMPLE, max(int(data.exact.sum()), 1)))
    x_train = train.jitter(rng, min(INIT_SAMPLE, max(int(train.exact.sum()), 1)))
    km = kaplan_meier(data)
    max_steps = int(data.value.max())
    rows, fits = [], {}
    for name in names:
        full = fit_family(name, data, x_all)
        if full is None:
            continue
        fits[name] = full
        heldout = float("nan")
        if test.n and train.exact.sum() > 0:
            part = fit_family(name, train, x_train)
            if part is not None:
                heldout = test.loglik(part.distribution()) / test.n
        stats = goodness(full.distribution(), data, sample, max_steps, rng, km)
        rows.append(
            {
                "family": name,
                "n_params": full.n_params,
                "loglik": full.loglik,
                "aic": full.aic(),
                "bic": full.bic(data.n),
                **stats,
                "heldout_ll_per_job": heldout,
                "converged": full.converged,
                "starts": len(full.starts) or None,
                "starts_at_optimum": full.starts_at_optimum,
                "params": json.dumps(full.params),
            }
        )
    table = pl.DataFrame(rows).sort(selection)
    table = table.with_columns((pl.col(selection) - pl.col(selection).min()).alias("delta"))
    order = ["family", "n_params", "loglik", "aic", "bic", "delta"]
    return table.select(*order, pl.exclude(order)), fits


def _arrivals(tl: arr.Timeline, cut: int) -> tuple[pl.DataFrame, Any]:
    lo, hi = int(tl.segments[0, 0]), int(tl.segments[-1, 1])
    train, test = tl.clip(lo, cut), tl.clip(cut, hi)
    rows: list[dict[str, Any]] = []
    full_fits: dict[str, arr.Candidate] = {}
    for name in arr.MODELS:
        full = arr.fit_candidate(name, tl)
        if isinstance(full, str):
            rows.append({"model": name, "note": full})
            continue
        full_fits[name] = full
        part = arr.fit_candidate(name, train)
        heldout = float("nan")
        if not isinstance(part, str) and test.times.size:
            heldout = arr.count_loglik(part, test) / test.times.size
        ll = arr.count_loglik(full, tl)
        rows.append(
            {
                "model": name,
                "n_params": full.n_params,
                "rate_per_step": full.model.rate_per_step,
                "mean_batch": full.model.mean_batch(),
                "loglik": ll,
                "aic": 2 * full.n_params - 2 * ll,
                "heldout_ll_per_job": heldout,
                "note": "" if not isinstance(part, str) else f"held out: {part}",
            }
        )
    table = pl.DataFrame(rows, infer_schema_length=None)
    fitted = table.filter(pl.col("loglik").is_not_null())
    by_heldout = fitted.filter(pl.col("heldout_ll_per_job").is_not_nan())
    best = (
        by_heldout.sort("heldout_ll_per_job", descending=True)
        if by_heldout.height
        else fitted.sort("aic")
    ).row(0, named=True)["model"]
    table = table.with_columns((pl.col("model") == best).alias("selected"))
    return table, full_fits[best].model


def _finite(obj: Any) -> Any:
    """``obj`` with NaN and infinities replaced by None (JSON has no NaN)."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def _window(tl: arr.Timeline, n_jobs: int) -> int:
    rate = n_jobs / max(tl.exposure, 1)
    step = tl.step_seconds
    candidates = [max(1, round(s / step)) for s in WINDOW_SECONDS] if step else list(WINDOW_STEPS)
    for w in candidates:
        if w * rate >= TARGET_JOBS:
            return int(w)
    return int(candidates[-1])


def _source(jobset: JobSet) -> dict[str, Any]:
    prov = jobset.meta.provenance
    out = {k: prov[k] for k in SOURCE_KEYS if k in prov}
    load = offered_load(jobset)["load"].item()
    out |= {
        "jobs": len(jobset),
        "jobsets": len(jobset.jobset_ids),
        "offered_load": load,
        "schedlab_version": __version__,
    }
    plain: dict[str, Any] = json.loads(json.dumps(out, default=str))
    return plain


def _notes(
    data: DurationData,
    sample: np.ndarray,
    parts: list[DurationData],
    cut: int,
    holdout: float,
    mask: np.ndarray | None,
) -> tuple[str, ...]:
    done = int(data.exact.sum())
    notes = [
        f"Likelihoods, AIC/BIC and quantile errors use all {data.n:,} jobs "
        f"({data.value.size:,} distinct durations); the KS and Anderson-Darling distances use "
        + (
            f"a random subsample of {sample.size:,} of the {done:,} completed jobs."
            if sample.size < done
            else f"all {done:,} completed jobs."
        ),
        f"Held-out split at step {cut:,}: {parts[0].n:,} jobs to fit, {parts[1].n:,} to score "
        f"(the last {holdout:.0%} of the observed time).",
    ]
    if mask is None:
        notes.append("No job is marked as still running: nothing is right-censored.")
    else:
        notes.append(f"{int(mask.sum()):,} still-running jobs are right-censored.")
    return tuple(notes)
