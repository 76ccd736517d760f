"""Alibaba cluster-trace-v2018 ``batch_task.csv`` -> JobSet (design.md §4).

The table is a headerless CSV (plain, compressed or the official ``batch_task.tar.gz``; a header
line such as the one of the bundled sample is recognised and skipped, with a note) with 9 columns
(alibaba/clusterdata, ``cluster-trace-v2018/schema.txt``):

==  ============  ===========================================================================
 1  task_name     ``M1``, ``R2_1``, ``J4_2_3`` (DAG tasks), ``task_<base64>``, ``MergeTask``
 2  instance_num  instances of the task (written ``12846`` by the trace, ``12846.0`` by pandas)
 3  job_name      ``j_<n>``
 4  task_type     1–12 (unused)
 5  status        Terminated, Failed, Running, Waiting (also Ready, Cancelled, Interrupted)
 6  start_time    s since the trace start
 7  end_time      s; 0 for tasks that had not finished
 8  plan_cpu      CPU requested per instance, 100 = 1 core
 9  plan_mem      memory requested per instance, normalized to the largest machine (0–100)
==  ============  ===========================================================================

Units and decisions: ``arrival`` = start_time (the table has no submit time), ``duration`` =
end_time − start_time; resources ``cpu`` in cores (plan_cpu / 100) and ``mem`` in the trace's
normalized units (100 = the largest machine), per instance. One machine is 96 cores and 100
memory units (the v2018 machines: ``machine_meta.csv`` lists 96 cores, memory normalized to
100), so ``TraceOptions(machines=N)`` is a cluster of N such machines (default: the trace's own
:data:`TRACE_MACHINES`) and ``slots_per_machine=10`` rescales each machine to 10 slots per
resource. Every job must fit on one machine (instances are what the trace places on machines;
``granularity="instance"`` replays them one by one).

Granularity (``granularity=``):

* ``"task"`` (default): one job per task row; ``parents`` lists the ``job_id`` of the tasks it
  depends on in the same jobset (see :mod:`schedlab.loaders.traces.alibaba_dag` for the name
  quirks) and ``dag`` is the job it belongs to (``j_<n>`` -> n; other job names: a negative
  hash).
  Edges to tasks that did not make it into the jobset (dropped, not sampled, outside the window,
  in another jobset) are removed and counted as ``parent_outside_jobset_removed``.
* ``"instance"``: ``instance_num`` copies of each task row (at most ``max_instances``; the
  trace has tasks with 10^5 instances; capped rows are counted). With ``instances=`` the
  duration is the task's mean instance duration. The report counts file rows: a row counts as
  kept when its first instance is kept. The DAG stays between tasks (:mod:`schedlab.dag`):
  ``task`` is the task's key (its data row, shared by its instances), ``parents`` lists the
  parent *tasks'* keys (every instance of a task waits for every instance of its parents, in
  space linear in the instances: no instance-to-instance edges) and ``dag`` is its job. An edge
  to a task with no instance in the jobset is removed (``parent_outside_jobset_removed``, per
  task and jobset); a child waits for the parent's instances in its own jobset.
* ``"job"``: one job per ``job_name`` from its kept tasks: arrival = first start,
  ``job_duration="critical_path"`` (default): the longest path of task durations through the
  DAG (the job's length with unlimited machines), demand = the largest per-instance demand of
  its tasks; ``"total_work"``: Σ duration × instances, demand = the work-weighted mean
  per-instance demand, so demand × duration is the job's total resource-seconds.

Every data line is kept or dropped with a reason code, in this priority: ``wrong_field_count``,
``not_a_number`` (also NaN and inf), ``invalid_status``, ``status_<Status>`` (the selection),
``missing_value`` (an empty required field; Waiting rows have empty plan_cpu), ``no_end_time``
(end_time 0 before start_time: Running tasks), ``negative_duration``, ``never_started``
(start_time = end_time = 0: Waiting tasks), ``negative_demand``, ``invalid_instance_num``, then
the shared steps of :func:`~schedlab.loaders.traces.transform.finish`. Fixes (rows kept but changed)
are counted over the rows that passed parsing and the status selection (with ``"job"``,
``zero_duration_as_one_step`` counts jobs). Blank lines and the header are not data rows
(counted in the provenance).

Reading (no Python loop over rows): the file is read in blocks of about 64 MB of whole lines,
two blocks parsed at a time. One compiled pass per block (:mod:`~schedlab.loaders.
alibaba2018_scan`) splits the lines and parses task names, job keys, statuses and the plain
decimal numbers; polars parses a block's numbers instead when one is not a plain decimal, and
the columnar checks, job collapse and finishing steps are polars. Only compact typed columns
are kept (no text per row); the raw text of the sampled dropped rows is read back by line
number at the end. A cluster-trace-v2017 ``batch_task.csv`` or a ``batch_instance.csv`` is
recognised and rejected with a message naming the right loader or option.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import polars as pl

from schedlab.loaders.traces import alibaba_dag as dag_mod
from schedlab.loaders.traces.alibaba2018_instances import read_instances
from schedlab.loaders.traces.alibaba2018_parse import parse_tasks
from schedlab.loaders.traces.alibaba2018_rows import granularity_rows, parents_hook
from schedlab.loaders.traces.alibaba2018_scan import FIELDS, STATUSES, attach_raw, sniff
from schedlab.loaders.traces.archive import check_parse_size, text_path
from schedlab.loaders.traces.drop_report import LoadResult
from schedlab.loaders.traces.textio import layout
from schedlab.loaders.traces.transform import TraceOptions, finish, parse_statuses

TRACE_MACHINES = 4000
"""Machines of the v2018 cluster ("about 4,000 machines", trace_2018.md): the default count."""
MACHINE_CPU = 96.0
"""Cores of a v2018 machine (``machine_meta.csv``: 96)."""
MACHINE_MEM = 100.0
"""Memory of a v2018 machine in the trace's normalized units (the largest machine is 100)."""
__all__ = ["FIELDS", "MACHINE_CPU", "MACHINE_MEM", "STATUSES", "read_alibaba2018"]


