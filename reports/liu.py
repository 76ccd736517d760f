"""Reports of Liu et al.'s multi-cluster experiments (seed 003): learning curve (Figure 6),
per-episode comparison (Figures 7–9) and Tables 3–6 with the paper's numbers beside ours.

Axes-level functions in seaborn's style; the writers produce Markdown + CSV + PNG.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from schedlab.evaluation.multicluster import LIU_METRICS, paper_rows  # noqa: E402
from schedlab.io import atomic_path, write_text_atomic  # noqa: E402

LABELS = {"tmdl": "TMDL (L)", "ajer": "AJER (L)", "s_log": "S_log (H)"}


def plot_learning_curve(
    curve: pl.DataFrame, baselines: Mapping[str, Mapping[str, float]], *, ax: Axes | None = None
) -> Axes:
    """Validation S_log per training episode (Figure 6), baselines as dashed lines."""
    ax = ax or plt.gca()
    colors = sns.color_palette("colorblind", 10)
    ax.plot(curve["episode"], curve["train_s_log"], color=colors[0], alpha=0.3, lw=1,
            label="ε-greedy (training episodes)")  # fmt: skip
    val = curve.filter(pl.col("val_s_log").is_not_null())
    ax.plot(val["episode"], val["val_s_log"], color=colors[0], marker="o", ms=3,
            label="greedy (validation episodes)")  # fmt: skip
    for i, (name, m) in enumerate((k, v) for k, v in baselines.items() if k != "initial"):
        ax.axhline(m["s_log"], color=colors[i + 1], ls="--", lw=1.2, label=name)
    ax.set_xlabel("Training episode")
    ax.set_ylabel("Mean S_log (higher is better)")
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_episodes(per_ep: pl.DataFrame, reference: str, *, axes: Any = None) -> Any:
    """TMDL, AJER and S_log per episode, episodes sorted by the reference's S_log (descending),
    one line per policy (Figures 7–9); ``per_ep`` holds one condition."""
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    order = (
        per_ep.filter(pl.col("policy") == reference)
        .sort("s_log", descending=True)
        .get_column("jobset")
        .to_list()
    )
    rank = {j: i for i, j in enumerate(order)}
    df = per_ep.filter(pl.col("jobset").is_in(order)).with_columns(
        pl.col("jobset").replace_strict(rank, return_dtype=pl.Int64).alias("episode")
    )
    for ax, metric in zip(axes, LIU_METRICS, strict=True):
        sns.lineplot(df.to_pandas(), x="episode", y=metric, hue="policy", ax=ax, marker=".")
        ax.set_ylabel(LABELS[metric])
        ax.set_xlabel(f"test episode (sorted by {reference}'s S_log)")
    return axes


def table_markdown(summary: pl.DataFrame, paper_table: str | None = None) -> str:
    """Markdown of one condition's :func:`~schedlab.evaluation.multicluster.summary` rows (mean
    [95% CI], F/S/N), with the paper's row under each of its policies where it has one."""
    paper = {} if paper_table is None else {r["policy"]: r for r in paper_rows(paper_table).iter_rows(named=True)}  # noqa: E501
    lines = ["| policy | TMDL (L) | AJER (L) | S_log (H) | F/S/N |", "|---|---|---|---|---|"]
    for r in summary.iter_rows(named=True):
        cells = [f"{r[m]:.2f} [{r[f'{m}_low']:.2f}, {r[f'{m}_high']:.2f}]" for m in LIU_METRICS]
        fsn = "-" if r["F"] is None else f"{r['F']}/{r['S']}/{r['N']}"
        lines.append(f"| {r['policy']} (ours) | {' | '.join(cells)} | {fsn} |")
        if (p := paper.get(r["policy"])) is not None:
            lines.append(
                f"| {r['policy']} (paper) | {p['tmdl']:.2f} | {p['ajer']:.2f} | "
                f"{p['s_log']:.2f} | {p['fsn'] or '-'} |"
            )
    return "\n".join(lines)


def write_training_report(
    out: Path, curve: pl.DataFrame, baselines: Mapping[str, Any], spec: Mapping[str, Any]
) -> None:
    """``learning_curve.png`` and ``report.md`` of a training run directory."""
    fig, ax = plt.subplots(figsize=(7, 4))
    plot_learning_curve(curve, baselines, ax=ax)
    fig.tight_layout()
    with atomic_path(out / "learning_curve.png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    val = curve.filter(pl.col("val_s_log").is_not_null())
    best = val.sort("val_s_log", descending=True).head(1).to_dicts()
    lines = [
        f"# Liu value learning: {spec['label']} ({spec['network']})", "",
        "Validation (greedy, held-out episodes), mean TMDL / AJER / S_log:", "",
        "| policy | TMDL | AJER | S_log |", "|---|---|---|---|",
        *(f"| {k} | {v['tmdl']:.2f} | {v['ajer']:.2f} | {v['s_log']:.2f} |"
          for k, v in baselines.items()),
    ]  # fmt: skip
    if best:
        b = best[0]
        lines.append(
            f"| {spec['label']} (best, episode {b['episode']}) | {b['val_tmdl']:.2f} | "
            f"{b['val_ajer']:.2f} | {b['val_s_log']:.2f} |"
        )
    lines += ["", "![learning curve](learning_curve.png)", "", "```json",
              json.dumps(spec["train_config"], indent=2), "```", ""]  # fmt: skip
    write_text_atomic(out / "report.md", "\n".join(lines))
