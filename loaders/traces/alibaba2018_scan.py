"""Bytes of ``batch_task.csv``: sniffing, and one compiled pass per block of whole lines.

Blocks come from :func:`schedlab.loaders.traces.textio.blocks` (exact line numbers, BOMs and
CR-only line ends handled); :func:`sniff` checks the first lines (v2017 and ``batch_instance``
tables, the header line); :func:`attach_raw` reads the text of sampled dropped lines back by
number.

:func:`scan` finds each line's comma-separated fields (no quoting: the trace has none; a
trailing ``\\r`` is ignored) and extracts what the loader needs without building any string
column:

* the number of fields (0 for a blank line) and which numeric fields use a decimal point;
* the task name's DAG grammar (:mod:`schedlab.loaders.traces.alibaba_dag`): the task index, the
  parent indices (numbers only: ``Stg<N>`` and empty tokens are skipped), and flags for ``_Stg``
  suffixes, names truncated at 50 characters (whose last number, if the name does not end with
  ``_``, is dropped as possibly cut) and unrecognised names (not ``task_...``/``MergeTask``);
* the job key: ``j_<n>`` -> n (other names are flagged and hashed by the caller);
* the status as an index into the known statuses (7: unknown, 8: empty);
* the five numbers, parsed exactly when they are plain decimals of at most 15 significant
  digits (``M / 10^k`` with both exact in float64 is correctly rounded, as strtod's result); any
  other non-empty text (exponents, ``nan``, spaces) flags the line for the caller's fallback,
  which parses the block's numbers with polars.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numba
import numpy as np
import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.drop_report import LoadResult, clip_text
from schedlab.loaders.traces.textio import (
    BOM,
    blocks,
    head_bytes,
    layout,
    pick_lines,
    split_lines,
)

FIELDS = (
    "task_name",
    "instance_num",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
)
"""The 9 columns of v2018 ``batch_task.csv``, in file order."""
STATUSES = ("Terminated", "Failed", "Running", "Waiting", "Ready", "Cancelled", "Interrupted")
"""Task statuses of the v2018 trace."""
NAME_LIMIT = 50
"""Length at which the trace truncated task names."""
# line flags
DOTS, STG, TRUNCATED, CUT, UNKNOWN, NAME_EMPTY, JOB_EMPTY, JOB_OTHER, SLOW = (
    1 << b for b in range(9)
)
UNKNOWN_STATUS, EMPTY_STATUS = 7, 8
_POW10 = np.array([10.0**k for k in range(23)])
_FIELD_NUMBER = np.array([-1, 0, -1, -1, -1, 1, 2, 3, 4], dtype=np.int64)


def status_table(statuses: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The statuses as a padded byte matrix and their lengths, for :func:`scan`."""
    width = max(len(s) for s in statuses)
    table = np.zeros((len(statuses), width), dtype=np.uint8)
    for i, s in enumerate(statuses):
        table[i, : len(s)] = np.frombuffer(s.encode(), dtype=np.uint8)
    return table, np.array([len(s) for s in statuses], dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def scan(buf, n_lines, status_bytes, status_lens):
    """Parse ``n_lines`` lines of ``buf`` (uint8). Returns ``nf`` (int32), ``flags`` (uint16),
    ``idx`` (int32, -1), ``job`` (int64, -1), ``status`` (int8), ``numbers`` (5 x n float64,
    NaN when empty), ``n_parents`` (int32) and the flat parent indices (int32)."""
    nf = np.zeros(n_lines, dtype=np.int32)
    flags = np.zeros(n_lines, dtype=np.uint16)
    idx = np.full(n_lines, -1, dtype=np.int32)
    job = np.full(n_lines, -1, dtype=np.int64)
    status = np.full(n_lines, EMPTY_STATUS, dtype=np.int8)
    numbers = np.full((5, n_lines), np.nan)
    n_parents = np.zeros(n_lines, dtype=np.int32)
    flat = np.empty(buf.size // 2 + 1, dtype=np.int32)  # untouched pages cost no memory
    m, i, size = 0, 0, buf.size
    for line in range(n_lines):
        field, start, c = 0, i, 10
        while True:
            a = i
            while i < size:  # to the next comma or newline
                c = buf[i]
                if c == 44 or c == 10:
                    break
                i += 1
            else:
                c = 10  # the last line has no newline
            end = i
            if c == 10 and end > a and buf[end - 1] == 13:
                end -= 1
            if field == 0:
                m = _name(buf, a, end, line, idx, flags, n_parents, flat, m)
            elif field == 2:
                _job(buf, a, end, line, job, flags)
            elif field == 4:
                status[line] = _status(buf, a, end, status_bytes, status_lens)
            elif field < 9 and _FIELD_NUMBER[field] >= 0:
                _number(buf, a, end, line, _FIELD_NUMBER[field], numbers, flags)
            field += 1
            i += 1
            if c == 10:
                break
        nf[line] = 0 if field == 1 and _blank(buf, start, end) else field
    return nf, flags, idx, job, status, numbers, n_parents, flat[:m].copy()


@numba.njit(cache=True, inline="always")
def _blank(buf, a, b):
    """Whether ``buf[a:b]`` is only spaces, tabs and carriage returns."""
    for p in range(a, b):  # noqa: SIM110 (numba: explicit loop, no generator)
        if buf[p] != 32 and buf[p] != 9 and buf[p] != 13:
            return False
    return True


@numba.njit(cache=True, inline="always")
def _name(buf, a, b, line, idx, flags, n_parents, flat, m):
    """Task name in ``buf[a:b]``: index, parents appended to ``flat`` from ``m``, flags."""
    if b == a:
        flags[line] |= NAME_EMPTY
        return m
    truncated = b - a >= NAME_LIMIT
    if truncated:
        flags[line] |= TRUNCATED
    p, letters = a, 0
    while p < b and ((65 <= buf[p] <= 90) or (97 <= buf[p] <= 122)):
        p += 1
        letters += 1
    v, digits = 0, 0
    while p < b and 48 <= buf[p] <= 57 and v <= 214748364:
        v = v * 10 + (buf[p] - 48)
        digits += 1
        p += 1
    if letters == 0 or digits == 0 or v > 2147483647 or (p < b and buf[p] != 95):
        if not (_starts(buf, a, b, "task_") or _equals(buf, a, b, "MergeTask")):
            flags[line] |= UNKNOWN
        return m
    idx[line] = v
    count, last_numeric = 0, False
    while p < b:  # at an underscore
        p += 1
        q, v, numeric = p, 0, True
        while q < b and buf[q] != 95:
            if 48 <= buf[q] <= 57 and v <= 214748364:
                v = v * 10 + (buf[q] - 48)
            else:
                numeric = False
            q += 1
        if q > p and numeric and v <= 2147483647:
            flat[m + count] = v
            count += 1
            last_numeric = q == b
        else:
            last_numeric = False
            if _starts(buf, p, q, "Stg"):
                flags[line] |= STG
        p = q
    if truncated and last_numeric:
        count -= 1
        flags[line] |= CUT
    n_parents[line] = count
    return m + count


@numba.njit(cache=True, inline="always")
def _starts(buf, a, b, text):
    if b - a < len(text):
        return False
    for k in range(len(text)):  # noqa: SIM110 (numba: explicit loop, no generator)
        if buf[a + k] != ord(text[k]):
            return False
    return True


@numba.njit(cache=True, inline="always")
def _equals(buf, a, b, text):
    return b - a == len(text) and _starts(buf, a, b, text)


@numba.njit(cache=True, inline="always")
def _job(buf, a, b, line, job, flags):
    """``j_<n>`` -> n; empty or other names are flagged."""
    if b == a:
        flags[line] |= JOB_EMPTY
        return
    if b - a < 3 or b - a > 20 or buf[a] != 106 or buf[a + 1] != 95:
        flags[line] |= JOB_OTHER
        return
    v = 0
    for p in range(a + 2, b):
        if not 48 <= buf[p] <= 57:
            flags[line] |= JOB_OTHER
            return
        v = v * 10 + (buf[p] - 48)
    job[line] = v


@numba.njit(cache=True, inline="always")
def _status(buf, a, b, status_bytes, status_lens):
    if b == a:
        return EMPTY_STATUS
    for s in range(status_lens.size):
        if status_lens[s] == b - a:
            same = True
            for k in range(b - a):
                if buf[a + k] != status_bytes[s, k]:
                    same = False
                    break
            if same:
                return s
    return UNKNOWN_STATUS


@numba.njit(cache=True, inline="always")
def _number(buf, a, b, line, row, numbers, flags):
    """A plain decimal ``[+-]digits[.digits]`` of at most 15 significant digits, exactly;
    anything else non-empty sets :data:`SLOW` (the caller parses the block with polars)."""
    if b == a:
        return
    p, negative = a, False
    if buf[p] == 45 or buf[p] == 43:
        negative = buf[p] == 45
        p += 1
    mantissa, significant, fraction, digits, dot = 0, 0, 0, 0, -1
    for q in range(p, b):
        c = buf[q]
        if 48 <= c <= 57:
            digits += 1
            if significant or c != 48:
                significant += 1
            mantissa = mantissa * 10 + (c - 48)
        elif c == 46 and dot < 0:
            dot = q
        else:
            flags[line] |= SLOW
            return
    if dot >= 0:
        fraction = b - dot - 1
    if digits == 0 or significant > 15 or fraction > 22:
        flags[line] |= SLOW
        return
    if dot >= 0 and row != 4:
        flags[line] |= DOTS
    value = mantissa / _POW10[fraction]
    numbers[row, line] = -value if negative else value


def read_block(data: bytes | memoryview) -> pl.DataFrame:
    """One row per line of a block: ``raw`` (str; bytes that are not UTF-8 become U+FFFD)."""
    return split_lines(data).to_frame()


def sniff(path: Path, source: str) -> bool:
    """Check the first lines; return whether line 1 is a header line.

    Raises
    ------
    TraceFormatError
        No data line, a v2017 ``batch_task.csv``, a ``batch_instance.csv``, or no line with 9
        fields.
    """
    head = head_bytes(path)
    partial = len(head) < path.stat().st_size
    lay = layout(path)
    head = head.removeprefix(BOM) if lay.bom else head
    head = head.replace(b"\r", b"\n") if lay.cr_only else head
    lines = head.decode("utf-8", errors="replace").splitlines()[: -1 if partial else 50]
    header = bool(lines) and lines[0].strip().startswith("task_name,")
    data = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not (header and i == 0)]
    if not data:
        msg = f"{source}: no data lines"
        raise TraceFormatError(msg)
    _reject_other_tables(data[:50], source)
    return header


def _reject_other_tables(data: list[tuple[int, str]], source: str) -> None:
    tokens = [(i, ln, ln.split(",")) for i, ln in data]

    def number(t: str) -> bool:
        try:
            float(t)
        except ValueError:
            return False
        return True

    v2017 = [
        (i, ln)
        for i, ln, t in tokens
        if len(t) == 8 and number(t[0]) and number(t[1]) and t[2].isdigit() and t[3].isdigit()
    ]
    v2018 = [(i, ln) for i, ln, t in tokens if len(t) == len(FIELDS) and not number(t[0])]
    inst = [(i, ln) for i, ln, t in tokens if len(t) == 14]
    if 2 * len(v2017) >= len(data) and not v2018:
        i, ln = v2017[0]
        msg = (
            f"{source}: this looks like Alibaba cluster-trace-v2017 batch_task.csv, not v2018: "
            f"{len(v2017)} of the first {len(data)} lines have its 8 columns (create time, end "
            f"time, integer job id, task id, instances, status, plan_cpu, plan_mem), e.g. line "
            f"{i}: {ln[:80]!r}. Use the `alibaba2017` loader"
        )
        raise TraceFormatError(msg)
    if 2 * len(inst) >= len(data) and not v2018:
        i, ln = inst[0]
        msg = (
            f"{source}: this looks like cluster-trace-v2018 batch_instance.csv (14 columns), "
            f"e.g. line {i}: {ln[:80]!r}; load batch_task.csv and pass this file as instances="
        )
        raise TraceFormatError(msg)
    if not any(len(t) == len(FIELDS) for _, _, t in tokens):
        i, ln, t = tokens[0]
        msg = (
            f"{source}: not a cluster-trace-v2018 batch_task.csv: none of the first "
            f"{len(data)} lines has 9 comma-separated fields (line {i} has {len(t)}: "
            f"{ln[:80]!r})"
        )
        raise TraceFormatError(msg)


def attach_raw(result: LoadResult, path: Path) -> LoadResult:
    """Fill the raw text of sampled dropped rows that lack it, reading lines back by number."""
    samples = result.report.samples
    want = samples.filter(pl.col("raw").is_null()).get_column("line")
    if want.is_empty():
        return result
    need = set(want.to_list())
    last = max(need)
    found: dict[int, str] = {}
    for first, data, n in blocks(path):
        hit = [ln - first for ln in need if first <= ln < first + n]
        found.update({first + i: text for i, text in pick_lines(data, hit).items()})
        if first + n > last:
            break
    fill = pl.DataFrame(
        {"line": list(found), "_raw": list(found.values())},
        schema={"line": pl.Int64, "_raw": pl.Utf8},
    )
    samples = (
        samples.join(fill, on="line", how="left", maintain_order="left")
        .with_columns(clip_text(pl.coalesce("raw", "_raw")).alias("raw"))
        .drop("_raw")
    )
    return LoadResult(result.jobs, replace(result.report, samples=samples))