def read_alibaba2018(
    source: str | os.PathLike[str],
    *,
    options: TraceOptions | None = None,
    statuses: Sequence[str] | str = ("Terminated",),
    granularity: Literal["task", "instance", "job"] = "task",
    job_duration: Literal["critical_path", "total_work"] = "critical_path",
    max_instances: int = 1000,
    instances: str | os.PathLike[str] | None = None,
    demand: Literal["plan", "used"] = "plan",
    source_ids: bool = False,
    machine_cpu: float = MACHINE_CPU,
    machine_mem: float = MACHINE_MEM,
    member: str | None = "batch_task.csv",
) -> LoadResult:
    """Load a cluster-trace-v2018 ``batch_task.csv`` into a JobSet with a drop report.

    Parameters
    ----------
    source
        ``batch_task.csv``, ``.csv.gz`` or the official ``batch_task.tar.gz`` (from content).
    options
        Shared load options (time step, window, scaling, sampling, jobset split, strict).
    statuses
        Task statuses to keep (or one string such as ``"Terminated|Failed"``); the others are
        dropped as ``status_<Status>``. Default: finished tasks (Terminated).
    granularity
        ``"task"``, ``"instance"`` or ``"job"`` (module docstring).
    job_duration
        For ``granularity="job"``: ``"critical_path"`` or ``"total_work"`` (module docstring).
    max_instances
        For ``granularity="instance"``: copies per task at most.
    instances
        Optional ``batch_instance.csv`` (plain, gzip or tar.gz), streamed: per task the mean
        duration of its Terminated instances and their mean measured ``cpu_avg``/``mem_avg``.
    demand
        ``"plan"`` (plan_cpu, plan_mem) or ``"used"`` (measured means; needs ``instances``;
        tasks without instance rows keep their plan, counted as ``usage_missing_plan_kept``).
    source_ids
        Add ``source_id``: ``"j_3/M5"`` per task or instance (off by default: about 30 bytes
        a row, 0.4 GB for the full trace), ``"j_3"`` per job (always with ``"job"``).
    machine_cpu, machine_mem
        One machine's capacity: cores and normalized memory (default 96 and 100).
    member
        File to read inside a tar archive (ignored for plain and gzip files).

    Returns
    -------
    LoadResult
        Resources ``cpu`` (cores) and ``mem`` (normalized; 100 = one machine) per job.

    Raises
    ------
    TraceFormatError
        Missing, empty, binary or other-kind file, corrupt or mislabelled compression; unsafe
        archive members; a v2017 ``batch_task.csv`` or a ``batch_instance.csv``; no row kept;
        with ``options.strict``, the first malformed line (file and line number).
    """
    options = options or TraceOptions()
    wanted = parse_statuses(statuses, STATUSES, "v2018 task status")
    _check_choices(granularity, job_duration, demand, instances, max_instances)
    src = str(source)
    path = text_path(source, member=member, max_bytes=options.max_decompressed)
    check_parse_size(path, source)
    header = sniff(path, src)
    parsed = parse_tasks(
        path,
        header=header,
        statuses=wanted,
        hashes=instances is not None,
        source_ids=source_ids and granularity != "job",
    )
    fixes = parsed.fixes()
    prov: dict[str, Any] = {
        "statuses": list(wanted),
        "granularity": granularity,
        "header_line": header,
        "blank_lines": parsed.blank_lines,
        "machine": {"cpu_cores": machine_cpu, "mem_normalized": machine_mem},
        "demand": demand,
    }
    box: dict[str, Any] = {"good": parsed.good}  # sole references: finish can free them
    parsed = replace(parsed, good=pl.DataFrame())
    if instances is not None:
        box["good"], more, prov["instances"] = _with_instances(
            box["good"], instances, demand, member, options.max_decompressed
        )
        fixes.update(more)
    good = box["good"]
    dag = dag_mod.build_dag(
        good.get_column("job").to_numpy(),
        good.get_column("idx").to_numpy(),
        parsed.lengths,
        parsed.parents,
        good.get_column("duration_s").to_numpy(),
        parsed.nodes,
        critical_path=granularity == "job",
    )
    n_good = good.height
    box["dag"] = dag
    del good, dag
    parsed = replace(parsed, lengths=np.empty(0), parents=np.empty(0), nodes=pl.DataFrame())
    fixes.update(box["dag"].fixes())
    if granularity == "job":
        prov["job_duration"] = job_duration
    result = finish(
        granularity_rows(box, granularity, fixes, max_instances, job_duration, source_ids),
        source=src,
        loader="alibaba2018",
        resources=["cpu", "mem"],
        machine_size=[machine_cpu, machine_mem],
        units=["core", "normalized memory"],
        options=options,
        fixed=fixes,
        extra_provenance={"alibaba2018": prov},
        selections=[f"status_{s}" for s in STATUSES],
        dropped=parsed.dropped,
        finalize=parents_hook(box, n_good, granularity),
        notes=[*layout(path).notes(), *(["line 1 is a header line, skipped"] if header else [])],
        machines=TRACE_MACHINES,
    )
    return attach_raw(result, path)


