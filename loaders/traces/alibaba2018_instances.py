"""Cluster-trace-v2018 ``batch_instance.csv`` read for per-task statistics: the mean duration of
a task's Terminated instances and their mean measured usage (``cpu_avg``, ``mem_avg``).

Streamed in blocks (the full table has about 1.4 billion lines); a line that is not a usable
Terminated instance is skipped and counted by reason. Used by
:func:`~schedlab.loaders.traces.alibaba2018.read_alibaba2018`'s ``instances=``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.loaders.traces.alibaba2018_parse import job_key
from schedlab.loaders.traces.alibaba2018_scan import read_block
from schedlab.loaders.traces.textio import blocks

INSTANCE_FIELDS = (
    "instance_name",
    "task_name",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "machine_id",
    "seq_no",
    "total_seq_no",
    "cpu_avg",
    "cpu_max",
    "mem_avg",
    "mem_max",
)
"""The 14 columns of v2018 ``batch_instance.csv``."""


def _instance_reason(num: Sequence[str]) -> pl.Expr:
    c = pl.col
    nan = pl.any_horizontal((c(f"t_{f}") != "") & ~c(f).is_finite().fill_null(False) for f in num)
    times_ok = (c("end_time") >= c("start_time")).fill_null(False) & (c("start_time") > 0)
    return (
        pl.when(c("t_mem_max").is_null() | c("_extra").is_not_null())
        .then(pl.lit("wrong_field_count"))
        .when(nan)
        .then(pl.lit("not_a_number"))
        .when(c("t_status") != "Terminated")
        .then(pl.lit("not_terminated"))
        .when(~times_ok)
        .then(pl.lit("invalid_times"))
        .alias("reason")
    )


def read_instances(path: Path, source: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per task (job key, task name hash): mean duration (s) of its Terminated instances and
    mean measured ``cpu_avg`` (cores) and ``mem_avg``; plus counts of rows used and skipped."""
    c = pl.col
    n = len(INSTANCE_FIELDS)
    split = c("raw").str.split_exact(",", n)
    t = {f: c(f"t_{f}") for f in INSTANCE_FIELDS}
    num = ("start_time", "end_time", "cpu_avg", "mem_avg")
    parts: list[pl.DataFrame] = []
    skipped: dict[str, int] = {}
    read = 0
    for first, data, _ in blocks(path):
        lines = read_block(data)
        if first == 1 and lines.height and (lines["raw"][0] or "").startswith("instance_name,"):
            lines = lines.slice(1)
        frame = (
            lines.lazy()
            .filter(c("raw").fill_null("").str.strip_chars() != "")
            .with_columns(
                *(
                    split.struct.field(f"field_{i}").alias(f"t_{f}")
                    for i, f in enumerate(INSTANCE_FIELDS)
                ),
                split.struct.field(f"field_{n}").alias("_extra"),
            )
            .with_columns(t[f].cast(pl.Float64, strict=False).alias(f) for f in num)
            .with_columns(_instance_reason(num))
            .collect()
        )
        read += frame.height
        for reason, count in frame.group_by("reason").len().iter_rows():
            if reason is not None:
                skipped[reason] = skipped.get(reason, 0) + count
        parts.append(
            frame.filter(c("reason").is_null())
            .group_by(job_key(t["job_name"]).alias("job"), t["task_name"].hash().alias("thash"))
            .agg(
                pl.len().alias("n"),
                (c("end_time") - c("start_time")).sum().alias("dur"),
                c("cpu_avg").sum().alias("cpu"),
                c("cpu_avg").count().alias("n_cpu"),
                c("mem_avg").sum().alias("mem"),
                c("mem_avg").count().alias("n_mem"),
            )
        )
    stats = (
        pl.concat(parts)
        .group_by("job", "thash")
        .agg(pl.all().sum())
        .select(
            "job",
            "thash",
            (c("dur") / c("n")).alias("inst_duration_s"),
            (c("cpu") / c("n_cpu") / 100.0).alias("used_cpu"),
            (c("mem") / c("n_mem")).alias("used_mem"),
        )
    )
    used = read - sum(skipped.values())
    return stats, {"path": source, "rows_read": read, "rows_used": used, "skipped": skipped}
