"""Why a cluster-trace-v2018 ``batch_task`` line is dropped: reason codes in priority order, and
their messages (:mod:`schedlab.loaders.traces.alibaba2018` lists the reasons).

:func:`line_codes` gives each scanned line (:mod:`~schedlab.loaders.traces.alibaba2018_scan`)
its reason code, the first that applies (:data:`GOOD`: kept); :func:`dropped_rows` turns the
dropped lines into the drop report's rows (line, reason, message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from schedlab.loaders.traces import alibaba2018_scan as sc
from schedlab.loaders.traces.alibaba2018_scan import FIELDS, STATUSES

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then

NUMERIC = ("instance_num", "start_time", "end_time", "plan_cpu", "plan_mem")
REQUIRED = ("task_name", "job_name", "status", "start_time", "end_time", "plan_cpu", "plan_mem")
(
    GOOD,
    BLANK,
    FIELD_COUNT,
    NOT_A_NUMBER,
    INVALID_STATUS,
    STATUS,
    MISSING,
    NO_END,
    NEGATIVE_DURATION,
    NEVER_STARTED,
    NEGATIVE_DEMAND,
    INVALID_INSTANCES,
) = range(12)
REASONS = {
    FIELD_COUNT: "wrong_field_count",
    NOT_A_NUMBER: "not_a_number",
    INVALID_STATUS: "invalid_status",
    MISSING: "missing_value",
    NO_END: "no_end_time",
    NEGATIVE_DURATION: "negative_duration",
    NEVER_STARTED: "never_started",
    NEGATIVE_DEMAND: "negative_demand",
    INVALID_INSTANCES: "invalid_instance_num",
}


def _nan(f: str) -> pl.Expr:
    """A numeric field whose text is not a finite number (text path only)."""
    return (pl.col(f"t_{f}").fill_null("") != "") & ~pl.col(f).is_finite().fill_null(False)


def line_codes(selected: Sequence[int], text: bool) -> pl.Expr:
    """The reason code of each line (0: good), first applicable in priority order."""
    c = pl.col
    flags, status = c("flags"), c("status")
    missing = pl.any_horizontal(
        (flags & (sc.NAME_EMPTY | sc.JOB_EMPTY)) != 0,
        status == sc.EMPTY_STATUS,
        *(c(f).is_null() for f in ("start_time", "end_time", "plan_cpu", "plan_mem")),
    )
    start, end, inst = c("start_time"), c("end_time"), c("instance_num")
    nan = pl.any_horizontal(_nan(f) for f in NUMERIC) if text else pl.lit(False)
    checks = [
        (c("nf") == 0, BLANK),
        (c("nf") != len(FIELDS), FIELD_COUNT),
        (nan, NOT_A_NUMBER),
        (status == sc.UNKNOWN_STATUS, INVALID_STATUS),
        ((status < sc.UNKNOWN_STATUS) & ~status.is_in(list(selected)), STATUS),
        (missing, MISSING),
        ((end < start) & (end == 0), NO_END),
        (end < start, NEGATIVE_DURATION),
        ((start == 0) & (end == 0), NEVER_STARTED),
        ((c("plan_cpu") < 0) | (c("plan_mem") < 0), NEGATIVE_DEMAND),
        (inst.is_not_null() & ((inst < 1) | (inst != inst.floor())), INVALID_INSTANCES),
    ]
    (bad, code), *rest = checks
    expr: Then | ChainedThen = pl.when(bad.fill_null(False)).then(code)
    for bad, code in rest:
        expr = expr.when(bad.fill_null(False)).then(code)
    return expr.otherwise(GOOD).cast(pl.UInt8)


def _message(statuses: Sequence[str]) -> pl.Expr:
    """Why a dropped line was dropped (on dropped lines, with ``t_<numeric>`` text columns)."""
    c = pl.col
    code, flags = c("code"), c("flags")
    first_nan = pl.coalesce(
        pl.when(_nan(f)).then(pl.format(f"{f} is not a number: {{}}", c(f"t_{f}"))) for f in NUMERIC
    )
    first_empty = pl.coalesce(
        pl.when((flags & sc.NAME_EMPTY) != 0).then(pl.lit("task_name is empty")),
        pl.when((flags & sc.JOB_EMPTY) != 0).then(pl.lit("job_name is empty")),
        pl.when(c("status") == sc.EMPTY_STATUS).then(pl.lit("status is empty")),
        *(pl.when(c(f).is_null()).then(pl.lit(f"{f} is empty")) for f in REQUIRED[3:]),
    )
    times = pl.format("end_time={} is before start_time={}", "t_end_time", "t_start_time")
    name = c("status").replace_strict(list(range(len(STATUSES))), list(STATUSES), default="?")
    return (
        pl.when(code == FIELD_COUNT)
        .then(pl.format("expected 9 comma-separated fields, found {}", "nf"))
        .when(code == NOT_A_NUMBER)
        .then(first_nan)
        .when(code == INVALID_STATUS)
        .then(pl.lit(f"status is not a v2018 task status {list(STATUSES)}"))
        .when(code == STATUS)
        .then(pl.format(f"status={{}} is not among the selected statuses {list(statuses)}", name))
        .when(code == MISSING)
        .then(first_empty)
        .when(code == NO_END)
        .then(
            pl.concat_str(
                pl.lit("end_time=0: the task had not ended when the trace ended; "), times
            )
        )
        .when(code == NEGATIVE_DURATION)
        .then(times)
        .when(code == NEVER_STARTED)
        .then(pl.lit("start_time=end_time=0: the task never started"))
        .when(code == NEGATIVE_DEMAND)
        .then(pl.format("plan_cpu={} and plan_mem={} must be >= 0", "t_plan_cpu", "t_plan_mem"))
        .when(code == INVALID_INSTANCES)
        .then(pl.format("instance_num={} is not a positive integer", "t_instance_num"))
    )


def dropped_rows(frame: pl.DataFrame, statuses: Sequence[str]) -> pl.DataFrame:
    """The dropped lines of a parsed block (not good, not blank): ``line``, ``reason``,
    ``message``, and the ``job`` and ``idx`` of lines whose names parsed (null otherwise)."""
    c = pl.col
    bad = frame.filter((c("code") != GOOD) & (c("code") != BLANK))
    if "t_start_time" not in bad.columns:
        bad = bad.with_columns(c(f).cast(pl.Utf8).alias(f"t_{f}") for f in NUMERIC)
    name = c("status").replace_strict(list(range(len(STATUSES))), list(STATUSES), default="?")
    reason: Then | ChainedThen = pl.when(c("code") == STATUS).then(pl.format("status_{}", name))
    for code, label in REASONS.items():
        reason = reason.when(c("code") == code).then(pl.lit(label))
    named = (c("code") != FIELD_COUNT) & (c("job") != -1)
    return bad.select(
        "line",
        reason.alias("reason"),
        _message(statuses).alias("message"),
        pl.when(named).then(c("job")).alias("job"),
        pl.when(named).then(c("idx")).alias("idx"),
    )
