"""Parsing cluster-trace-v2018 ``batch_task`` / ``batch_instance`` lines into typed columns.

Each block of lines (:func:`~schedlab.loaders.traces.alibaba2018_scan.blocks`) goes through the
compiled :func:`~schedlab.loaders.traces.alibaba2018_scan.scan`, then columnar polars checks give
each line its reason code (0: good) and message; the good lines are reduced to compact typed
columns (no text is kept per line) and their parents to a CSR table. See
:mod:`schedlab.loaders.traces.alibaba2018` for the reason codes.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from schedlab.loaders.traces import alibaba2018_scan as sc
from schedlab.loaders.traces.alibaba2018_scan import FIELDS, STATUSES, read_block
from schedlab.loaders.traces.textio import blocks, split_lines

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then

NUMERIC = ("instance_num", "start_time", "end_time", "plan_cpu", "plan_mem")
REQUIRED = ("task_name", "job_name", "status", "start_time", "end_time", "plan_cpu", "plan_mem")
(GOOD, BLANK, FIELD_COUNT, NOT_A_NUMBER, INVALID_STATUS, STATUS, MISSING, NO_END,
 NEGATIVE_DURATION, NEVER_STARTED, NEGATIVE_DEMAND, INVALID_INSTANCES) = range(12)  # fmt: skip
REASONS = {
    FIELD_COUNT: "wrong_field_count", NOT_A_NUMBER: "not_a_number",
    INVALID_STATUS: "invalid_status", MISSING: "missing_value", NO_END: "no_end_time",
    NEGATIVE_DURATION: "negative_duration", NEVER_STARTED: "never_started",
    NEGATIVE_DEMAND: "negative_demand", INVALID_INSTANCES: "invalid_instance_num",
}  # fmt: skip
ROW_FIXES = (
    "stg_suffix_stripped",
    "truncated_task_name",
    "truncated_parent_dropped",
    "unrecognized_task_name",
    "integer_written_as_float",
    "missing_instance_num_as_1",
)
"""Row-level normalisations, counted over the good rows."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """The good rows (compact columns), the dropped rows and the parsed parent lists."""

    good: pl.DataFrame
    """line, job (int64 key), idx (int32, -1: no DAG index), arrival_s, duration_s, inst, cpu
    (cores), mem; optional thash (task name hash), source_id."""
    dropped: pl.DataFrame
    """line, reason, message (the raw text of sampled lines is read back at the end)."""
    nodes: pl.DataFrame
    """job and idx of dropped rows whose names parsed (they exist, so are no missing parent)."""
    lengths: np.ndarray
    parents: np.ndarray
    fix_counts: dict[str, int]
    blank_lines: int

    def fixes(self) -> dict[str, int]:
        """Row-level fixes with a non-zero count."""
        return {k: v for k, v in self.fix_counts.items() if v}


def _nan(f: str) -> pl.Expr:
    """A numeric field whose text is not a finite number (text path only)."""
    return (pl.col(f"t_{f}").fill_null("") != "") & ~pl.col(f).is_finite().fill_null(False)


def _code(selected: Sequence[int], text: bool) -> pl.Expr:
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
        .when(code == NOT_A_NUMBER).then(first_nan)
        .when(code == INVALID_STATUS)
        .then(pl.lit(f"status is not a v2018 task status {list(STATUSES)}"))
        .when(code == STATUS)
        .then(pl.format(f"status={{}} is not among the selected statuses {list(statuses)}", name))
        .when(code == MISSING).then(first_empty)
        .when(code == NO_END)
        .then(pl.concat_str(pl.lit("end_time=0: the task had not ended when the trace ended; "),
                            times))
        .when(code == NEGATIVE_DURATION).then(times)
        .when(code == NEVER_STARTED)
        .then(pl.lit("start_time=end_time=0: the task never started"))
        .when(code == NEGATIVE_DEMAND)
        .then(pl.format("plan_cpu={} and plan_mem={} must be >= 0", "t_plan_cpu", "t_plan_mem"))
        .when(code == INVALID_INSTANCES)
        .then(pl.format("instance_num={} is not a positive integer", "t_instance_num"))
    )  # fmt: skip


STATUS_TABLE = sc.status_table(STATUSES)


def _read_text(data: bytes | memoryview, columns: Sequence[int]) -> pl.DataFrame:
    """Some comma-separated fields of every line of the block as text, named by
    :data:`FIELDS` (null when empty or missing; polars, for the rare slow paths)."""
    fields = split_lines(data).str.split(",")
    parts = {FIELDS[c]: fields.list.get(c, null_on_oob=True) for c in columns}
    return pl.DataFrame(parts).with_columns(
        pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in parts
    )


def _parse_block(
    data: bytes | memoryview,
    first: int,
    n_lines: int,
    selected: Sequence[int],
    hashes: bool,
    source_ids: bool,
) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """The block's lines as typed columns (see :func:`sc.scan`), their parents (CSR)."""
    nf, flags, idx, job, status, numbers, n_par, flat = sc.scan(
        np.frombuffer(data, dtype=np.uint8), n_lines, *STATUS_TABLE
    )
    frame = pl.DataFrame(
        {"line": np.arange(first, first + n_lines, dtype=np.int64), "nf": nf, "flags": flags,
         "idx": idx, "job": job, "status": status,
         **{f: numbers[k] for k, f in enumerate(NUMERIC)}},
    ).with_columns(pl.col(NUMERIC).fill_nan(None))  # fmt: skip
    text = bool((flags & sc.SLOW).any())
    if text:  # exponents, nan, spaces...: polars parses the numbers of this block
        strings = _read_text(data, [FIELDS.index(f) for f in NUMERIC])
        frame = frame.with_columns(
            *(strings.get_column(f).alias(f"t_{f}") for f in NUMERIC),
            *(strings.get_column(f).cast(pl.Float64, strict=False) for f in NUMERIC),
        )
    other = bool((flags & sc.JOB_OTHER).any())
    if other or hashes or source_ids:
        names = _read_text(data, [0, 2])
        key = names.select(_job_key(pl.col("job_name"))).to_series()
        frame = frame.with_columns(
            pl.when((pl.col("flags") & sc.JOB_OTHER) != 0).then(key).otherwise("job").alias("job")
        )
        if hashes:
            frame = frame.with_columns(names.get_column("task_name").hash().alias("thash"))
        if source_ids:
            frame = frame.with_columns(
                names.select(pl.format("{}/{}", "job_name", "task_name")).to_series()
                .alias("source_id")
            )  # fmt: skip
    c = pl.col
    integral = pl.all_horizontal(
        c(f).is_null() | (c(f) == c(f).floor()) for f in NUMERIC if f != "plan_mem"
    )
    frame = frame.with_columns(
        _code(selected, text).alias("code"),
        c("instance_num").is_null().alias("missing_inst"),
        (((c("flags") & sc.DOTS) != 0) & integral).alias("as_float"),
    )
    return frame, n_par, flat


