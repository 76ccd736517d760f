"""``schedlab simulate``: policies on every jobset of a JobSet file -> per-job results."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from schedlab.cli.config_options import simulation_options
from schedlab.cli.options import Command, output_option
from schedlab.policy_specs import policy_name
from schedlab.registry import make_policy, policies, policy_key


@click.command("simulate", cls=Command)
@click.argument("jobs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    "policy_specs",
    multiple=True,
    metavar="SPEC",
    help="Policy spec, repeatable (default: every heuristic): a name of `schedlab list "
    "policies` (plug-ins included) or package.module:attr, e.g. sjf+easy, tetris:knob=0.3.",
)
@simulation_options
@output_option("Results Parquet file to write.")
def simulate_cmd(jobs: Path, policy_specs: tuple[str, ...], output: Path, **cluster: Any) -> None:
    """Simulate policies on every jobset of JOBS and write per-job results (with the machine
    each job ran on). Heuristics name a placement rule on several machines: sjf+bestfit.

    --slots, --horizon, --machines, --overrun and --release are fields of ClusterConfig."""
    made = make_policies(policy_specs or tuple(policies.names(tag="heuristic")))
    ctx = click.get_current_context()
    default_slots = ctx.get_parameter_source("slots") is click.core.ParameterSource.DEFAULT
    results = _simulate(jobs, made, cluster, default_slots)
    results.write_parquet(output)
    click.echo(f"wrote {output}: {results.table.height} job results for {results.policies}")
    if results.meta.get("killed_jobs"):
        import polars as pl

        per = results.table.group_by("policy", maintain_order=True).agg(pl.col("killed").sum())
        each = ", ".join(f"{p} {k:,}" for p, k in per.iter_rows() if k)
        click.echo(
            f"jobs that ran past their estimate and were killed there (--overrun kill): {each}"
        )


def make_policies(specs: tuple[str, ...]) -> list[tuple[str, Any]]:
    """``(spec, policy)`` of every ``--policy``, checked; the same policy twice is an error."""
    made: list[tuple[str, Any]] = []
    seen: dict[str, str] = {}
    for spec in specs:
        policy = make_policy(spec, where=f"--policy {spec}")
        key = policy_key(policy)
        if key in seen or policy.name in {p.name for _, p in made}:
            first = seen.get(key, spec)
            msg = f"--policy {spec} is given twice (same policy or name as --policy {first})"
            raise click.UsageError(msg)
        seen[key] = spec
        made.append((spec, policy))
    return made


def _simulate(
    jobs: Path, made: list[tuple[str, Any]], cluster: dict[str, Any], default_slots: bool
) -> Any:
    from tqdm import tqdm

    from schedlab.errors import JobSetError
    from schedlab.jobset import JobSet
    from schedlab.results import Results
    from schedlab.simulator.config import ClusterConfig
    from schedlab.simulator.model import model_kind
    from schedlab.simulator.run import simulate

    js = JobSet.read_parquet(jobs)
    if len(js) == 0:
        msg = f"{jobs}: the JobSet holds no job ({len(js.meta.empty_jobsets)} empty jobsets)"
        raise JobSetError(msg + "; nothing to simulate")
    config = ClusterConfig(**cluster)
    # the geometry options are the cluster model's; another model kind runs on its defaults
    own = {spec: isinstance(config, model_kind([p]).config) for spec, p in made}
    if default_slots and js.meta.time_step_seconds is not None:
        _slots_note([spec for spec, p in made if own[spec] and _greedy_heuristic(spec, p)])
    long = announce(js, [(spec, p) for spec, p in made if own[spec]], config)
    parts = []
    for spec, policy in tqdm(made, desc="simulating", unit="policy", disable=None):
        t0 = time.perf_counter()
        if not own[spec]:
            parts.append(simulate(js, [policy]))
        else:
            parts.append(simulate_per_jobset(js, spec, policy, config, spec in long))
        tqdm.write(f"  {spec}: {len(js)} jobs in {time.perf_counter() - t0:.2f} s")
    return Results.concat(parts)


def _greedy_heuristic(spec: str, policy: Any) -> bool:
    """Whether ``policy`` is a heuristic under the greedy discipline, which sees only the
    visible slots (a discipline sees the whole queue; a learned policy has its geometry)."""
    tags = policies.entry(policy_name(spec)).tags
    return "heuristic" in tags and getattr(policy, "queue", None) == "greedy"


def _slots_note(specs: list[str]) -> None:
    """A note that ``specs`` see only the default visible slots of a log in real time."""
    from tqdm import tqdm

    from schedlab.simulator.config import ClusterConfig

    if specs:
        slots = ClusterConfig().slots
        tqdm.write(
            f"note: {', '.join(specs)} see{'s' if len(specs) == 1 else ''} only the first "
            f"{slots} waiting jobs (--slots "
            f"{slots}, DeepRM's visible slots, the default); --slots all shows them the whole "
            "queue, as an HPC scheduler sees a log's"
        )


def announce(js: Any, made: list[tuple[str, Any]], config: Any) -> set[str]:
    """Before any simulation, a note for each policy expected to take long
    (:func:`schedlab.simulator.cost.estimate`), with its estimate; the specs of those."""
    from tqdm import tqdm

    from schedlab.simulator.cost import UNINTERRUPTIBLE, estimate

    long = set()
    for spec, policy in made:
        cost = estimate(js, policy, config)
        if cost.long:
            tqdm.write(f"note: {spec}: {cost.describe()}; {UNINTERRUPTIBLE}")
            long.add(spec)
    return long


def simulate_per_jobset(js: Any, spec: str, policy: Any, config: Any, long: bool) -> Any:
    """``simulate(js, [policy], config)``; when ``long``, one jobset at a time under a progress
    bar (the compiled engines run a whole jobset per call), with the same results."""
    import polars as pl
    from tqdm import tqdm

    from schedlab.results import Results
    from schedlab.simulator.cost import jobset_subsets
    from schedlab.simulator.run import simulate

    subsets = jobset_subsets(js) if long else []
    if len(subsets) < 2:
        return simulate(js, [policy], config)
    bar = tqdm(subsets, desc=f"  {spec}", unit="jobset", leave=False, disable=None)
    parts = [simulate(part, [policy], config) for part in bar]
    killed = sum(int(p.meta.get("killed_jobs", 0)) for p in parts)
    meta = {**parts[0].meta, "jobset": js.meta.to_json(), "killed_jobs": killed}
    return Results(pl.concat([p.table for p in parts]), meta)
