"""One schedule in the formats other tools read: an SWF log, and Batsim's ``_jobs.csv``.

**SWF** (the Parallel Workloads Archive's Standard Workload Format, version 2.2): the schedule
as a log, one line per job with the simulated wait (field 3) and the run time it ran (field 4;
a job killed at its request ran its request), so a tool that reads logs (evalys, the Archive's
scripts, ``schedlab load swf``) sees what the policy would have done. ``schedlab load swf`` reads
the file back to the same jobs: submit times, run times, processors, requests and users.
Header: ``UnixStartTime`` and ``TimeZoneString`` where the trace gave them, ``MaxProcs`` the
processors of one machine (``MaxNodes`` the machines), and notes naming the policy.

**Batsim** (``<name>_jobs.csv``, the per-job output of the Batsim simulator that evalys reads
with ``evalys.jobset.JobSet.from_csv``): ``job_id``, ``workload_name``, ``profile``,
``submission_time``, ``requested_number_of_resources``, ``requested_time``, ``success``,
``final_state``, ``starting_time``, ``execution_time``, ``finish_time``, ``waiting_time``,
``turnaround_time``, ``stretch``, ``allocated_resources`` (the processors each job held, as
interval sets: :func:`~schedlab.evaluation.allocation.allocate`), ``consumed_energy`` and
``metadata``; times in seconds.

Both describe one schedule (one policy on one jobset) whose first resource counts whole
processors (SWF and Batsim allocate processors); times are the trace's seconds, or steps times
the step length (1 s when the workload defines none).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

import schedlab
from schedlab.errors import ResultsError
from schedlab.evaluation.allocation import allocate, procset
from schedlab.evaluation.clock import clock
from schedlab.evaluation.schedules import schedules
from schedlab.io import atomic_path, write_text_atomic
from schedlab.jobset import JobSet
from schedlab.results import Results

SWF_FIELDS = 18
BATSIM_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)
"""Columns of Batsim's ``_jobs.csv``, in its order."""


def times(schedule: pl.DataFrame, meta: dict) -> pl.DataFrame:
    """Per job ``submit``, ``wait``, ``run`` and ``request`` (float64 seconds) of one schedule:
    the trace's real times where the results have them, else steps × the step length."""
    step = float(meta.get("time_step_seconds") or 1.0)
    if "arrival_s" in schedule.columns:
        submit, run, wait = pl.col("arrival_s"), pl.col("run_s"), pl.col("wait_s")
    else:
        submit = pl.col("arrival").cast(pl.Float64) * step
        run = pl.col("duration").cast(pl.Float64) * step
        wait = pl.col("wait").cast(pl.Float64) * step
    if "estimate_s" in schedule.columns:
        request = pl.col("estimate_s")
    elif "estimate" in schedule.columns:
        request = pl.col("estimate").cast(pl.Float64) * step
    else:
        request = run
    return schedule.select(
        submit.alias("submit"), wait.alias("wait"), run.alias("run"), request.alias("request")
    )


def whole_units(schedule: pl.DataFrame, resource: str) -> pl.Series:
    """The demands of ``resource`` as whole processors (int64).

    Raises
    ------
    ResultsError
        If a demand is not a whole number (SWF and Batsim count processors).
    """
    demand = schedule.get_column(resource).cast(pl.Float64)
    units = demand.round()
    bad = (demand - units).abs() > 1e-9
    if bad.any():
        row = int(bad.arg_max())  # type: ignore[arg-type]
        msg = (
            f"job {schedule['job_id'][row]} demands {demand[row]:g} {resource}: SWF and Batsim "
            "count whole processors (export a workload whose first resource is whole units)"
        )
        raise ResultsError(msg)
    return units.cast(pl.Int64)


def _number(expr: pl.Expr) -> pl.Expr:
    """An SWF field: an integer where the value is whole, else 3 decimals; -1 for missing."""
    whole = expr.round(0)
    return (
        pl.when(expr.is_null())
        .then(pl.lit("-1"))
        .when(expr == whole)
        .then(whole.cast(pl.Int64).cast(pl.String))
        .otherwise(expr.round(3).cast(pl.String))
    )


