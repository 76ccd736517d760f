"""Withheld jobs of learned policies: how often a policy let time pass while a visible job fitted
now, and the lengths of those jobs (Mao et al. 2016, Figure 7a).

:func:`withheld_frame` and :func:`plot_withheld_lengths` draw the lengths;
:func:`describe_withholding` says it in one sentence (training reports,
:mod:`schedlab.reports.learning`); :func:`withholding_table`, :func:`agent_figures` and
:func:`agent_blocks` give the general report (``schedlab report``) its section on the learned
policies of a Results file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import polars as pl
from matplotlib import ticker
from matplotlib.axes import Axes

from schedlab.reports.content import Block, Table
from schedlab.reports.output import Plot, figure, place_legend
from schedlab.reports.palette import policy_palette


def withheld_frame(withheld: Mapping[Any, int]) -> pl.DataFrame:
    """Withheld-job counts by duration as a table: ``duration``, ``count``, ``fraction``."""
    items = sorted((int(k), int(v)) for k, v in withheld.items())
    total = sum(v for _, v in items) or 1
    return pl.DataFrame(
        {
            "duration": [k for k, _ in items],
            "count": [v for _, v in items],
            "fraction": [v / total for _, v in items],
        },
        schema={"duration": pl.Int64, "count": pl.Int64, "fraction": pl.Float64},
    )


def plot_withheld_lengths(
    stats: Mapping[str, Mapping[str, Any]],
    *,
    palette: Mapping[str, Any],
    ax: Axes | None = None,
) -> Axes:
    """Fraction of withheld jobs by job length, one bar per learned policy (DeepRM's Fig. 7a).

    A job is *withheld* at a time step when the policy lets time advance while the job sits in a
    visible slot and fits now for its whole duration.

    Parameters
    ----------
    stats
        Policy -> its run statistics (``withheld_lengths``: duration -> count).
    palette
        Policy -> colour.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    frames = {p: withheld_frame(s.get("withheld_lengths", {})) for p, s in stats.items()}
    width = 0.8 / max(len(frames), 1)
    for k, (policy, df) in enumerate(frames.items()):
        x = df.get_column("duration").to_numpy() + (k - (len(frames) - 1) / 2) * width
        ax.bar(
            x,
            df.get_column("fraction").to_numpy(),
            width=width,
            color=palette.get(policy, "0.5"),
            label=policy,
        )
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_xlabel("Job length (steps)")
    ax.set_ylabel("Fraction of withheld jobs")
    if len(frames) > 1:
        place_legend(ax)
    return ax


def describe_withholding(stats: Mapping[str, Any]) -> str:
    """One sentence: how often the policy withheld a fitting job, and which lengths."""
    steps, held = int(stats.get("time_steps", 0)), int(stats.get("withholding_steps", 0))
    df = withheld_frame(stats.get("withheld_lengths", {}))
    long = float(df.filter(pl.col("duration") >= 10)["fraction"].sum()) if df.height else 0.0
    share = held / steps if steps else 0.0
    forced = int(stats.get("forced_jobs", 0))
    text = (
        f"The policy left a fitting job waiting in {held} of {steps} time steps "
        f"({100 * share:.1f}%); {100 * long:.0f}% of the withheld jobs were long (≥ 10 steps)."
    )
    return text + (f" {forced} jobs were placed by the time-limit fallback." if forced else "")


# -- the general report's section on learned policies (hooked into reports/render.py) ----------
def withholding_table(results: Any) -> pl.DataFrame:
    """One row per learned policy (and offered load, when recorded): ``time_steps``,
    ``withholding_steps``, ``withholding_share`` (fraction of time steps that left a fitting
    job waiting), ``withheld_jobs``, ``long_share`` (fraction of withheld jobs lasting >= 10
    steps) and ``forced_jobs``, from ``results.meta["agent_stats"]``."""
    rows = []
    for policy, stats in results.meta.get("agent_stats", {}).items():
        groups = stats.get("by_load") or {"": stats}
        for load, st in groups.items():
            df = withheld_frame(st.get("withheld_lengths", {}))
            steps = int(st["time_steps"])
            rows.append(
                {
                    "policy": policy,
                    "load": float(load) if load else None,
                    "time_steps": steps,
                    "withholding_steps": int(st["withholding_steps"]),
                    "withholding_share": st["withholding_steps"] / steps if steps else 0.0,
                    "withheld_jobs": int(df["count"].sum()),
                    "long_share": float(df.filter(pl.col("duration") >= 10)["fraction"].sum()),
                    "forced_jobs": int(st["forced_jobs"]),
                }
            )
    schema = {"policy": pl.String, "load": pl.Float64}
    return pl.DataFrame(rows, schema_overrides=schema) if rows else pl.DataFrame(schema=schema)


def agent_figures(
    results: Any, palette: Mapping[str, Any] | None = None
) -> dict[str, tuple[Plot, str]]:
    """``withheld_lengths.png`` for the learned policies of ``results`` (none: empty), in the
    colours of ``palette`` (default :func:`~schedlab.reports.palette.policy_palette` of them)."""
    stats = results.meta.get("agent_stats", {})
    if not stats:
        return {}
    pal = palette or policy_palette(list(stats))
    caption = "Lengths of withheld jobs, all loads pooled (Mao et al. 2016, Figure 7a)"
    plot = figure(lambda ax: plot_withheld_lengths(stats, palette=pal, ax=ax), (8, 4))
    return {"withheld_lengths.png": (plot, caption)}


def agent_blocks(results: Any) -> list[Block]:
    """Report blocks (:mod:`schedlab.reports.markup`) on withheld jobs; [] without agents."""
    table = withholding_table(results)
    if table.height == 0:
        return []
    body = [
        [
            r["policy"],
            "all" if r["load"] is None else f"{100 * r['load']:g}%",
            f"{r['time_steps']:,}",
            f"{100 * r['withholding_share']:.1f}%",
            f"{r['withheld_jobs']:,}",
            f"{100 * r['long_share']:.0f}%",
            f"{r['forced_jobs']:,}",
        ]
        for r in table.iter_rows(named=True)
    ]
    header = [
        "policy",
        "load",
        "time steps",
        "withholding steps",
        "withheld jobs",
        "long (>= 10)",
        "time-limit jobs",
    ]
    return [
        ("h2", "Learned policies: withheld jobs"),
        (
            "p",
            "Unlike the work-conserving heuristics, a learned policy may let time advance while "
            "a visible job fits now. Withholding steps: share of its time steps where it did; "
            "withheld jobs: one count per job and such step. Time-limit jobs were placed by the "
            "FCFS fallback after the episode's time limit (they are in every statistic above).",
        ),
        ("table", Table(header, body, left=2)),
        (
            "figure",
            (
                "withheld_lengths.png",
                "Lengths of withheld jobs, all loads pooled (Mao et al. 2016, Figure 7a)",
            ),
        ),
    ]
