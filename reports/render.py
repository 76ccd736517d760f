"""Render a report of per-job results: HTML (self-contained) and Markdown, CSV tables, PNGs.

:func:`write_report` computes the tidy tables with :mod:`schedlab.evaluation`, draws the figures
of :mod:`schedlab.reports.figures` and writes every file atomically. The HTML and the Markdown
hold the same content, built once as a list of blocks; the HTML embeds the figures as base64 PNG
and needs no other file, the Markdown links the PNG files written beside it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import schedlab
from schedlab.evaluation.metrics import length_buckets, per_jobset, per_length, policy_order
from schedlab.evaluation.stats import CI_METHOD, summarize
from schedlab.io import atomic_path, write_text_atomic
from schedlab.reports import figures
from schedlab.results import Results

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1, h2 { font-weight: 600; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; }
figcaption { color: #555; font-size: .9em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
.note { background: #eef4fb; border-left: 4px solid #4a7ebb; padding: .6em 1em; }
"""


@dataclass
class Table:
    """A rendered table: header cells, body rows (strings) and the cells to set in bold."""

    header: list[str]
    rows: list[list[str]]
    bold: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) indices of the body cells to set in bold."""
    left: int = 1
    """The first ``left`` columns are left-aligned (labels); the others right-aligned."""


Block = tuple[str, Any]
"""``("h1" | "h2" | "p" | "note" | "pre", str)``, ``("table", Table)`` or
``("figure", (file name, caption))``."""


def _fmt_ci(mean: float, low: float, high: float) -> str:
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def ci_table(summary: pl.DataFrame, column: str, labels: Callable[[Any], str]) -> Table:
    """Rows = policy, columns = values of ``column``, cell = ``"mean [low, high]"``.

    In each column the lowest mean, as displayed (2 decimals), is marked bold, ties included,
    unless every policy ties. ``summary`` must hold one metric only.
    """
    policies = list(dict.fromkeys(summary.get_column("policy").to_list()))
    values = summary.get_column(column).unique().sort(nulls_last=True).to_list()
    cells = {
        (r["policy"], r[column]): (_fmt_ci(r["mean"], r["ci_low"], r["ci_high"]), r["mean"])
        for r in summary.iter_rows(named=True)
    }
    rows = [[p] + [cells.get((p, v), ("–", 0.0))[0] for v in values] for p in policies]
    bold = set()
    for j, v in enumerate(values, start=1):
        shown = {i: round(cells[(p, v)][1], 2) for i, p in enumerate(policies) if (p, v) in cells}
        best = min(shown.values(), default=None)
        if len(set(shown.values())) > 1:
            bold |= {(i, j) for i, m in shown.items() if m == best}
    return Table(["policy"] + [labels(v) for v in values], rows, bold)


HTML_TEXT = {
    "h1": "<h1>{}</h1>",
    "h2": "<h2>{}</h2>",
    "p": "<p>{}</p>",
    "note": "<p class='note'>{}</p>",
    "pre": "<pre>{}</pre>",
}
MD_TEXT = {"h1": "# {}", "h2": "## {}", "p": "{}", "note": "> {}", "pre": "```\n{}\n```"}


def _to_html(blocks: Sequence[Block], title: str, images: dict[str, bytes]) -> str:
    out = [
        f"<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>"
    ]
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            data = base64.b64encode(images[name]).decode("ascii")
            out.append(
                f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(caption)}'>"
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
        elif kind == "table":
            out.append(_html_table(content))
        else:
            out.append(HTML_TEXT[kind].format(html.escape(content)))
    out.append("</body>\n</html>\n")
    return "\n".join(out)


def _html_table(t: Table) -> str:
    def cell(tag: str, text: str, j: int, strong: bool = False) -> str:
        body = f"<strong>{html.escape(text)}</strong>" if strong else html.escape(text)
        style = " style='text-align:left'" if 0 < j < t.left else ""
        return f"<{tag}{style}>{body}</{tag}>"

    head = "".join(cell("th", h, j) for j, h in enumerate(t.header))
    body = "\n".join(
        "<tr>" + "".join(cell("td", c, j, (i, j) in t.bold) for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(t.rows)
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _to_markdown(blocks: Sequence[Block]) -> str:
    out = []
    for kind, content in blocks:
        if kind == "figure":
            name, caption = content
            out.append(f"![{caption}]({name})\n\n*{caption}*")
        elif kind == "table":
            out.append(_md_table(content))
        else:
            out.append(MD_TEXT[kind].format(content))
    return "\n\n".join(out) + "\n"


def _md_table(t: Table) -> str:
    def cell(text: str, strong: bool) -> str:
        text = text.replace("|", "\\|")
        return f"**{text}**" if strong else text

    lines = ["| " + " | ".join(cell(h, False) for h in t.header) + " |"]
    lines.append("|" + "|".join([":---"] * t.left + ["---:"] * (len(t.header) - t.left)) + "|")
    lines += [
        "| " + " | ".join(cell(c, (i, j) in t.bold) for j, c in enumerate(row)) + " |"
        for i, row in enumerate(t.rows)
    ]
    return "\n".join(lines)


def _png(draw: Callable[[Axes], Axes], size: tuple[float, float]) -> bytes:
    """Draw on a fresh Figure (no pyplot, so no global state or GUI backend) and return PNG."""
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=size, layout="constrained")
        draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _highest_load(df: pl.DataFrame) -> float | None:
    top = df.get_column("load").max() if df.height else None
    return None if top is None else float(top)  # type: ignore[arg-type]


def _at(df: pl.DataFrame, load: float | None) -> pl.DataFrame:
    return df if load is None else df.filter(pl.col("load").is_close(load))


def _dump(obj: dict[str, Any]) -> str:
    """One ``key: value`` line per top-level key, values as compact JSON."""
    return "\n".join(f"{k}: {json.dumps(v, default=str)}" for k, v in obj.items())


def _load_label(load: float | None) -> str:
    return "load not recorded" if load is None else figures.format_load(load)


def _load_range(c: _Computed) -> str:
    """`` at 10 offered loads (10%–190%)`` or an empty string when no load is recorded."""
    loads = c.per_jobset.get_column("load").drop_nulls().unique().sort()
    if loads.len() == 0:
        return ""
    lo, hi = figures.format_load(loads.first()), figures.format_load(loads.last())
    return f" at {loads.len()} offered loads ({lo}–{hi})" if loads.len() > 1 else f" at {lo}"


def _counts_table(pj: pl.DataFrame) -> tuple[Table, bool]:
    """Jobsets and jobs per load (per policy); True if all policies saw the same jobsets."""
    per = pj.group_by("policy", "load").agg(
        pl.struct("seed", "jobset").n_unique().alias("n_jobsets"), pl.col("n_jobs").sum()
    )
    same = per.select("load", "n_jobsets", "n_jobs").unique().height == per["load"].n_unique()
    rows = (
        per.group_by("load")
        .agg(pl.col("n_jobsets").max(), pl.col("n_jobs").max())
        .sort("load", nulls_last=True)
    )
    body = [[_load_label(ld), str(n), str(j)] for ld, n, j in rows.iter_rows()]
    return Table(["offered load", "jobsets", "jobs per policy"], body), same


@dataclass
class _Computed:
    """Everything the report shows, computed once."""

    results: Results
    per_jobset: pl.DataFrame
    per_length: pl.DataFrame
    summary: pl.DataFrame
    length_summary: pl.DataFrame
    buckets: dict[str, tuple[int, int]]
    top: float | None
    seed: int
    confidence: float
    n_resamples: int


def _compute(results: Results, seed: int, confidence: float, n_resamples: int) -> _Computed:
    pj, pln = per_jobset(results), per_length(results)
    top = _highest_load(pj)
    kw = {"seed": seed, "confidence": confidence, "n_resamples": n_resamples}
    return _Computed(
        results=results,
        per_jobset=pj,
        per_length=pln,
        summary=summarize(pj, metrics=("slowdown", "completion"), by=("policy", "load"), **kw),
        length_summary=summarize(
            _at(pln, top), metrics=("slowdown",), by=("policy", "load", "bucket"), **kw
        ),
        buckets=length_buckets(results),
        top=top,
        seed=seed,
        confidence=confidence,
        n_resamples=n_resamples,
    )


def _figures(c: _Computed, palette: dict[str, Any]) -> dict[str, tuple[bytes, str]]:
    """PNG bytes and caption per file name; the load sweep only when loads are recorded."""
    at = "at the highest offered load" if c.top is not None else "over all jobsets"
    out: dict[str, tuple[bytes, str]] = {}
    if c.top is not None:
        png = _png(
            lambda ax: figures.plot_load_sweep(
                c.summary, palette=palette, confidence=c.confidence, ax=ax
            ),
            (9, 5),
        )
        band = f"bands: {100 * c.confidence:g}% CI"
        out["load_sweep.png"] = (png, f"Average slowdown vs offered load ({band})")
    if c.per_length.height:
        png = _png(
            lambda ax: figures.plot_length_boxplot(
                c.per_length, palette=palette, buckets=c.buckets, ax=ax
            ),
            (9, 5),
        )
        out["length_boxplot.png"] = (png, f"Per-jobset average slowdown by job length {at}")
    png = _png(
        lambda ax: figures.plot_slowdown_cdf(c.results.table, palette=palette, ax=ax), (9, 5)
    )
    out["slowdown_cdf.png"] = (png, f"CDF of per-job slowdown {at}")
    return out


def _blocks(c: _Computed, title: str, images: dict[str, tuple[bytes, str]]) -> list[Block]:
    meta = c.results.meta
    jobset_meta = meta.get("jobset", {})
    provenance = jobset_meta.get("provenance", {})
    conf = f"{100 * c.confidence:g}%"
    where = f"at offered load {figures.format_load(c.top)}" if c.top is not None else "overall"
    n_jobsets = c.per_jobset.select(pl.struct("load", "seed", "jobset").n_unique()).item()
    blocks: list[Block] = [
        ("h1", title),
        (
            "p",
            f"{len(policy_order(c.results))} policies on {n_jobsets} jobsets{_load_range(c)}; "
            f"workload: {provenance.get('generator', provenance.get('path', 'unknown'))}.",
        ),
        (
            "note",
            f"Statistics are over jobsets: each jobset contributes one value, the average "
            f"over its jobs, and means, medians and confidence intervals are taken over those "
            f"per-jobset values, never over pooled jobs. CI = percentile bootstrap {conf} over "
            f"jobsets ({c.n_resamples} resamples, seed {c.seed}). Slowdown = (finish − "
            f"arrival) / duration, >= 1; times are in simulation steps.",
        ),
    ]
    metric_tables = (
        ("slowdown", "Average job slowdown"),
        ("completion", "Average job completion time (steps)"),
    )
    for k, (metric, heading) in enumerate(metric_tables):
        blocks.append(("h2", heading))
        if k == 0 and "load_sweep.png" in images:
            blocks.append(("figure", ("load_sweep.png", images["load_sweep.png"][1])))
        rows = c.summary.filter(pl.col("metric") == metric)
        blocks.append(("table", ci_table(rows, "load", _load_label)))
        blocks.append(
            (
                "p",
                f"Rows: policy; columns: offered load. Cell: mean over jobsets of the "
                f"per-jobset average [{conf} CI]; bold: lowest mean in the column.",
            )
        )
    source = (
        "from the workload metadata"
        if meta.get("length_buckets")
        else "duration terciles, as the workload defines no length buckets"
    )
    label = {b: figures.bucket_label(b, r) for b, r in c.buckets.items()}
    blocks += [
        ("h2", f"Slowdown by job length {where}"),
        (
            "p",
            f"Length buckets ({source}): {', '.join(label.values()) or 'none'}. Jobs in no bucket "
            "are left out of this breakdown only; a jobset counts in a bucket if it has a job "
            "there.",
        ),
    ]
    if c.length_summary.height:
        blocks.append(("table", ci_table(c.length_summary, "bucket", label.__getitem__)))
    if "length_boxplot.png" in images:
        blocks.append(("figure", ("length_boxplot.png", images["length_boxplot.png"][1])))
    blocks += [
        ("h2", "Distribution of per-job slowdown"),
        ("figure", ("slowdown_cdf.png", images["slowdown_cdf.png"][1])),
        ("p", "Descriptive only: this curve pools the jobs of every jobset at that load."),
    ]
    return blocks + _meta_blocks(c)


def _meta_blocks(c: _Computed) -> list[Block]:
    meta = c.results.meta
    jobset_meta = dict(meta.get("jobset", {}))
    provenance = jobset_meta.pop("provenance", {})
    counts, same = _counts_table(c.per_jobset)
    params = [
        [p, json.dumps(meta.get("policies", {}).get(p, {}), default=str)]
        for p in policy_order(c.results)
    ]
    blocks: list[Block] = [
        ("h2", "Run metadata"),
        ("table", Table(["policy", "parameters"], params, left=2)),
        ("table", counts),
    ]
    if not same:
        blocks.append(
            (
                "note",
                "Policies were not run on the same jobsets at every load; "
                "paired comparisons need the same jobsets.",
            )
        )
    empty = len(jobset_meta.get("empty_jobsets", ()))
    if empty:
        blocks.append(("p", f"{empty} generated jobsets had no job and are in no statistic."))
    workload = {
        k: jobset_meta.get(k)
        for k in ("resources", "capacity", "units", "time_step_seconds", "arrival_window")
    }
    stats = {
        "interval": CI_METHOD,
        "confidence": c.confidence,
        "n_resamples": c.n_resamples,
        "seed": c.seed,
        "schedlab": schedlab.__version__,
    }
    return [
        *blocks,
        ("p", "Workload provenance:"),
        ("pre", _dump(provenance)),
        ("p", "Workload and cluster:"),
        ("pre", _dump({**workload, **meta.get("config", {})})),
        ("p", "Statistics:"),
        ("pre", _dump(stats)),
        (
            "p",
            "Tables beside this report: summary.csv, per_jobset.csv, per_length.csv, "
            "length_summary.csv.",
        ),
    ]


def write_report(
    results: Results,
    out_dir: str | os.PathLike[str],
    *,
    title: str = "schedlab report",
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> dict[str, Path]:
    """Write the report of ``results`` into ``out_dir``, every file atomically.

    Files: ``report.html`` (self-contained: figures as base64 PNG, inline CSS), ``report.md``
    (same content, linking the PNGs beside it), ``summary.csv`` (one row per policy × load ×
    metric), ``per_jobset.csv``, ``per_length.csv``, ``length_summary.csv`` (per-length summary at
    the highest load), ``length_boxplot.png``, ``slowdown_cdf.png`` and, when the results record
    an offered load, ``load_sweep.png``.

    Parameters
    ----------
    results
        Per-job results.
    out_dir
        Output folder, created if missing; existing files of the same names are replaced.
    title
        Report title.
    seed
        Seed of the bootstrap confidence intervals.
    confidence
        Confidence level of the intervals.
    n_resamples
        Bootstrap resamples per group and metric.

    Returns
    -------
    dict
        Path of every file written, keyed ``"html"``, ``"md"`` and, for the others, by file
        name without extension (``"summary"``, ``"load_sweep"``, ...).
    """
    out = Path(out_dir)
    c = _compute(results, seed, confidence, n_resamples)
    palette = figures.policy_palette(policy_order(results))
    images = _figures(c, palette)
    blocks = _blocks(c, title, images)
    paths: dict[str, Path] = {}
    tables = {
        "summary.csv": c.summary,
        "per_jobset.csv": c.per_jobset,
        "per_length.csv": c.per_length,
        "length_summary.csv": c.length_summary,
    }
    for name, df in tables.items():
        with atomic_path(out / name) as tmp:
            df.write_csv(tmp)
        paths[Path(name).stem] = out / name
    for name, (png, _) in images.items():
        with atomic_path(out / name) as tmp:
            tmp.write_bytes(png)
        paths[Path(name).stem] = out / name
    write_text_atomic(out / "report.md", _to_markdown(blocks))
    paths["md"] = out / "report.md"
    html_text = _to_html(blocks, title, {k: v[0] for k, v in images.items()})
    write_text_atomic(out / "report.html", html_text)
    paths["html"] = out / "report.html"
    return paths
