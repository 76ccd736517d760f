"""The comparison of a report as data: every table of its statistics, for all conditions, and
the focus condition of the detailed tables.

:func:`compare_policies` computes a :class:`Comparison` with :mod:`schedlab.evaluation.analysis`;
:mod:`schedlab.reports.comparison` draws it and :mod:`schedlab.reports.tables` formats its
tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from schedlab.evaluation import analysis as an
from schedlab.evaluation.metrics import STEPS, metric_name
from schedlab.evaluation.replay import Replay
from schedlab.reports.figures import fmt_load


@dataclass
class Comparison:
    """Every table of the comparison, for all conditions, plus the focus condition."""

    cfg: an.AnalysisConfig
    order: list[str]
    """Policies in simulation order."""
    summary: pl.DataFrame
    """:func:`~schedlab.evaluation.analysis.policy_summary`."""
    omnibus: pl.DataFrame
    """:func:`~schedlab.evaluation.analysis.omnibus`."""
    pairwise: pl.DataFrame
    """:func:`~schedlab.evaluation.analysis.pairwise`."""
    exploratory: pl.DataFrame
    """:func:`~schedlab.evaluation.analysis.exploratory`."""
    focus: float | None
    """Offered load of the detailed tables (None: results without a load)."""
    time_unit: str = STEPS
    """Unit the tables show times in (``"h"``, ``"s"``, ``"steps"``:
    :mod:`schedlab.reports.units`)."""
    source_unit: str | None = None
    """Unit of the results' times and of τ (:func:`~schedlab.evaluation.metrics.time_unit`);
    None: :attr:`time_unit`."""
    time_factor: float = 1.0
    """The results' time units per unit shown (3600 when seconds are shown in hours)."""
    replay: Replay | None = None
    """Block statistics of the conditions replayed as one jobset
    (:mod:`schedlab.evaluation.replay`), times in :attr:`time_unit`."""

    @property
    def base_unit(self) -> str:
        """The results' own time unit (``"s"`` or ``"steps"``)."""
        return self.source_unit or self.time_unit

    @property
    def bsld_threshold(self) -> float:
        """τ of the bounded slowdown (in :attr:`base_unit`), for the text."""
        return self.cfg.bounded_slowdown_threshold

    @property
    def tau(self) -> str:
        """``"τ = 10 s"`` (or steps): the bounded slowdown's threshold with its unit."""
        return f"τ = {self.bsld_threshold:g} {self.base_unit}"

    def is_replay(self) -> bool:
        """Whether the focus condition is a workload replayed as one jobset."""
        if self.replay is None:
            return False
        return self.at_focus(self.replay.design).height > 0

    def name(self, metric: str) -> str:
        """Display name of ``metric`` with this comparison's time unit."""
        return metric_name(metric, self.time_unit)

    def at_focus(self, df: pl.DataFrame) -> pl.DataFrame:
        """Rows of ``df`` at the focus load."""
        if df.height == 0 or "load" not in df.columns:
            return df
        if self.focus is None:
            return df.filter(pl.col("load").is_null())
        return df.filter(pl.col("load").is_close(self.focus))

    def ranked(self) -> list[str]:
        """Policies at the focus, best mean rank (primary metric) first."""
        rows = self.at_focus(self.summary).filter(pl.col("metric") == self.cfg.primary)
        return rows.sort("mean_rank", maintain_order=True).get_column("policy").to_list()

    def where(self) -> str:
        """``"at offered load 130%"``, ``"over all jobsets"`` or ``"over the whole log"``."""
        if self.focus is not None:
            return f"at offered load {fmt_load(self.focus)}"
        return "over the whole log" if self.is_replay() else "over all jobsets"


def compare_policies(
    pj: pl.DataFrame,
    pln: pl.DataFrame,
    cfg: an.AnalysisConfig,
    order: Sequence[str],
    focus: float | None,
    *,
    time_unit: str = STEPS,
    source_unit: str | None = None,
    time_factor: float = 1.0,
    replay: Replay | None = None,
) -> Comparison:
    """Compute every table of the comparison (all conditions); ``time_unit`` is the per-jobset
    times' (``"s"``, ``"steps"``, or a display unit of :mod:`schedlab.reports.units` with the
    results' own ``source_unit``). With ``replay``, the summary's intervals of the conditions
    replayed as one jobset are the block bootstrap's."""
    order = list(order)
    summary = an.policy_summary(pj, cfg, order)
    if replay is not None:
        summary = with_block_intervals(summary, replay.summary)
    return Comparison(
        cfg=cfg,
        order=order,
        summary=summary,
        omnibus=an.omnibus(pj, cfg, order),
        pairwise=an.pairwise(pj, cfg, order),
        exploratory=an.exploratory(pj, pln, cfg, order),
        focus=focus,
        time_unit=time_unit,
        source_unit=source_unit,
        time_factor=time_factor,
        replay=replay,
    )


def with_block_intervals(summary: pl.DataFrame, blocks: pl.DataFrame) -> pl.DataFrame:
    """``summary`` (:func:`~schedlab.evaluation.analysis.policy_summary`) with the block-bootstrap
    interval of each replayed condition's mean metrics in ``ci_low``/``ci_high``."""
    cond = an.conditions(summary)
    found = blocks.filter(pl.col("ci_low").is_not_null()).select(
        *cond, "policy", "metric", pl.col("ci_low").alias("_lo"), pl.col("ci_high").alias("_hi")
    )
    found = found.with_columns(pl.col(c).cast(summary.schema[c]) for c in cond)
    out = summary.join(found, on=[*cond, "policy", "metric"], how="left", nulls_equal=True)
    return out.with_columns(
        pl.coalesce("_lo", "ci_low").alias("ci_low"), pl.coalesce("_hi", "ci_high").alias("ci_high")
    ).drop("_lo", "_hi")
