"""Alibaba cluster-trace-v2017 ``batch_task.csv`` -> JobSet (design.md §4).

The table is a headerless CSV (plain, compressed or inside a tar archive) with 8 columns
(alibaba/clusterdata, ``cluster-trace-v2017/schema.csv``); a header line that public copies
add (a first line whose numeric columns all hold words) is recognised and skipped, with a note:

==  ==============  ==========================================================================
 1  create_time     task create time, s since the trace start (0 or < 0: before the trace)
 2  end_time        task end (latest state change) time, s
 3  job_id          integer
 4  task_id         integer
 5  instance_num    instances of the task
 6  status          Terminated, Failed, Running, Waiting (also Ready, Cancelled in the schema)
 7  plan_cpu        CPU requested per instance, 100 = 1 core
 8  plan_mem        memory requested per instance, normalized
==  ==============  ==========================================================================

One task is one job: ``arrival`` = create_time (the table has no start time), ``duration`` =
end_time − create_time, resources ``cpu`` (cores, plan_cpu / 100) and ``mem`` (normalized units)
per instance; ``source_id`` is ``"<job_id>/<task_id>"``. Expanding tasks into one job per
instance is not offered (the drop report counts lines, and the real table holds 12 million
instances). Every data line is kept or dropped with a reason code, in this priority:

``invalid_utf8`` (bytes that are not UTF-8), ``wrong_field_count``, ``not_a_number``,
``invalid_status``, ``status_<Status>`` (the status selection), ``missing_value`` (an empty
field; Waiting tasks have empty plan_cpu/plan_mem), ``no_end_time`` (a Running task whose
end_time is before its create_time, e.g. 0), ``negative_duration``, ``negative_demand``, then
the shared steps of :func:`~schedlab.loaders.traces.transform.finish` (``out_of_range``,
``outside_window``, ``exceeds_capacity``, ``not_sampled``). Blank lines are not data rows
(counted in the provenance).

A cluster-trace-v2018 ``batch_task.csv`` (9 columns, task names like ``M1``, job names like
``j_3``, the status in column 5) is recognised and rejected: use the ``alibaba2018`` loader.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.loaders.traces.archive import check_parse_size, text_path
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.textio import layout, read_lines, require_shape
from schedlab.loaders.traces.transform import TraceOptions, finish, first_reason, parse_statuses

FIELDS = (
    "create_time",
    "end_time",
    "job_id",
    "task_id",
    "instance_num",
    "status",
    "plan_cpu",
    "plan_mem",
)
"""The 8 columns of v2017 ``batch_task.csv``, in file order."""
NUMERIC = tuple(f for f in FIELDS if f != "status")
STATUSES = ("Terminated", "Failed", "Running", "Waiting", "Ready", "Cancelled")
"""Task statuses named by the v2017 documentation."""
TRACE_MACHINES = 1300
"""Machines of the v2017 cluster ("about 1,300 machines", trace_2017.md): the default count."""
MACHINE_CPU = 64.0
"""Cores of a v2017 machine: ``server_event.csv`` gives 64 CPUs per machine (the trace's
documentation describes "the 64 cpus machine in the dataset")."""
MACHINE_MEM = 0.6899697150104833
"""Normalized memory of those 64-CPU machines as ``server_event.csv`` records it."""
V2018_STATUSES = ("Terminated", "Failed", "Running", "Waiting", "Ready", "Cancelled", "Interrupted")


def _fields(data: pl.DataFrame) -> pl.DataFrame:
    """Split on commas: ``t_<name>`` stripped tokens and float64 ``<name>`` for numeric ones."""
    tokens = pl.col("raw").str.strip_chars().str.split(",")
    data = data.with_columns(tokens.list.len().alias("n_fields"), tokens.alias("_tok"))
    data = data.with_columns(
        pl.col("_tok").list.get(i, null_on_oob=True).str.strip_chars().alias(f"t_{name}")
        for i, name in enumerate(FIELDS)
    )
    return data.with_columns(
        pl.col(f"t_{name}").cast(pl.Float64, strict=False).alias(name) for name in NUMERIC
    ).drop("_tok")


def _header_line(data: pl.DataFrame) -> str | None:
    """A note if the first non-blank line is a header (its numeric columns all hold words,
    e.g. ``create_time,end_time,job_id,...``), else None."""
    if data.height == 0:
        return None
    first = data.row(0, named=True)
    words = [first[f"t_{f}"] for f in NUMERIC]
    if all(w and w[0].isalpha() and first[f] is None for w, f in zip(words, NUMERIC, strict=True)):
        return f"line {first['line']} is a header line, skipped: {first['raw'][:120]!r}"
    return None


def _reject_v2018(data: pl.DataFrame, source: str) -> None:
    """Raise if most lines look like cluster-trace-v2018 ``batch_task.csv`` rows."""
    tokens = pl.col("raw").str.strip_chars().str.split(",")
    looks = (tokens.list.len() == 9) & (
        tokens.list.get(2, null_on_oob=True).str.contains(r"^j_\d+$")
        | tokens.list.get(4, null_on_oob=True).is_in(list(V2018_STATUSES))
    )
    hits = data.filter(looks)
    if hits.height and 2 * hits.height >= data.height:
        first = hits.row(0, named=True)
        msg = (
            f"{source}: this looks like Alibaba cluster-trace-v2018 batch_task.csv, not v2017: "
            f"{hits.height} of {data.height} lines have its 9 columns (task_name, instance_num, "
            f"job_name, task_type, status, start_time, end_time, plan_cpu, plan_mem), e.g. line "
            f"{first['line']}: {first['raw'][:80]!r}. Use the `alibaba2018` loader"
        )
        raise TraceFormatError(msg)
    require_shape(
        data, len(FIELDS), source, "a cluster-trace-v2017 batch_task.csv", "comma-separated"
    )


def _not_a_number() -> tuple[pl.Expr, pl.Expr]:
    bad = [(pl.col(f"t_{f}") != "") & ~pl.col(f).is_finite().fill_null(False) for f in NUMERIC]
    msgs = [
        pl.when(b).then(pl.format(f"{f} is not a number: {{}}", pl.col(f"t_{f}")))
        for f, b in zip(NUMERIC, bad, strict=True)
    ]
    return pl.any_horizontal(bad), pl.coalesce(msgs)


def _missing() -> tuple[pl.Expr, pl.Expr]:
    empty = [pl.col(f"t_{f}") == "" for f in FIELDS]
    msgs = [pl.when(e).then(pl.lit(f"{f} is empty")) for f, e in zip(FIELDS, empty, strict=True)]
    return pl.any_horizontal(empty), pl.coalesce(msgs)


def _checks(statuses: Sequence[str]) -> list[tuple[pl.Expr, Any, Any]]:
    """(bad, reason, message) in priority order: a row gets the first reason that applies."""
    status, create, end = pl.col("t_status"), pl.col("create_time"), pl.col("end_time")
    nan, nan_msg = _not_a_number()
    missing, missing_msg = _missing()
    early = pl.format("end_time={} is before create_time={}", "t_end_time", "t_create_time")
    running = pl.concat_str(pl.lit("status=Running (no end yet): "), early)
    return [
        (pl.col("encoding").is_not_null(), "invalid_utf8", pl.col("encoding")),
        (
            pl.col("n_fields") != len(FIELDS),
            "wrong_field_count",
            pl.format("expected 8 comma-separated fields, found {}", pl.col("n_fields")),
        ),
        (nan, "not_a_number", nan_msg),
        (
            (status != "") & ~status.is_in(list(STATUSES)),
            "invalid_status",
            pl.format(f"status={{}} is not a v2017 task status {list(STATUSES)}", status),
        ),
        (
            (status != "") & ~status.is_in(list(statuses)),
            pl.format("status_{}", status),
            pl.format(f"status={{}} is not among the selected statuses {list(statuses)}", status),
        ),
        (missing, "missing_value", missing_msg),
        ((status == "Running") & (end < create), "no_end_time", running),
        (end < create, "negative_duration", early),
        (
            (pl.col("plan_cpu") < 0) | (pl.col("plan_mem") < 0),
            "negative_demand",
            pl.format("plan_cpu={} and plan_mem={} must be >= 0", "t_plan_cpu", "t_plan_mem"),
        ),
    ]


def read_alibaba2017(
    source: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    statuses: Sequence[str] | str = ("Terminated",),
    machine_cpu: float = MACHINE_CPU,
    machine_mem: float = MACHINE_MEM,
    member: str | None = "batch_task.csv",
) -> LoadResult:
    """Load a cluster-trace-v2017 ``batch_task.csv`` into a JobSet with a drop report.

    Parameters
    ----------
    source
        ``batch_task.csv``, ``.csv.gz`` or a ``.tar.gz`` holding it (detected from content).
    options
        Shared load options (time step, window, scaling, sampling, jobset split, strict).
    statuses
        Task statuses to keep (or one string such as ``"Terminated|Failed"``); others are
        dropped as ``status_<Status>``. Default: finished tasks only (Terminated). Running
        tasks have no real end: with ``"Running"`` selected, those whose end_time precedes
        create_time are dropped (``no_end_time``) and the others keep end_time − create_time.
    machine_cpu
        Cores of one machine (default 64, the trace's machines).
    machine_mem
        Normalized memory of one machine (default 0.68997, the trace's 64-core machines).
    member
        File to read inside a tar archive (ignored for plain and gzip files).

    Returns
    -------
    LoadResult
        Resources ``cpu`` (cores per instance) and ``mem`` (normalized per instance).

    Raises
    ------
    TraceFormatError
        Missing, empty, binary or other-kind file, corrupt or mislabelled compression; a v2018
        ``batch_task.csv``; no line with 8 fields; no row kept; with ``options.strict``, the
        first malformed line (file and line number).
    """
    options = options or TraceOptions()
    src = str(source)
    wanted = parse_statuses(statuses, STATUSES, "v2017 task status")
    path = text_path(source, member=member, max_bytes=options.max_decompressed)
    check_parse_size(path, source)
    lines = read_lines(path)
    blank = pl.col("raw").str.strip_chars() == ""
    data = _fields(lines.filter(~blank))
    header = _header_line(data)
    if header is not None:
        data = data.slice(1)
    if data.height == 0:
        only = f"{lines.height - (header is not None)} blank lines"
        msg = f"{src}: no data lines (only {only}{' and a header line' if header else ''})"
        raise TraceFormatError(msg)
    _reject_v2018(data, src)
    rows = first_reason(data, _checks(wanted)).with_columns(
        pl.col("create_time").alias("arrival_s"),
        (pl.col("end_time") - pl.col("create_time")).alias("duration_s"),
        (pl.col("plan_cpu") / 100.0).alias("cpu"),
        pl.col("plan_mem").alias("mem"),
        pl.format("{}/{}", "t_job_id", "t_task_id").alias("source_id"),
        pl.col("t_status").alias("status"),
    )
    provenance = {
        "alibaba2017": {
            "statuses": list(wanted),
            "granularity": "task",
            "blank_lines": lines.height - data.height - (header is not None),
            "header_line": header,
            "machine": {"cpu_cores": machine_cpu, "mem_normalized": machine_mem},
            "notes": [
                "arrival = create_time (no start time in the table); duration = end_time - "
                "create_time; cpu = plan_cpu / 100 cores and mem = plan_mem per instance",
            ],
        }
    }
    return finish(
        rows,
        source=src,
        loader="alibaba2017",
        resources=["cpu", "mem"],
        machine_size=[machine_cpu, machine_mem],
        units=["core", "normalized memory"],
        options=options,
        extra_provenance=provenance,
        selections=[f"status_{s}" for s in STATUSES],
        notes=[*layout(path).notes(), *([header] if header else [])],
        machines=TRACE_MACHINES,
    )
