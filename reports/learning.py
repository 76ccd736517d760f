"""Figures and report of learned policies: learning curves (seed 000 Figure 6) and the lengths of
withheld jobs (Figure 7a).

Axes-level functions in seaborn's style (``plot_*(..., ax=None) -> Axes``, no ``plt.show``);
:func:`write_training_report` writes the small report ``schedlab train`` leaves in its run
directory; :func:`withholding_section` gives the general report (``schedlab report``) a section
on the learned policies of a Results file.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.io import atomic_path, write_text_atomic

HEURISTIC_LABELS = {"sjf": "SJF", "packer": "Packer", "tetris": "Tetris*", "random": "Random"}


def plot_learning_curve(
    curve: pl.DataFrame, baselines: Mapping[str, float], *, ax: Axes | None = None
) -> Axes:
    """Validation slowdown per iteration (Figure 6a), with the heuristics as dashed lines.

    ``curve`` needs ``iteration``, ``val_slowdown`` (the policy as selected for ``best.pt``:
    sampled unless trained with ``eval_greedy``; nulls skipped) and ``train_slowdown``, and may
    hold ``val_greedy_slowdown``; ``baselines`` maps heuristic names to their slowdown on the
    same validation jobsets (``initial``, the untrained network, is skipped).
    """
    ax = ax or plt.gca()
    val = curve.filter(pl.col("val_slowdown").is_not_null())
    colors = sns.color_palette("colorblind", 10)
    ax.plot(curve["iteration"], curve["train_slowdown"], color=colors[0], alpha=0.35, lw=1,
            label="DeepRM (sampled, training jobsets)")  # fmt: skip
    ax.plot(val["iteration"], val["val_slowdown"], color=colors[0], marker="o", ms=2,
            label="DeepRM (validation jobsets)")  # fmt: skip
    if "val_greedy_slowdown" in val.columns:
        ax.plot(val["iteration"], val["val_greedy_slowdown"], color=colors[0], ls=":", lw=1,
                label="DeepRM, greedy (validation jobsets)")  # fmt: skip
    for i, (name, value) in enumerate(b for b in baselines.items() if b[0] != "initial"):
        ax.axhline(
            value, color=colors[i + 1], ls="--", lw=1.2, label=HEURISTIC_LABELS.get(name, name)
        )
    ax.set_xlabel("Training iteration")
    ax.set_ylabel("Average job slowdown")
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_rewards(curve: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Mean and maximum total reward of the training episodes per iteration (Figure 6b)."""
    ax = ax or plt.gca()
    colors = sns.color_palette("colorblind", 10)
    ax.plot(curve["iteration"], curve["max_reward"], color=colors[1], lw=1, label="max")
    ax.plot(curve["iteration"], curve["mean_reward"], color=colors[0], lw=1, label="mean")
    ax.set_xlabel("Training iteration")
    ax.set_ylabel("Total reward per episode")
    ax.legend(frameon=False)
    return ax


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


def plot_withheld_lengths(withheld: Mapping[Any, int], *, ax: Axes | None = None) -> Axes:
    """Fraction of withheld jobs by job length (seed 000 Figure 7a).

    A job is *withheld* at a time step when the policy lets time advance while the job sits in a
    visible slot and fits now for its whole duration.
    """
    ax = ax or plt.gca()
    df = withheld_frame(withheld)
    ax.bar(df["duration"], df["fraction"], color=sns.color_palette("colorblind", 1)[0])
    ax.set_xlabel("Job length (steps)")
    ax.set_ylabel("Fraction of withheld jobs")
    return ax


def _png(draw: Callable[[Axes], Axes], size: tuple[float, float] = (8, 4.5)) -> bytes:
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=size, layout="constrained")
        draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


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


