"""The notebook API: ``schedlab.compare(results, reference="sjf")``.

:func:`compare` runs the report's analysis (:func:`~schedlab.reports.render.compute`) and
returns a :class:`ComparisonResult`: its attributes are tidy polars DataFrames (convert one with
``.to_pandas()``), its ``plot_*``
methods draw the report's figures onto a given Axes (or the current one), and it renders itself
in Jupyter as the report's first screen::

    import schedlab
    cmp = schedlab.compare("runs/figure4", reference="tetris")
    cmp                      # headline and the ratio table of every load
    cmp.ratios               # DataFrame
    cmp.plot_load_sweep()    # on plt.gca()
    cmp.plot_schedule_diff(fig=plt.figure(figsize=(12, 5)))
"""

from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.errors import ResultsError
from schedlab.evaluation import schedules as sch
from schedlab.evaluation import timeline as tl
from schedlab.evaluation.clock import clock
from schedlab.evaluation.replay import Replay
from schedlab.evaluation.settings import DEFAULT_STATS, StatsSettings
from schedlab.evaluation.stats import summarize
from schedlab.evaluation.users import fairness
from schedlab.jobset import JobSet
from schedlab.reports import comparison, comparison_data, figures, markup, schedule
from schedlab.reports import ratio_figures as rf
from schedlab.reports import stats_figures as sf
from schedlab.reports.experiment import load_results
from schedlab.reports.palette import policy_palette
from schedlab.reports.render import analysis_config, compute, write_report
from schedlab.reports.sections import Computed
from schedlab.reports.tables import overview_table, summary_table
from schedlab.reports.time_axis import TimeAxis
from schedlab.reports.timeline_figures import plot_timeline
from schedlab.results import Results


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    """The comparison of the policies of one workload: tables as attributes, figures as methods.

    Every table is over jobsets (paired by jobset), per offered load; see
    :mod:`schedlab.evaluation.analysis` for the statistics.
    """

    computed: Computed
    """Everything the report computes (:class:`~schedlab.reports.sections.Computed`)."""
    jobs: JobSet | None
    """The JobSet of the results (its demands give the views over time), if known."""

    @property
    def reference(self) -> str:
        """The reference policy."""
        return self.computed.comp.cfg.reference

    @property
    def policies(self) -> list[str]:
        """Policies in simulation order."""
        return list(self.computed.comp.order)

    @property
    def focus_load(self) -> float | None:
        """The offered load of the per-load defaults (the highest, unless asked otherwise)."""
        return self.computed.comp.focus

    @property
    def summary(self) -> pl.DataFrame:
        """Per load × policy × metric: mean [CI], median, IQR, mean rank, ratio to the
        reference [CI], wins/ties/losses, probability of improvement."""
        return self.computed.comp.summary

    @property
    def ratios(self) -> pl.DataFrame:
        """Per load × policy: ratio to the reference [CI] on the primary metric with the
        Holm-adjusted test, and whether CI and test disagree."""
        return self.computed.ratios

    @property
    def pairwise(self) -> pl.DataFrame:
        """Per load and pair: Wilcoxon signed-rank, Holm-adjusted p, rank-biserial r."""
        return self.computed.comp.pairwise

    @property
    def omnibus(self) -> pl.DataFrame:
        """Per load: Friedman / Iman–Davenport, Kendall's W, Nemenyi CD."""
        return self.computed.comp.omnibus

    @property
    def exploratory(self) -> pl.DataFrame:
        """Per load: secondary metrics and length buckets vs the reference (BH-adjusted)."""
        return self.computed.comp.exploratory

    @property
    def per_jobset(self) -> pl.DataFrame:
        """One row per policy × jobset: the per-jobset metrics the statistics are over."""
        return self.computed.per_jobset

    @property
    def per_length(self) -> pl.DataFrame:
        """Per load × policy × length bucket: mean per-jobset slowdown [CI] over jobsets."""
        c = self.computed
        return summarize(
            c.per_length,
            metrics=("slowdown",),
            by=("policy", "load", "bucket"),
            settings=c.comp.cfg,
        )

    @property
    def per_user(self) -> pl.DataFrame | None:
        """Per load × policy × user: jobs, mean wait and mean bounded slowdown
        (:func:`~schedlab.evaluation.users.per_user`; None: the jobs have no user ids)."""
        return self.computed.users

    @property
    def fairness(self) -> pl.DataFrame | None:
        """Per load × policy: users, Jain's index over their mean bounded slowdowns, the worst
        user (:func:`~schedlab.evaluation.users.fairness`; None without user ids)."""
        users = self.computed.users
        return None if users is None else fairness(users)

    @property
    def replay(self) -> Replay | None:
        """The block statistics of a workload replayed as one jobset (a whole trace:
        :mod:`schedlab.evaluation.replay`), times in the report's unit; None otherwise."""
        return self.computed.comp.replay

    @property
    def palette(self) -> dict[str, Any]:
        """Policy -> colour, as in the reports."""
        return policy_palette(self.policies)

    def _at(self, load: float | None) -> comparison_data.Comparison:
        comp = self.computed.comp
        return comp if load is None else dataclasses.replace(comp, focus=load)

    def plot_load_sweep(
        self, *, metric: str | None = None, log: bool = True, ax: Axes | None = None
    ) -> Axes:
        """Mean per-jobset ``metric`` (default the primary) against offered load, CI bands."""
        c = self.computed
        return figures.plot_load_sweep(
            c.summary,
            palette=self.palette,
            metric=metric or c.comp.cfg.primary,
            confidence=c.confidence,
            log=log,
            unit=c.comp.time_unit,
            ax=ax,
        )

    def plot_ratio_sweep(self, *, ax: Axes | None = None) -> Axes:
        """Ratio to the reference against offered load, paired CI bands."""
        c = self.computed
        return rf.plot_ratio_sweep(
            c.comp.summary,
            reference=self.reference,
            palette=self.palette,
            metric=c.comp.cfg.primary,
            confidence=c.confidence,
            ax=ax,
        )

    def plot_ratios(self, *, ax: Axes | None = None) -> Axes:
        """Policy × load grid of ratios to the reference with significance markers."""
        order = [p for p in self.policies if p != self.reference]
        return rf.plot_ratio_grid(
            self.ratios,
            reference=self.reference,
            order=order,
            alpha=self.computed.comp.cfg.alpha,
            ax=ax,
        )

    def plot_jobset_values(self, *, load: float | None = None, ax: Axes | None = None) -> Axes:
        """Per-jobset primary metric at ``load`` (default the focus): boxes and dots."""
        comp = self._at(load)
        return sf.plot_jobset_values(
            comp.at_focus(self.per_jobset),
            metric=comp.cfg.primary,
            order=comp.ranked(),
            palette=self.palette,
            title=comp.where(),
            unit=comp.time_unit,
            ax=ax,
        )

    def plot_cd_diagram(self, *, load: float | None = None, ax: Axes | None = None) -> Axes:
        """Critical-difference diagram at ``load`` (default the focus)."""
        comp = self._at(load)
        ranks, groups = comparison.cd_inputs(comp)
        omni = comp.at_focus(comp.omnibus)
        cd = omni.get_column("nemenyi_cd").item() if omni.height else None
        return sf.plot_cd_diagram(ranks, groups, palette=self.palette, cd=cd, ax=ax)

    def plot_pairwise(self, *, load: float | None = None, ax: Axes | None = None) -> Axes:
        """Rank-biserial effect sizes and Holm-adjusted p of every pair at ``load``."""
        comp = self._at(load)
        return sf.plot_pairwise_heatmap(
            comp.at_focus(comp.pairwise), comp.ranked(), alpha=comp.cfg.alpha, ax=ax
        )

    def plot_length(self, *, load: float | None = None, ax: Axes | None = None) -> Axes:
        """Per-jobset slowdown by job-length bucket at ``load`` (default the highest)."""
        c = self.computed
        return figures.plot_length_boxplot(
            c.per_length,
            palette=self.palette,
            buckets=c.buckets,
            load=load or self.focus_load,
            ax=ax,
        )

    def plot_slowdown_cdf(self, *, load: float | None = None, ax: Axes | None = None) -> Axes:
        """CDF of per-job slowdown at ``load`` (default the focus; descriptive)."""
        return figures.plot_slowdown_cdf(
            self.computed.results.table, palette=self.palette, load=load or self.focus_load, ax=ax
        )

    def schedules(self) -> sch.Schedules:
        """Per-job results with demands (:func:`~schedlab.evaluation.timeline.schedules`)."""
        return sch.schedules(self.computed.results, self.jobs)

    def representative_jobset(self, load: float | None = None) -> int:
        """The median jobset by the reference's primary metric at ``load`` (default focus)."""
        cfg = self.computed.comp.cfg
        return sch.representative_jobset(
            self.per_jobset,
            reference=self.reference,
            metric=cfg.primary,
            load=load or self.focus_load,
        )

    def _jobs_of(self, jobset: int | None, policies: Sequence[str]) -> list[pl.DataFrame]:
        k = self.representative_jobset() if jobset is None else jobset
        table = self.computed.results.table
        if self.jobs is not None or all(r in table.columns for r in self._resources()):
            table = self.schedules().jobs
        out = [table.filter((pl.col("jobset") == k) & (pl.col("policy") == p)) for p in policies]
        empty = [p for p, df in zip(policies, out, strict=True) if df.height == 0]
        if empty:
            msg = f"no results of policy {empty} on jobset {k}; policies: {self.policies}"
            raise ResultsError(msg)
        return out

    def _resources(self) -> list[str]:
        return list(self.computed.results.meta.get("jobset", {}).get("resources", []))

    def plot_gantt(
        self,
        *,
        jobset: int | None = None,
        policy: str | None = None,
        ax: Axes | None = None,
        **kwargs: Any,
    ) -> Axes:
        """Gantt chart of ``policy`` (default the reference) on ``jobset`` (default the
        representative one); ``kwargs`` go to :func:`~schedlab.reports.schedule.plot_gantt`."""
        (jobs,) = self._jobs_of(jobset, [policy or self.reference])
        kwargs.setdefault("buckets", self.computed.buckets)
        return schedule.plot_gantt(jobs, ax=ax, **kwargs)

    def plot_schedule_diff(
        self,
        *,
        jobset: int | None = None,
        policies: Sequence[str] | None = None,
        fig: Figure | None = None,
    ) -> Figure:
        """Two schedules of one jobset side by side (default: the reference and the best other
        policy at the focus, on the representative jobset), on ``fig`` (default a new one)."""
        pair = list(
            policies
            or [
                self.reference,
                *[p for p in self.computed.comp.ranked() if p != self.reference][:1],
            ]
        )
        if len(pair) != 2:
            msg = f"a schedule diff draws two policies, got {pair}"
            raise ValueError(msg)
        a, b = self._jobs_of(jobset, pair)
        fig = fig if fig is not None else plt.figure(figsize=(12, 5.5), layout="constrained")
        axes = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [1, 1, 0.45]})
        schedule.plot_schedule_diff(
            a, b, palette=self.palette, buckets=self.computed.buckets, axes=axes
        )
        return fig

    def timeline(self, *, jobset: int | None = None, load: float | None = None) -> pl.DataFrame:
        """Utilisation, queue and fragmentation over time: of ``jobset``, or averaged over the
        jobsets at ``load`` (default the focus) when ``jobset`` is None."""
        s = self.schedules()
        if jobset is not None:
            return tl.timeline(s.select(jobsets=[jobset]))
        at = load or self.focus_load
        return tl.mean_timeline(tl.timeline(s if at is None else s.select(load=at)))

    def plot_timeline(
        self,
        quantity: str = "queue",
        *,
        jobset: int | None = None,
        load: float | None = None,
        ax: Axes | None = None,
    ) -> Axes:
        """One quantity of :meth:`timeline` over time, one line per policy (``"queue"``,
        ``"running"``, ``"util_<resource>"``, ``"frag_<resource>"``, ``"fragmentation"``)."""
        data = self.timeline(jobset=jobset, load=load)
        clk = clock(self.computed.results.meta.get("jobset", {}), jobset)
        axis = TimeAxis(clk, float(data.get_column("time").max() or 1))  # type: ignore[arg-type]
        return plot_timeline(data, quantity=quantity, palette=self.palette, axis=axis, ax=ax)

    def write_report(self, out_dir: str | os.PathLike[str], **kwargs: Any) -> dict[str, Path]:
        """Write the full report (:func:`~schedlab.reports.render.write_report`) with the same
        settings; ``kwargs`` add figure options (``dpi``, ``style``, ``vector``, ``title``)."""
        cfg, c = self.computed.comp.cfg, self.computed
        return write_report(
            c.results,
            out_dir,
            reference=cfg.reference,
            settings=cfg,
            focus_load=self.focus_load,
            jobs=self.jobs,
            **kwargs,
        )

    def _repr_html_(self) -> str:
        comp = self.computed.comp
        parts = [
            f"<h3>Comparison of {len(self.policies)} policies, reference "
            f"{html.escape(self.reference)}</h3>",
            f"<p>{html.escape(comparison.headline(comp))}</p>",
        ]
        if self.ratios.height:
            parts.append(markup.html_table(overview_table(comp, self.ratios)))
        parts.append(markup.html_table(summary_table(comp, self.ratios)))
        return "\n".join(parts)