def user_ids(schedule: pl.DataFrame) -> pl.Series:
    """SWF user ids (int64, -1 unknown): the ``user`` column where numeric, else numbered
    1, 2, ... in order of first appearance."""
    if "user" not in schedule.columns:
        return pl.Series("user", [-1] * schedule.height, dtype=pl.Int64)
    user = schedule.get_column("user").cast(pl.String)
    numeric = user.cast(pl.Int64, strict=False)
    if numeric.null_count() == user.null_count():
        return numeric.fill_null(-1)
    codes = {u: i + 1 for i, u in enumerate(dict.fromkeys(user.drop_nulls().to_list()))}
    return pl.Series("user", [codes.get(u, -1) for u in user.to_list()], dtype=pl.Int64)


def swf_text(
    schedule: pl.DataFrame, meta: dict, resource: str, *, about: str, jobset: int = 0
) -> str:
    """The SWF log of one schedule, ``jobset`` of a JobSet with metadata ``meta`` (module
    docstring); ``about`` names it in the header."""
    if schedule.height == 0:
        msg = "the schedule to export has no job"
        raise ResultsError(msg)
    t = times(schedule, meta)
    procs = whole_units(schedule, resource)
    machines = int(meta.get("machines") or 1)
    per_machine = float(meta["capacity"][0]) / machines
    killed = schedule.get_column("killed") if "killed" in schedule.columns else None
    ids = (
        schedule.get_column("source_id").cast(pl.Int64, strict=False)
        if "source_id" in schedule.columns
        else None
    )
    number = ids if ids is not None and ids.null_count() == 0 else schedule.get_column("job_id") + 1
    fields = pl.DataFrame(
        {
            "n": number.cast(pl.Int64),
            "submit": t["submit"],
            "wait": t["wait"],
            "run": t["run"],
            "procs": procs,
            "request": t["request"],
            "status": (~killed).cast(pl.Int64) if killed is not None else pl.Series([1] * t.height),
            "user": user_ids(schedule),
        }
    ).sort("submit", "n")
    minus = pl.lit("-1")
    line = pl.concat_str(
        [
            pl.col("n").cast(pl.String),
            _number(pl.col("submit")),
            _number(pl.col("wait")),
            _number(pl.col("run")),
            pl.col("procs").cast(pl.String),
            minus,
            minus,
            pl.col("procs").cast(pl.String),
            _number(pl.col("request")),
            minus,
            pl.col("status").cast(pl.String),
            pl.col("user").cast(pl.String),
            *([minus] * 6),
        ],
        separator=" ",
    )
    c = clock(meta, jobset)
    header = [
        "Version: 2.2",
        "Computer: a schedule simulated by schedlab",
        f"Installation: schedlab {schedlab.__version__}",
        f"Note: {about}",
        "Note: field 3 (wait) is the simulated wait; field 4 the run time the job ran (a job "
        "killed at its request, status 0, ran its request)",
        f"MaxJobs: {fields.height}",
        f"MaxRecords: {fields.height}",
        *([f"UnixStartTime: {round(c.origin)}"] if c.origin is not None else []),
        *([f"TimeZoneString: {c.zone}"] if c.zone else []),
        f"MaxNodes: {machines}",
        f"MaxProcs: {round(per_machine)}",
        "Preemption: No",
    ]
    body = fields.select(line.alias("line")).get_column("line").to_list()
    return "\n".join([*(f"; {h}" for h in header), *body]) + "\n"


def batsim_table(
    schedule: pl.DataFrame, meta: dict, resource: str, *, workload: str
) -> pl.DataFrame:
    """Batsim's ``_jobs.csv`` table of one schedule (module docstring)."""
    t = times(schedule, meta)
    procs = whole_units(schedule, resource)
    ranges = allocate(
        schedule, resource, float(meta["capacity"][0]), int(meta.get("machines") or 1)
    )
    killed = (
        schedule.get_column("killed")
        if "killed" in schedule.columns
        else pl.Series([False] * schedule.height)
    )
    ids = schedule.get_column("source_id") if "source_id" in schedule.columns else None
    start = t["submit"] + t["wait"]
    out = pl.DataFrame(
        {
            "job_id": (ids if ids is not None else schedule.get_column("job_id")).cast(pl.String),
            "workload_name": [workload] * schedule.height,
            "profile": [f"p{p}" for p in procs.to_list()],
            "submission_time": t["submit"],
            "requested_number_of_resources": procs,
            "requested_time": t["request"],
            "success": (~killed).cast(pl.Int64),
            "final_state": pl.Series(
                ["COMPLETED_WALLTIME_REACHED" if k else "COMPLETED_SUCCESSFULLY" for k in killed],
                dtype=pl.String,
            ),
            "starting_time": start,
            "execution_time": t["run"],
            "finish_time": start + t["run"],
            "waiting_time": t["wait"],
            "turnaround_time": t["wait"] + t["run"],
            "stretch": (t["wait"] + t["run"]) / t["run"].clip(lower_bound=1.0),
            "allocated_resources": procset(ranges, schedule.height),
            "consumed_energy": [-1.0] * schedule.height,
            "metadata": [""] * schedule.height,
        }
    )
    return out.select(BATSIM_COLUMNS).sort("submission_time", "job_id")


