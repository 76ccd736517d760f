"""The statistics settings of a comparison, declared once (design.md §7).

:class:`StatsSettings` is the one shape of these settings: an experiment spec's ``[metrics]``
table is validated against its fields' type hints (:func:`schedlab.param_checks.check_params`), a
report (:func:`~schedlab.reports.render.write_report`) and :func:`schedlab.compare` take it (or
any of its fields by keyword, :func:`stats_settings`), and the analysis adds only the reference
policy (:class:`~schedlab.evaluation.analysis.AnalysisConfig`). Its defaults are written here
only; :data:`DEFAULT_STATS` holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Annotated, Any

from schedlab.evaluation.metrics import BSLD_THRESHOLD
from schedlab.params import Interval

LEVEL = Interval(gt=0, lt=1)
"""Bounds of a probability level (confidence, alpha)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StatsSettings:
    """Which per-jobset metrics to compare, and the statistics' settings."""

    primary: str = "slowdown"
    """Metric of the confirmatory tests (Friedman, all-pairs Wilcoxon with Holm)."""
    secondary: tuple[str, ...] = ("completion", "bounded_slowdown", "p95_slowdown")
    """Exploratory metrics (vs the reference, Benjamini–Hochberg)."""
    bounded_slowdown_threshold: Annotated[float, Interval(gt=0)] = BSLD_THRESHOLD
    """τ of the bounded slowdown, in the results' time unit: seconds for a trace (its real
    times), steps for a workload defined in steps."""
    confidence: Annotated[float, LEVEL] = 0.95
    """Level of the bootstrap confidence intervals."""
    alpha: Annotated[float, LEVEL] = 0.05
    """Significance level of the tests."""
    n_resamples: Annotated[int, Interval(ge=100)] = 2000
    """Bootstrap resamples per interval (a spec needs >= 100; code may use fewer in tests)."""
    seed: int = 0
    """Seed of every bootstrap (one child stream per group,
    :func:`~schedlab.evaluation.stats.group_rng`); a spec's is its experiment seed."""
    replay_block: Annotated[float, Interval(gt=0)] | None = None
    """Block length of the block bootstrap over time of a workload replayed as one jobset (a
    whole trace), in the results' time unit (seconds for a trace); None: a week for a log of 8
    weeks or more, else a day for 8 days or more, else a tenth of the log
    (:func:`~schedlab.evaluation.replay.block_length`)."""

    @property
    def metrics(self) -> tuple[str, ...]:
        """Primary, then secondary metrics."""
        return (self.primary, *(m for m in self.secondary if m != self.primary))


DEFAULT_STATS = StatsSettings()
"""The default settings (every default of the statistics is read from here)."""

STATS_FIELDS = tuple(f.name for f in fields(StatsSettings))
"""Names of the settings, in declaration order."""


def stats_settings(settings: StatsSettings = DEFAULT_STATS, **overrides: Any) -> StatsSettings:
    """``settings`` with the fields given by keyword replaced (``secondary`` as a tuple).

    Raises
    ------
    TypeError
        For a keyword that is not a field of :class:`StatsSettings`.
    """
    unknown = [k for k in overrides if k not in STATS_FIELDS]
    if unknown:
        msg = f"unknown statistics setting {unknown[0]!r}; settings: {', '.join(STATS_FIELDS)}"
        raise TypeError(msg)
    if "secondary" in overrides:
        overrides["secondary"] = tuple(overrides["secondary"])
    return replace(settings, **overrides)