def write_training_report(
    out_dir: str | Path,
    curve: pl.DataFrame,
    baselines: Mapping[str, float],
    withholding: Mapping[str, Any],
    config: Mapping[str, Any],
) -> dict[str, Path]:
    """``report.md`` and ``report.html`` (figures embedded) with PNGs beside them."""
    out = Path(out_dir)
    images = {
        "learning_curve.png": (_png(lambda ax: plot_learning_curve(curve, baselines, ax=ax)),
                               "Average slowdown per iteration vs the heuristics (Figure 6a)"),
        "rewards.png": (_png(lambda ax: plot_rewards(curve, ax=ax)),
                        "Mean and max total reward of the training episodes (Figure 6b)"),
        "withheld_lengths.png": (
            _png(lambda ax: plot_withheld_lengths(withholding.get("withheld_lengths", {}), ax=ax)),
            "Lengths of withheld jobs, best policy on the validation jobsets (Figure 7a)"),
    }  # fmt: skip
    val = curve.filter(pl.col("val_slowdown").is_not_null())
    best = val.sort("val_slowdown").row(0, named=True) if val.height else None
    rows = [(HEURISTIC_LABELS.get(k, k), f"{v:.3f}") for k, v in baselines.items()]
    if best is not None:
        rows.append((f"DeepRM best (iteration {best['iteration']})", f"{best['val_slowdown']:.3f}"))
    seconds = float(curve.select(pl.sum_horizontal("rollout_s", "update_s", "eval_s")).sum().item())
    parts: list[tuple[str, Any]] = [
        ("h1", f"DeepRM training: {config.get('workload')} at load {config.get('load')}"),
        ("p", f"{curve.height} iterations, {seconds:.0f} s of training "
              f"({seconds / max(curve.height, 1):.2f} s per iteration)."),
        ("table", (["policy (validation jobsets)", "average slowdown"], rows)),
        ("p", "'initial' is the untrained network. Validation jobsets come from a seed stream "
              "never used for training; compare policies on other held-out jobsets with "
              "`schedlab simulate` and `schedlab report`."),
    ]  # fmt: skip
    for name, (_, caption) in images.items():
        parts.append(("figure", (name, caption)))
        if name == "withheld_lengths.png":
            parts.append(("p", describe_withholding(withholding)))
    parts.append(("pre", json.dumps(dict(config), indent=1, default=str)))
    paths = {}
    for name, (png, _) in images.items():
        with atomic_path(out / name) as tmp:
            tmp.write_bytes(png)
        paths[Path(name).stem] = out / name
    write_text_atomic(out / "report.md", _markdown(parts))
    write_text_atomic(out / "report.html", _html(parts, {k: v[0] for k, v in images.items()}))
    return {**paths, "md": out / "report.md", "html": out / "report.html"}


def _markdown(parts: list[tuple[str, Any]]) -> str:
    lines = []
    for kind, body in parts:
        if kind == "h1":
            lines.append(f"# {body}\n")
        elif kind == "p":
            lines.append(f"{body}\n")
        elif kind == "pre":
            lines.append(f"```\n{body}\n```\n")
        elif kind == "figure":
            lines.append(f"![{body[1]}]({body[0]})\n\n*{body[1]}*\n")
        elif kind == "table":
            header, rows = body
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(r) + " |" for r in rows] + [""]
    return "\n".join(lines)


def _html(parts: list[tuple[str, Any]], images: dict[str, bytes]) -> str:
    body = []
    for kind, item in parts:
        if kind in ("h1", "p"):
            body.append(f"<{kind}>{html.escape(item)}</{kind}>")
        elif kind == "pre":
            body.append(f"<pre>{html.escape(item)}</pre>")
        elif kind == "figure":
            data = base64.b64encode(images[item[0]]).decode()
            body.append(f'<figure><img src="data:image/png;base64,{data}" alt="">'
                        f"<figcaption>{html.escape(item[1])}</figcaption></figure>")  # fmt: skip
        elif kind == "table":
            header, rows = item
            head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
            cells = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto}"
        "td,th{padding:.3em .6em;border:1px solid #ddd}table{border-collapse:collapse}"
        "img{max-width:100%}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>DeepRM training</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )


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


def agent_figures(results: Any) -> dict[str, tuple[bytes, str]]:
    """``withheld_lengths.png`` for the learned policies of ``results`` (none: empty)."""
    stats = results.meta.get("agent_stats", {})
    if not stats:
        return {}

    def draw(ax: Axes) -> Axes:
        frames = [withheld_frame(s.get("withheld_lengths", {})).with_columns(policy=pl.lit(p))
                  for p, s in stats.items()]  # fmt: skip
        df = pd.DataFrame(pl.concat(frames).to_dict(as_series=False))  # (no pyarrow)
        sns.barplot(df, x="duration", y="fraction", hue="policy", ax=ax)
        ax.set_xlabel("Job length (steps)")
        ax.set_ylabel("Fraction of withheld jobs")
        return ax

    caption = "Lengths of withheld jobs, all loads pooled (seed 000 Figure 7a)"
    return {"withheld_lengths.png": (_png(draw), caption)}


def agent_blocks(results: Any) -> list[tuple[str, Any]]:
    """Report blocks (:mod:`schedlab.reports.markup`) on withheld jobs; [] without agents."""
    from schedlab.reports.markup import Table

    table = withholding_table(results)
    if table.height == 0:
        return []
    body = [
        [r["policy"], "all" if r["load"] is None else f"{100 * r['load']:g}%",
         f"{r['time_steps']:,}", f"{100 * r['withholding_share']:.1f}%",
         f"{r['withheld_jobs']:,}", f"{100 * r['long_share']:.0f}%", f"{r['forced_jobs']:,}"]
        for r in table.iter_rows(named=True)
    ]  # fmt: skip
    header = ["policy", "load", "time steps", "withholding steps", "withheld jobs",
              "long (>= 10)", "time-limit jobs"]  # fmt: skip
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
        ("figure", ("withheld_lengths.png", agent_figures(results)["withheld_lengths.png"][1])),
    ]
