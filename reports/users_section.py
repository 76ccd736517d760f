"""The users section of a report: fairness between users and the worst-served users, at the
focus condition (:mod:`schedlab.evaluation.users`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from schedlab.evaluation import users as us
from schedlab.reports import stats_figures as sf
from schedlab.reports.comparison_data import Comparison
from schedlab.reports.content import Block, Table
from schedlab.reports.output import Plot, figure
from schedlab.reports.tables import num


def at_focus(comp: Comparison, users: pl.DataFrame | None) -> pl.DataFrame | None:
    """``users`` (:func:`~schedlab.evaluation.users.per_user`) at the focus condition, waits in
    the comparison's time unit."""
    if users is None:
        return None
    return comp.at_focus(users).with_columns(pl.col("wait") / comp.time_factor)


def fairness_table(comp: Comparison, fair: pl.DataFrame) -> Table:
    """Per policy (the comparison's order): users, Jain's index, mean and worst user."""
    rows = {r["policy"]: r for r in fair.iter_rows(named=True)}
    body = [
        [
            p,
            f"{rows[p]['n_users']:,}",
            f"{rows[p]['jain']:.3f}",
            num(rows[p]["mean_user_bsld"]),
            num(rows[p]["mean_user_wait"]),
            "–"
            if rows[p]["worst_user"] is None
            else f"{num(rows[p]['worst_bsld'])} (user {rows[p]['worst_user']})",
        ]
        for p in comp.order
        if p in rows
    ]
    header = [
        "policy",
        "users",
        "Jain's index (1 = even)",
        "mean user bsld",
        f"mean user wait ({comp.time_unit})",
        f"worst user bsld (≥ {us.MIN_JOBS} jobs)",
    ]
    return Table(header, body)


def worst_table(comp: Comparison, worst: pl.DataFrame, others: list[str]) -> Table:
    """The worst-served users under the reference, and their lot under ``others``."""
    ref = comp.cfg.reference
    pols = [ref, *others]
    body = [
        [
            str(r["user"]),
            f"{r['n_jobs']:,}",
            *(num(r[f"bsld {p}"]) for p in pols),
            *(num(r[f"wait {p}"]) for p in pols),
        ]
        for r in worst.iter_rows(named=True)
    ]
    unit = comp.time_unit
    header = [
        "user",
        "jobs",
        *(f"bsld, {p}" for p in pols),
        *(f"wait ({unit}), {p}" for p in pols),
    ]
    return Table(header, body)


def figures(
    comp: Comparison, users: pl.DataFrame | None, palette: Mapping[str, Any]
) -> dict[str, tuple[Plot, str]]:
    """Each user's mean bounded slowdown under each policy (a dot per user)."""
    rows = at_focus(comp, users)
    if rows is None or rows.height == 0:
        return {}
    rows = rows.drop_nulls("user")
    order = [p for p in comp.order if p in set(rows.get_column("policy").to_list())]
    plot = figure(
        lambda ax: sf.plot_jobset_values(
            rows,
            metric="bounded_slowdown",
            order=order,
            palette=palette,
            per="user",
            ax=ax,
            title=f"Mean bounded slowdown of each user {comp.where()}",
        ),
        (9, 4.5),
    )
    caption = (
        f"Each user's mean bounded slowdown ({comp.tau}) under each policy {comp.where()}: one "
        "dot per user, boxes give the quartiles over users."
    )
    return {"users.png": (plot, caption)}


def blocks(
    comp: Comparison, users: pl.DataFrame | None, images: Mapping[str, tuple[Plot, str]]
) -> list[Block]:
    """The section: fairness per policy, the worst-served users, the figure; or why none."""
    out: list[Block] = [("h2", f"Users {comp.where()}")]
    rows = at_focus(comp, users)
    if rows is None:
        return [
            *out,
            (
                "note",
                "The jobs of this workload carry no user ids (the JobSet has no user column, "
                "as synthetic workloads and some traces do not), so there is nothing to say "
                "about users.",
            ),
        ]
    fair = us.fairness(rows)
    ranked = [p for p in comp.ranked() if p != comp.cfg.reference][:1]
    worst = us.worst_served(rows, comp.cfg.reference, ranked)
    out += [
        ("table", fairness_table(comp, fair)),
        (
            "p",
            "Per policy: the users with jobs here, Jain's fairness index over the users' mean "
            "bounded slowdowns ((Σx)² / (n Σx²): 1 when every user's jobs are slowed alike, "
            "1/n when one user bears it all: evenness, not how much), the mean over users of "
            f"their mean bounded slowdown and wait, and the worst-served user among those "
            f"with at least {us.MIN_JOBS} jobs. Jobs without a user id are left out.",
        ),
    ]
    if "users.png" in images:
        out.append(("figure", ("users.png", images["users.png"][1])))
    if worst.height:
        out += [
            ("h3", f"The worst-served users under {comp.cfg.reference}"),
            ("table", worst_table(comp, worst, ranked)),
            (
                "p",
                f"The {worst.height} users with the highest mean bounded slowdown under "
                f"{comp.cfg.reference} (at least {us.MIN_JOBS} jobs each), and how "
                + (f"{ranked[0]}, the best other policy, treats them." if ranked else "they fare."),
            ),
        ]
    return out
