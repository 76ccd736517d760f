"""Parsing cluster-trace-v2018 ``batch_task`` lines into typed columns.

Each block of lines (:func:`~schedlab.loaders.traces.alibaba2018_scan.blocks`) goes through the
compiled :func:`~schedlab.loaders.traces.alibaba2018_scan.scan`, then columnar polars checks give
each line its reason code (0: good) and message
(:mod:`~schedlab.loaders.traces.alibaba2018_reasons`); the good lines are reduced to compact typed
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
from typing import cast

import numpy as np
import polars as pl

from schedlab.loaders.traces import alibaba2018_scan as sc
from schedlab.loaders.traces.alibaba2018_reasons import (
    BLANK,
    GOOD,
    NUMERIC,
    dropped_rows,
    line_codes,
)
from schedlab.loaders.traces.alibaba2018_scan import FIELDS, STATUSES
from schedlab.loaders.traces.textio import blocks, split_lines

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
        {
            "line": np.arange(first, first + n_lines, dtype=np.int64),
            "nf": nf,
            "flags": flags,
            "idx": idx,
            "job": job,
            "status": status,
            **{f: numbers[k] for k, f in enumerate(NUMERIC)},
        },
    ).with_columns(pl.col(NUMERIC).fill_nan(None))
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
        key = names.select(job_key(pl.col("job_name"))).to_series()
        frame = frame.with_columns(
            pl.when((pl.col("flags") & sc.JOB_OTHER) != 0).then(key).otherwise("job").alias("job")
        )
        if hashes:
            frame = frame.with_columns(names.get_column("task_name").hash().alias("thash"))
        if source_ids:
            frame = frame.with_columns(
                names.select(pl.format("{}/{}", "job_name", "task_name"))
                .to_series()
                .alias("source_id")
            )
    c = pl.col
    integral = pl.all_horizontal(
        c(f).is_null() | (c(f) == c(f).floor()) for f in NUMERIC if f != "plan_mem"
    )
    frame = frame.with_columns(
        line_codes(selected, text).alias("code"),
        c("instance_num").is_null().alias("missing_inst"),
        (((c("flags") & sc.DOTS) != 0) & integral).alias("as_float"),
    )
    return frame, n_par, flat


def _good(frame: pl.DataFrame) -> pl.DataFrame:
    c = pl.col
    keep = [x for x in ("thash", "source_id") if x in frame.columns]
    return frame.filter(c("code") == GOOD).select(
        "line",
        "job",
        "idx",
        "flags",
        c("start_time").alias("arrival_s"),
        (c("end_time") - c("start_time")).alias("duration_s"),
        c("instance_num").fill_null(1.0).alias("inst"),
        (c("plan_cpu") / 100.0).alias("cpu"),
        c("plan_mem").alias("mem"),
        "missing_inst",
        "as_float",
        *keep,
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


def job_key(name: pl.Expr) -> pl.Expr:
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
        dropped=dropped_rows(frame, statuses),
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
