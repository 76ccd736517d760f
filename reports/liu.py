"""Reports of Liu et al.'s multi-cluster experiments (ICPP'20): learning curve (Figure 6),
per-episode comparison (Figures 7–9) and Tables 3–6 with the paper's numbers beside ours.

Axes-level functions in seaborn's style; the writers produce Markdown + CSV + PNG.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import matplotlib.pyplot as plt
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes

from schedlab.evaluation.multicluster import LIU_METRICS, paper_rows
from schedlab.io import atomic_path, write_text_atomic

LABELS = {"tmdl": "TMDL (L)", "ajer": "AJER (L)", "s_log": "S_log (H)"}


def plot_learning_curve(
    curve: pl.DataFrame, baselines: Mapping[str, Mapping[str, float]], *, ax: Axes | None = None
) -> Axes:
    """Validation S_log per training episode (Figure 6), baselines as dashed lines."""
    ax = ax or plt.gca()
    colors = sns.color_palette("colorblind", 10)
    ax.plot(
        curve["episode"],
        curve["train_s_log"],
        color=colors[0],
        alpha=0.3,
        lw=1,
        label="ε-greedy (training episodes)",
    )
    val = curve.filter(pl.col("val_s_log").is_not_null())
    ax.plot(
        val["episode"],
        val["val_s_log"],
        color=colors[0],
        marker="o",
        ms=3,
        label="greedy (validation episodes)",
    )
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
        data = df.select("episode", metric, "policy").to_pandas()
        sns.lineplot(data, x="episode", y=metric, hue="policy", ax=ax, marker=".")
        ax.set_ylabel(LABELS[metric])
        ax.set_xlabel(f"test episode (sorted by {reference}'s S_log)")
    return axes


def table_markdown(summary: pl.DataFrame, paper_tables: tuple[str, ...] = ()) -> str:
    """Markdown of one condition's :func:`~schedlab.evaluation.multicluster.summary` rows (mean
    [95% CI], F/S/N), each policy followed by its rows in the paper's ``paper_tables``."""
    paper = [
        (t, {r["policy"]: r for r in paper_rows(t).iter_rows(named=True)}) for t in paper_tables
    ]
    lines = ["| policy | TMDL (L) | AJER (L) | S_log (H) | F/S/N |", "|---|---|---|---|---|"]
    for r in summary.iter_rows(named=True):
        cells = [f"{r[m]:.2f} [{r[f'{m}_low']:.2f}, {r[f'{m}_high']:.2f}]" for m in LIU_METRICS]
        fsn = "-" if r["F"] is None else f"{r['F']}/{r['S']}/{r['N']}"
        lines.append(f"| {r['policy']} (ours) | {' | '.join(cells)} | {fsn} |")
        for table, rows in paper:
            if (p := rows.get(r["policy"])) is not None:
                lines.append(
                    f"| {r['policy']} (paper, {table.split()[0]}) | {p['tmdl']:.2f} | "
                    f"{p['ajer']:.2f} | {p['s_log']:.2f} | {p['fsn'] or '-'} |"
                )
    return "\n".join(lines)


def write_experiment_report(
    experiment: str | Path, out: str | Path, *, reference: str | None = None, seed: int = 0
) -> Path:
    """Liu's tables and per-episode figures of an experiment directory: ``liu_report.md``,
    ``liu_summary.csv``, ``liu_per_episode.csv`` and ``episodes_<workload>.png`` in ``out``.

    ``reference`` defaults to the spec's; the paper's numbers are shown for the workloads of
    :data:`~schedlab.evaluation.multicluster.PAPER_BY_WORKLOAD`.
    """
    from schedlab.evaluation.collect import read_experiment
    from schedlab.evaluation.multicluster import PAPER_BY_WORKLOAD, per_episode, summary
    from schedlab.evaluation.settings import StatsSettings

    exp = read_experiment(experiment)
    reference = reference or exp.spec.reference
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    per_ep = pl.concat([per_episode(r) for r in exp.results.values()], how="vertical_relaxed")
    summ = summary(per_ep, reference, settings=StatsSettings(seed=seed))
    for name, frame in (("liu_per_episode.csv", per_ep), ("liu_summary.csv", summ)):
        with atomic_path(out / name) as tmp:
            frame.write_csv(tmp)
    lines = [
        f"# {exp.spec.report.title or exp.spec.name}",
        "",
        f"Mean over episodes [95% percentile-bootstrap CI]; F/S/N against {reference}; "
        "the paper's means (Liu et al., ICPP'20) below ours.",
        "",
    ]
    for workload in per_ep.get_column("workload").unique(maintain_order=True).to_list():
        part = per_ep.filter(pl.col("workload") == workload)
        rows = summ.filter(pl.col("workload") == workload)
        lines += [
            f"## {workload} (offered load {rows['load'][0]:.3f}, "
            f"{cast('int', rows['n_episodes'].max())} episodes)",
            "",
            table_markdown(rows, PAPER_BY_WORKLOAD.get(workload, ())),
            "",
            f"![episodes](episodes_{workload}.png)",
            "",
        ]
        if reference in part.get_column("policy").to_list():
            axes = plot_episodes(part, reference)
            fig = axes[0].figure
            fig.tight_layout()
            with atomic_path(out / f"episodes_{workload}.png") as tmp:
                fig.savefig(tmp, format="png", dpi=110)
            plt.close(fig)
    write_text_atomic(out / "liu_report.md", "\n".join(lines))
    return out / "liu_report.md"


def report_training(result: Any, config: Mapping[str, Any]) -> Path:
    """The learning report (Figure 6) of a Liu training result
    (:class:`~schedlab.policies.training.TrainResult`) in its run directory, for
    ``schedlab train liu``; ``report.md``'s path. ``config`` is unused: the run's saved spec is
    read from its ``config.json``."""
    spec = json.loads((result.out_dir / "config.json").read_text())
    baselines = json.loads((result.out_dir / "baselines.json").read_text())
    return write_training_report(result.out_dir, result.curve, baselines, spec)


def write_training_report(
    out: Path, curve: pl.DataFrame, baselines: Mapping[str, Any], spec: Mapping[str, Any]
) -> Path:
    """``learning_curve.png`` and ``report.md`` of a training run directory; the latter's path."""
    fig, ax = plt.subplots(figsize=(7, 4))
    plot_learning_curve(curve, baselines, ax=ax)
    fig.tight_layout()
    with atomic_path(out / "learning_curve.png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    val = curve.filter(pl.col("val_s_log").is_not_null())
    best = val.sort("val_s_log", descending=True).head(1).to_dicts()
    lines = [
        f"# Liu value learning: {spec['label']} ({spec['network']})",
        "",
        "Validation (greedy, held-out episodes), mean TMDL / AJER / S_log:",
        "",
        "| policy | TMDL | AJER | S_log |",
        "|---|---|---|---|",
        *(
            f"| {k} | {v['tmdl']:.2f} | {v['ajer']:.2f} | {v['s_log']:.2f} |"
            for k, v in baselines.items()
        ),
    ]
    if best:
        b = best[0]
        lines.append(
            f"| {spec['label']} (best, episode {b['episode']}) | {b['val_tmdl']:.2f} | "
            f"{b['val_ajer']:.2f} | {b['val_s_log']:.2f} |"
        )
    lines += [
        "",
        "![learning curve](learning_curve.png)",
        "",
        "```json",
        json.dumps(spec["train_config"], indent=2),
        "```",
        "",
    ]
    write_text_atomic(out / "report.md", "\n".join(lines))
    return out / "report.md"