def _check_choices(
    granularity: str, job_duration: str, demand: str, instances: object, max_instances: int
) -> None:
    for name, value, allowed in (
        ("granularity", granularity, ("task", "instance", "job")),
        ("job_duration", job_duration, ("critical_path", "total_work")),
        ("demand", demand, ("plan", "used")),
    ):
        if value not in allowed:
            msg = f"{name} must be one of {allowed}, got {value!r}"
            raise ValueError(msg)
    if demand == "used" and instances is None:
        msg = 'demand="used" needs instances= (a batch_instance.csv with measured usage)'
        raise ValueError(msg)
    if max_instances < 1:
        msg = f"max_instances must be >= 1, got {max_instances}"
        raise ValueError(msg)


def _with_instances(
    good: pl.DataFrame,
    path: str | os.PathLike[str],
    demand: str,
    member: str | None,
    max_bytes: int | None,
) -> tuple[pl.DataFrame, dict[str, int], dict[str, Any]]:
    """Join per-task instance statistics (mean duration and measured usage) onto the tasks."""
    inst_member = "batch_instance.csv" if member == "batch_task.csv" else None
    text = text_path(path, member=inst_member, max_bytes=max_bytes)
    stats, prov = read_instances(text, str(path))
    good = good.join(stats, on=["job", "thash"], how="left", maintain_order="left")
    fixes: dict[str, int] = {}
    with_data = int(good.get_column("inst_duration_s").is_not_null().sum())
    prov["tasks_with_instances"] = with_data
    if demand == "used":
        missing = int((good.get_column("used_cpu").is_null()).sum())
        if missing:
            fixes["usage_missing_plan_kept"] = missing
        good = good.with_columns(
            pl.col("used_cpu").fill_null(pl.col("cpu")).alias("cpu"),
            pl.col("used_mem").fill_null(pl.col("mem")).alias("mem"),
        )
    return good.drop("used_cpu", "used_mem", "thash"), fixes, prov