SCHEDULE_FORMATS = ("swf", "batsim")
"""Formats of one schedule (:func:`write_schedule`)."""


def _with_jobs(results: Results, jobs: JobSet | None) -> pl.DataFrame:
    """The results with demands, and from the JobSet its users, requests and trace ids."""
    try:
        table = schedules(results, jobs).jobs
    except ResultsError as exc:
        msg = f"exporting a schedule needs the jobs' demands: {exc}"
        raise ResultsError(msg) from exc
    if jobs is not None:
        extra = [
            c
            for c in ("user", "estimate", "estimate_s", "source_id")
            if c in jobs.jobs.columns and c not in table.columns
        ]
        if extra:
            table = table.join(
                jobs.jobs.select("jobset", "job_id", *extra), on=["jobset", "job_id"], how="left"
            )
    return table


def _workload(results: Results) -> str | None:
    """The workload of an experiment's results (None for a results file)."""
    t = results.table
    return str(t.get_column("workload")[0]) if "workload" in t.columns and t.height else None


def _choose(table: pl.DataFrame, column: str, wanted: object, option: str) -> pl.DataFrame:
    """The rows of ``table`` whose ``column`` is ``wanted`` (or its only value)."""
    if column not in table.columns:
        return table
    have = table.get_column(column).unique(maintain_order=True).to_list()
    if wanted is None:
        if len(have) == 1:
            return table
        msg = (
            f"the results hold {len(have)} {column}s; name one with {option} (one schedule per "
            f"file): {', '.join(map(str, have[:12]))}{' …' * (len(have) > 12)}"
        )
        raise ResultsError(msg)
    if wanted not in have:
        msg = f"{column} {wanted!r} is not in the results; they hold {have[:12]}"
        raise ResultsError(msg)
    return table.filter(pl.col(column) == wanted)


def write_schedule(
    parts: list[tuple[Results, JobSet | None]],
    out: str | os.PathLike[str],
    *,
    format: str,
    policy: str | None = None,
    jobset: int | None = None,
    workload: str | None = None,
) -> Path:
    """Write one schedule of ``parts`` (per workload: results and their JobSet) to ``out``.

    Parameters
    ----------
    parts
        Results and JobSet of each workload.
    out
        File to write.
    format
        ``"swf"`` or ``"batsim"`` (:data:`SCHEDULE_FORMATS`).
    policy, jobset, workload
        Which schedule; each may be left out when the results hold one only.

    Raises
    ------
    ResultsError
        If the choice leaves more than one schedule, or names one the results do not hold, or
        the demands are not whole processors or unknown.
    """
    target = Path(out)
    names = [_workload(r) for r, _ in parts]
    index = 0
    if len(parts) > 1:
        if workload not in names:
            msg = f"the experiment holds workloads {names}: name one with --workload"
            raise ResultsError(msg)
        index = names.index(workload)
    results, jobs = parts[index]
    table = _with_jobs(results, jobs)
    table = _choose(table, "policy", policy, "--policy")
    table = _choose(table, "jobset", jobset, "--jobset")
    meta = results.meta.get("jobset", {}) if jobs is None else jobs.meta.to_json()
    resource = str(meta["resources"][0])
    name = str(table.get_column("policy")[0])
    k = int(table.get_column("jobset")[0])
    source = meta.get("provenance", {}).get("path") or meta.get("provenance", {}).get("generator")
    about = f"policy {name} on jobset {k} of {source or 'the workload'}"
    if format == "swf":
        write_text_atomic(target, swf_text(table, meta, resource, about=about, jobset=k))
    elif format == "batsim":
        frame = batsim_table(table, meta, resource, workload=names[index] or "w0")
        with atomic_path(target) as tmp:
            frame.write_csv(tmp)
    else:
        msg = f"format must be one of {SCHEDULE_FORMATS}, got {format!r}"
        raise ValueError(msg)
    return target
