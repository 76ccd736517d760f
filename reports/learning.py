"""Figures and reports of training runs: learning curves (Mao et al. 2016, Figure 6), rewards,
and the lengths of withheld jobs (Figure 7a, :mod:`schedlab.reports.withholding`).

Axes-level functions in seaborn's style (``plot_*(..., ax=None) -> Axes``, no ``plt.show``), in
the policy colours of :func:`~schedlab.reports.palette.policy_palette`, so a heuristic has the
same colour here as in every other report. :func:`write_training_report` writes the small report
``schedlab train`` leaves in its run directory; :func:`learning_figures` draws the learning curve
of each training run an experiment's learned policies came from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl
from matplotlib import ticker
from matplotlib.axes import Axes

from schedlab.evaluation.metrics import SHORT_METRIC
from schedlab.policies.shipped import checkpoint_path
from schedlab.reports.content import Block, Table
from schedlab.reports.markup import write_bundle
from schedlab.reports.output import FigureOptions, Plot, figure, place_legend
from schedlab.reports.palette import LINESTYLES, policy_palette
from schedlab.reports.withholding import describe_withholding, plot_withheld_lengths

TRAINED = "deeprm"
"""Name of the trained policy in a training report (it takes DeepRM's colour)."""


def plot_learning_curve(
    curve: pl.DataFrame,
    baselines: Mapping[str, float],
    *,
    policy: str,
    palette: Mapping[str, Any],
    sampled: bool = True,
    metric: str = "slowdown",
    max_markers: int = 25,
    ax: Axes | None = None,
) -> Axes:
    """Training curve of a learned policy with the heuristics' values, in the report's colours.

    Parameters
    ----------
    curve
        ``curve.csv`` of a training run: ``iteration``, ``val_<metric>`` (the policy on the
        run's validation jobsets as selected for ``best.pt``; nulls skipped) and optionally
        ``train_<metric>`` (sampled, training jobsets) and ``val_greedy_<metric>`` (argmax:
        the most probable action; validation jobsets).
    baselines
        Heuristic name -> its average ``metric`` on the same validation jobsets (``initial``, the
        untrained network, is skipped). Each has its own colour and dash pattern, and its
        value in the legend, so equal values (SJF and Tetris*) stay visible.
    policy
        The learned policy's name in the report (its colour).
    palette
        Policy -> colour; heuristics not in it are drawn in grey.
    sampled
        Whether ``val_<metric>`` evaluates the sampled policy (training's default) or the argmax
        one (``eval_greedy``); sets its label.
    metric
        The run's objective, ``"slowdown"`` or ``"completion"`` (:func:`objective_metric`): the
        metric its validation selected ``best.pt`` on and its baselines were measured in.
    max_markers
        At most this many markers on each validation curve.
    ax
        Axes to draw on; the current Axes if None.
    """
    ax = ax if ax is not None else plt.gca()
    color = palette.get(policy, "black")
    if f"train_{metric}" in curve.columns:
        ax.plot(
            curve["iteration"],
            curve[f"train_{metric}"],
            color=color,
            alpha=0.3,
            lw=1,
            label=f"{policy} (sampled, training jobsets)",
        )
    val = curve.filter(pl.col(f"val_{metric}").is_not_null())
    every = max(1, math.ceil(val.height / max_markers))
    ax.plot(
        val["iteration"],
        val[f"val_{metric}"],
        color=color,
        marker="o",
        markevery=every,
        label=f"{policy} ({'sampled' if sampled else 'argmax'}, validation jobsets)",
    )
    greedy = f"val_greedy_{metric}" in val.columns and sampled
    if greedy and val.get_column(f"val_greedy_{metric}").drop_nulls().len():
        ax.plot(
            val["iteration"],
            val[f"val_greedy_{metric}"],
            color=color,
            lw=1,
            ls=":",
            marker="^",
            markevery=every,
            label=f"{policy} (argmax, validation jobsets)",
        )
    shown = {n: v for n, v in baselines.items() if n != "initial"}
    plot_baselines(shown, palette, lw=1.4, ax=ax)
    drawn = [*val.get_column(f"val_{metric}").to_list(), *shown.values()]
    if drawn and min(drawn) > 0 and max(drawn) > LOG_SPAN * min(drawn):
        ax.set_yscale("log")
        for axis_set in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis_set(ticker.LogFormatter(labelOnlyBase=False))  # 20, 300: not 2 × 10¹
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_xlabel("Training iteration")
    ax.set_ylabel(f"Average job {METRIC_WORDS.get(metric, metric)}")
    place_legend(ax)
    return ax


def plot_baselines(
    baselines: Mapping[str, float], palette: Mapping[str, Any], *, lw: float, ax: Axes
) -> None:
    """The heuristics' values as horizontal lines, lowest first: each in its colour (grey if
    ``palette`` has none) with its own dash pattern and its value in the legend, so that equal
    values (SJF and Tetris*) stay visible."""
    for k, (name, value) in enumerate(sorted(baselines.items(), key=lambda nv: nv[1])):
        ax.axhline(
            value,
            color=palette.get(name, "0.5"),
            lw=lw,
            label=f"{name} ({value:.2f})",
            ls=LINESTYLES[1:][k % (len(LINESTYLES) - 1)],
        )


LOG_SPAN = 20.0
"""A learning curve's y-axis is logarithmic where the validation values and the heuristics'
span more than this factor (an untrained network's, or FCFS under a strict queue, tens of times
the others', would flatten every curve on a linear axis)."""
METRIC_WORDS = {**SHORT_METRIC, "completion": "completion time (steps)"}
"""How the objectives' metrics read in labels (DeepRM's completion objective is in steps)."""


def objective_metric(config: Mapping[str, Any]) -> str:
    """The metric a training run validated on: its objective (``slowdown`` or ``completion``)
    from its config (a trainer's config, or ``config.json`` with a ``train_config``)."""
    train = config.get("train_config", config)
    return str(train.get("objective", "slowdown"))


def plot_rewards(curve: pl.DataFrame, *, color: Any = "black", ax: Axes | None = None) -> Axes:
    """Mean and maximum total reward of the training episodes per iteration (Figure 6b)."""
    ax = ax if ax is not None else plt.gca()
    ax.plot(curve["iteration"], curve["max_reward"], color=color, lw=1, ls="--", label="max")
    ax.plot(curve["iteration"], curve["mean_reward"], color=color, lw=1.2, label="mean")
    ax.set_xlabel("Training iteration")
    ax.set_ylabel("Total reward per episode")
    place_legend(ax, title=None)
    return ax


def best_row(curve: pl.DataFrame, column: str) -> dict[str, Any] | None:
    """The row of ``curve`` with the lowest non-null ``column``; ``None`` when every value is
    null."""
    val = curve.filter(pl.col(column).is_not_null())
    return val.sort(column).row(0, named=True) if val.height else None


def training_time(curve: pl.DataFrame, *, per_iteration: bool = False) -> str:
    """``"<n> iterations, <s> s of training"`` from a ``curve.csv``'s ``rollout_s``,
    ``update_s`` and ``eval_s`` (seconds per iteration), optionally followed by the mean time
    per iteration in brackets."""
    seconds = float(curve.select(pl.sum_horizontal("rollout_s", "update_s", "eval_s")).sum().item())
    text = f"{curve.height} iterations, {seconds:.0f} s of training"
    if per_iteration:
        text += f" ({seconds / max(curve.height, 1):.2f} s per iteration)"
    return text


def report_training(result: Any, config: Mapping[str, Any]) -> Path:
    """The learning report of a REINFORCE result (:class:`~schedlab.policies.training.TrainResult`)
    in its run directory, for ``schedlab train`` (``config``: the trainer's flat config); the
    HTML file's path."""
    withholding = result.details.get("withholding") or {}
    out = write_training_report(result.out_dir, result.curve, result.baselines, withholding, config)
    return out["html"]


def write_training_report(
    out_dir: str | Path,
    curve: pl.DataFrame,
    baselines: Mapping[str, float],
    withholding: Mapping[str, Any],
    config: Mapping[str, Any],
    *,
    options: FigureOptions | None = None,
) -> dict[str, Path]:
    """``report.md`` and ``report.html`` (figures embedded) with the figures beside them.

    ``config`` is the run's ``TrainConfig`` as a dict (its ``eval_greedy`` says whether the
    validation curve is the sampled or the argmax policy).
    """
    palette = policy_palette([TRAINED, *(b for b in baselines if b != "initial")])
    sampled = not config.get("eval_greedy", False)
    metric = objective_metric(config)
    words = METRIC_WORDS.get(metric, metric)
    images: dict[str, tuple[Plot, str]] = {
        "learning_curve.png": (
            figure(
                lambda ax: plot_learning_curve(
                    curve,
                    baselines,
                    policy=TRAINED,
                    palette=palette,
                    sampled=sampled,
                    metric=metric,
                    ax=ax,
                ),
                (9, 4.5),
                paper=(3.3, 3.6),
            ),
            f"Average {words} per iteration vs the heuristics (Figure 6a)",
        ),
        "rewards.png": (
            figure(lambda ax: plot_rewards(curve, color=palette[TRAINED], ax=ax), (8, 4)),
            "Mean and max total reward of the training episodes (Figure 6b)",
        ),
        "withheld_lengths.png": (
            figure(
                lambda ax: plot_withheld_lengths({TRAINED: withholding}, palette=palette, ax=ax),
                (8, 4),
            ),
            "Lengths of withheld jobs, best policy on the validation jobsets (Figure 7a)",
        ),
    }
    column = f"val_{metric}"
    best = best_row(curve, column)
    rows = [[k, f"{v:.3f}"] for k, v in baselines.items()]
    if best is not None:
        rows.append([f"{TRAINED} best (iteration {best['iteration']})", f"{best[column]:.3f}"])
    blocks: list[Block] = [
        ("h1", f"DeepRM training: {config.get('workload')} at load {config.get('load')}"),
        ("p", f"{training_time(curve, per_iteration=True)}."),
        ("table", Table(["policy (validation jobsets)", f"average {words}"], rows)),
        (
            "p",
            "'initial' is the untrained network. Validation jobsets come from a seed stream "
            "never used for training; compare policies on other held-out jobsets with "
            "`schedlab simulate` and `schedlab report`.",
        ),
    ]
    for name, (_, caption) in images.items():
        blocks.append(("figure", (name, caption)))
        if name == "withheld_lengths.png":
            blocks.append(("p", describe_withholding(withholding)))
    blocks.append(("pre", json.dumps(dict(config), indent=1, default=str, ensure_ascii=False)))
    return write_bundle(
        Path(out_dir),
        stem="report",
        title="DeepRM training",
        blocks=blocks,
        tables={},
        images=images,
        options=options,
    )


def per_queue(curve: pl.DataFrame, metric: str, queue: str) -> pl.DataFrame:
    """The curve of a run validated under several disciplines with ``val_<metric>`` (their
    mean) replaced by ``queue``'s column ``val_<metric>_<queue>``."""
    column = f"val_{metric}_{queue}"
    keep = ["iteration", column, *([f"train_{metric}"] if f"train_{metric}" in curve else [])]
    return curve.select(keep).rename({column: f"val_{metric}"})


def queue_baselines(folder: str | Path) -> dict[str, dict[str, float]]:
    """Discipline -> heuristic -> its validation value, of a run validated under several
    disciplines (``baselines_by_queue.json``); empty for any other run."""
    path = Path(folder) / "baselines_by_queue.json"
    return json.loads(path.read_text()) if path.is_file() else {}


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


def learning_runs(policies: Iterable[Any], workload: str) -> dict[str, tuple[str, str | None]]:
    """Learned policy name -> its training-run folder and discipline (:func:`spec_queue`), for
    the policies of an experiment spec (``PolicySpec``: ``name``, ``spec``, ``workloads``)
    that run on ``workload`` and have a training run: what :func:`learning_figures` draws."""
    return {
        p.name: (str(f), spec_queue(p.spec, f))
        for p in policies
        if (not p.workloads or workload in p.workloads) and (f := training_run(p.spec))
    }


def spec_queue(spec: str, folder: str | Path) -> str | None:
    """The discipline a policy spec runs under, where its training run validated under several
    (``baselines_by_queue.json``): ``jobscore+easy:...`` or ``queue=easy`` -> ``easy``, none
    named -> ``greedy`` (the learned policies' default). Read off the spec's words, so a report
    needs neither the policy's class nor torch; None for any other run."""
    by_queue = queue_baselines(folder)
    head, _, rest = spec.partition(":")
    words = [
        *head.split("+")[1:],
        *(v for k, _, v in (kv.partition("=") for kv in rest.split(",")) if k.strip() == "queue"),
    ]
    named = [w.strip().lower() for w in words if w.strip().lower() in by_queue]
    return named[0] if named else ("greedy" if "greedy" in by_queue else None)


def training_curve(
    folder: str | Path, queue: str | None = None
) -> tuple[pl.DataFrame, dict[str, float], bool, str] | None:
    """``curve.csv``, ``baselines.json``, whether validation sampled the policy and the metric
    it validated (:func:`objective_metric`), of a training-run folder; None without a usable
    ``curve.csv``. Where the run was validated under several disciplines and ``queue`` is one
    of them, the curve and the baselines are that discipline's (:func:`per_queue`), not their
    mean."""
    path = Path(folder)
    if not (path / "curve.csv").is_file():
        return None
    curve = pl.read_csv(path / "curve.csv")
    base_path, config_path = path / "baselines.json", path / "config.json"
    base = json.loads(base_path.read_text()) if base_path.is_file() else {}
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    metric = objective_metric(config)
    by_queue = queue_baselines(path)
    if queue in by_queue and f"val_{metric}_{queue}" in curve.columns:
        curve, base = per_queue(curve, metric, queue), by_queue[queue]
    if not {"iteration", f"val_{metric}"} <= set(curve.columns):
        return None
    train = config.get("train_config", config)
    return curve, base, not bool(train.get("eval_greedy", False)), metric


def _run_name(folder: str | Path) -> str:
    """How a caption names a training run: a shipped checkpoint by its name, else its folder
    (not this machine's path to the installed package)."""
    path = Path(folder)
    shipped = path.parent.name == "checkpoints" and path.parent.parent.name == "policies"
    return f"the shipped checkpoint {path.name}" if shipped else f"training run {folder}"


def learning_figures(
    learning: Mapping[str, tuple[str, str | None]], palette: Mapping[str, Any]
) -> dict[str, tuple[Plot, str]]:
    """One learning-curve figure per learned policy (name -> its training-run folder and its
    queue discipline: a run validated under several shows that one's curve, and a heuristic
    the report ran under it, ``sjf+easy``, keeps its colour)."""
    out: dict[str, tuple[Plot, str]] = {}
    for k, (policy, (folder, queue)) in enumerate(learning.items()):
        got = training_curve(folder, queue)
        if got is None:
            continue
        curve, raw, sampled, metric = got
        base = {f"{h}+{queue}" if f"{h}+{queue}" in palette else h: v for h, v in raw.items()}
        draw = lambda ax, c=curve, b=base, p=policy, s=sampled, m=metric: plot_learning_curve(  # noqa: E731
            c, b, policy=p, palette=palette, sampled=s, metric=m, ax=ax
        )
        mode = "sampled" if sampled else "argmax"
        out[f"learning_{k}.png"] = (
            figure(draw, (9, 4.5), paper=(3.3, 3.6)),
            f"Learning curve of {policy} ({_run_name(folder)}): average job "
            f"{METRIC_WORDS.get(metric, metric)} per "
            f"training iteration on the run's own validation jobsets ({mode} policy; faint: "
            "sampled on the training jobsets), heuristics as horizontal lines"
            + (f", both under {queue}." if queue in queue_baselines(folder) else "."),
        )
    return out