def compare(
    results: Results | str | os.PathLike[str],
    *,
    reference: str | None = None,
    workload: str | None = None,
    jobs: JobSet | str | os.PathLike[str] | None = None,
    settings: StatsSettings = DEFAULT_STATS,
    focus_load: float | None = None,
    **overrides: Any,
) -> ComparisonResult:
    """Compare the policies of ``results`` (paired by jobset), as a report does.

    Parameters
    ----------
    results
        Per-job results, a results Parquet file, or an experiment directory (then ``workload``
        picks the workload when it has several, and its jobsets give ``jobs``).
    reference
        Reference policy (default the first simulated).
    workload
        Workload of an experiment directory.
    jobs
        The JobSet (or its Parquet file) the results were simulated on, for the views over time.
    settings, focus_load
        As :func:`~schedlab.reports.render.write_report`.
    **overrides
        Fields of ``settings`` to replace, by name (``primary="completion"``, ``alpha=0.01``,
        ``n_resamples=500``, ``seed=1``...; see
        :class:`~schedlab.evaluation.settings.StatsSettings`). Results of a DAG workload are
        compared on job slowdown, then job completion time, unless metrics are given.

    Raises
    ------
    ResultsError
        If an experiment directory has several workloads and ``workload`` names none of them.
    """
    res, js = load_results(results, workload=workload, jobs=jobs)
    cfg = analysis_config(res, settings, reference=reference, **overrides)
    c = compute(res, cfg, focus_load=focus_load, jobs=js)
    return ComparisonResult(c, js)