def _good(frame: pl.DataFrame) -> pl.DataFrame:
    c = pl.col
    keep = [x for x in ("thash", "source_id") if x in frame.columns]
    return frame.filter(c("code") == GOOD).select(
        "line", "job", "idx", "flags", c("start_time").alias("arrival_s"),
        (c("end_time") - c("start_time")).alias("duration_s"),
        c("instance_num").fill_null(1.0).alias("inst"), (c("plan_cpu") / 100.0).alias("cpu"),
        c("plan_mem").alias("mem"), "missing_inst", "as_float", *keep,
    )  # fmt: skip


def _dropped(frame: pl.DataFrame, statuses: Sequence[str]) -> pl.DataFrame:
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


def _fix_counts(good: pl.DataFrame) -> np.ndarray:
    """Rows per fix of :data:`ROW_FIXES`, in its order."""
    flags = pl.col("flags")
    return (
        good.select(
            *(
                ((flags & bit) != 0).sum().alias(str(bit))
                for bit in (sc.STG, sc.TRUNCATED, sc.CUT, sc.UNKNOWN)
            ),
            pl.col("as_float").sum(),
            pl.col("missing_inst").sum(),
        )
        .to_numpy()
        .ravel()
        .astype(np.int64)
    )


def _job_key(name: pl.Expr) -> pl.Expr:
    """As the scanner: ``j_<n>`` -> n, any other name -> a negative 64-bit hash of it."""
    standard = name.str.contains(r"^j_\d{1,18}$")
    other = -(name.hash() // 2).cast(pl.Int64) - 1
    return pl.when(standard).then(name.str.slice(2).cast(pl.Int64, strict=False)).otherwise(other)


@dataclass(frozen=True, slots=True)
class _Block:
    good: pl.DataFrame
    dropped: pl.DataFrame
    lengths: np.ndarray
    parents: np.ndarray
    fix: np.ndarray
    blank: int


def _block(
    first: int,
    data: memoryview,
    n_lines: int,
    *,
    header: bool,
    statuses: Sequence[str],
    hashes: bool,
    source_ids: bool,
) -> _Block | None:
    if header and first == 1:
        cut = bytes(data[: 1 << 16]).find(b"\n") + 1  # sniff() saw the header's end
        data, first, n_lines = data[cut:], 2, n_lines - 1
        if not data:
            return None
    selected = [STATUSES.index(s) for s in statuses]
    frame, n_par, flat = _parse_block(data, first, n_lines, selected, hashes, source_ids)
    del data
    code = frame.get_column("code").to_numpy()
    keep = code == GOOD
    good = _good(frame)
    return _Block(
        good=good.drop("flags", "missing_inst", "as_float"),
        dropped=_dropped(frame, statuses),
        lengths=n_par[keep].astype(np.int64),
        parents=flat[np.repeat(keep, n_par)],
        fix=_fix_counts(good),
        blank=int((code == BLANK).sum()),
    )


def parse_tasks(
    path: Path,
    *,
    header: bool,
    statuses: Sequence[str],
    hashes: bool = False,
    source_ids: bool = True,
) -> Parsed:
    """Parse every line of a v2018 ``batch_task.csv`` (see :class:`Parsed`).

    Blocks are parsed two at a time (the compiled scanner and polars release the GIL), at most
    three in flight, and collected in file order.
    """
    parse = functools.partial(
        _block, header=header, statuses=statuses, hashes=hashes, source_ids=source_ids
    )
    done: list[_Block] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: deque[Future[_Block | None]] = deque()
        for item in blocks(path, ring=4):  # <= 2 blocks pending when the next one is read
            pending.append(pool.submit(parse, *item))
            if len(pending) > 2:
                done += filter(None, [pending.popleft().result()])
        while pending:
            done += filter(None, [pending.popleft().result()])
    dropped = pl.concat([b.dropped for b in done], how="vertical")
    nodes = dropped.filter(pl.col("job").is_not_null()).select("job", "idx")
    return Parsed(
        good=pl.concat([b.good for b in done], how="vertical", rechunk=False),
        dropped=dropped.drop("job", "idx"),
        nodes=nodes,
        lengths=np.concatenate([b.lengths for b in done]) if done else np.empty(0, np.int64),
        parents=np.concatenate([b.parents for b in done]) if done else np.empty(0, np.int32),
        fix_counts=dict(
            zip(ROW_FIXES, cast(np.ndarray, sum(b.fix for b in done)).tolist(), strict=True)
        )
        if done
        else dict.fromkeys(ROW_FIXES, 0),
        blank_lines=sum(b.blank for b in done),
    )


INSTANCE_FIELDS = (
    "instance_name", "task_name", "job_name", "task_type", "status", "start_time", "end_time",
    "machine_id", "seq_no", "total_seq_no", "cpu_avg", "cpu_max", "mem_avg", "mem_max",
)  # fmt: skip
"""The 14 columns of v2018 ``batch_instance.csv``."""


def _instance_reason(num: Sequence[str]) -> pl.Expr:
    c = pl.col
    nan = pl.any_horizontal((c(f"t_{f}") != "") & ~c(f).is_finite().fill_null(False) for f in num)
    times_ok = (c("end_time") >= c("start_time")).fill_null(False) & (c("start_time") > 0)
    return (
        pl.when(c("t_mem_max").is_null() | c("_extra").is_not_null())
        .then(pl.lit("wrong_field_count"))
        .when(nan).then(pl.lit("not_a_number"))
        .when(c("t_status") != "Terminated").then(pl.lit("not_terminated"))
        .when(~times_ok).then(pl.lit("invalid_times"))
        .alias("reason")
    )  # fmt: skip


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
                *(split.struct.field(f"field_{i}").alias(f"t_{f}")
                  for i, f in enumerate(INSTANCE_FIELDS)),
                split.struct.field(f"field_{n}").alias("_extra"),
            )
            .with_columns(t[f].cast(pl.Float64, strict=False).alias(f) for f in num)
            .with_columns(_instance_reason(num))
            .collect()
        )  # fmt: skip
        read += frame.height
        for reason, count in frame.group_by("reason").len().iter_rows():
            if reason is not None:
                skipped[reason] = skipped.get(reason, 0) + count
        parts.append(
            frame.filter(c("reason").is_null())
            .group_by(_job_key(t["job_name"]).alias("job"), t["task_name"].hash().alias("thash"))
            .agg(
                pl.len().alias("n"),
                (c("end_time") - c("start_time")).sum().alias("dur"),
                c("cpu_avg").sum().alias("cpu"), c("cpu_avg").count().alias("n_cpu"),
                c("mem_avg").sum().alias("mem"), c("mem_avg").count().alias("n_mem"),
            )
        )  # fmt: skip
    stats = (
        pl.concat(parts)
        .group_by("job", "thash")
        .agg(pl.all().sum())
        .select(
            "job", "thash", (c("dur") / c("n")).alias("inst_duration_s"),
            (c("cpu") / c("n_cpu") / 100.0).alias("used_cpu"),
            (c("mem") / c("n_mem")).alias("used_mem"),
        )
    )  # fmt: skip
    used = read - sum(skipped.values())
    return stats, {"path": source, "rows_read": read, "rows_used": used, "skipped": skipped}
