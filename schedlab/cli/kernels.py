"""``schedlab compile``: compile the simulator's kernels now, in parallel, so that no later run
waits for them (``make venv`` runs it once; numba caches the result beside the code)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

import click

from schedlab.cli.options import Command

PARTS = {
    "agents": "the agents' batched engine and DeepRM image",
    "pick": "the pick environment (an agent picks from the queue)",
    "conservative": "conservative backfilling",
    "tree": "the greedy whole-queue scheduler and a report's event timeline",
    "easy": "EASY and strict",
    "scan": "the greedy list scheduler",
    "multicluster": "the multi-cluster model (Liu et al.)",
    "dag": "DAG precedence",
}
"""What ``schedlab compile`` compiles, longest first (each a task of :func:`compile_part`;
seconds on 2 cores: 42, 31, 17, 14, 11, 10, 2, 2), so that the longest start first and the
processes finish together."""


def compile_part(part: str) -> float:
    """Compile (or load from the cache) the kernels of ``part`` by running them on a small
    workload; the seconds it took."""
    t0 = time.perf_counter()
    from schedlab.registry import generators, make_policy
    from schedlab.simulator.config import ClusterConfig
    from schedlab.simulator.run import run_policy, simulate

    if part == "multicluster":
        liu = generators.make("liu-multicluster").generate(0.5, n_jobsets=1, seed=0)
        simulate(liu, [make_policy("liu-maf")])
        return time.perf_counter() - t0
    jobs = generators.make("deeprm").generate_sweep([0.8], n_jobsets=2, seed=0)
    whole, slots = ClusterConfig(slots=None), ClusterConfig(slots=10)
    if part == "dag":
        jobs = generators.make("dag").generate(0.8, n_jobsets=1, seed=0)
    if part == "tree":  # and the timeline and allocation every report of a schedule draws
        from schedlab.evaluation.allocation import allocate
        from schedlab.evaluation.schedules import schedules
        from schedlab.evaluation.timeline import timeline

        s = schedules(simulate(jobs, [make_policy("fcfs")], whole), jobs)
        timeline(s)
        first = s.jobs.filter(s.jobs.get_column("jobset") == s.jobs.item(0, "jobset"))
        allocate(first, s.resources[0], s.capacity[0])
        return time.perf_counter() - t0
    if part == "pick":
        import numpy as np

        from schedlab.simulator.pick.engine import PickConfig, PickEngine
        from schedlab.simulator.pick.env import PickEnv, PickVectorEnv

        for env in (PickVectorEnv(jobs, 2, window=20), PickEnv(jobs, window=20)):
            _, info = env.reset(seed=0)
            mask = info["action_mask"] if "action_mask" in info else env.action_masks()
            env.step(mask.argmax(axis=-1))
        engine = PickEngine.for_jobsets(jobs, PickConfig())  # as simulate runs a pick agent
        engine.reset()
        active = np.arange(engine.state.stalled.size)
        engine.step(engine.action_mask(active).argmax(axis=-1), active)
        return time.perf_counter() - t0
    specs = {
        "scan": [("wfp3", whole), ("random", slots)],
        "easy": [("fcfs+easy", whole)],
        "conservative": [("fcfs+conservative", whole)],
        "dag": [("cpf", whole), ("cpf", slots), ("fcfs+easy", whole)],
        "agents": [],
    }[part]
    for spec, config in specs:
        run_policy(jobs, make_policy(spec), config)
    if part == "agents":
        from schedlab.simulator.cluster.batched import BatchedEngine
        from schedlab.simulator.views.deeprm_image import DeepRMImage

        run_policy(jobs, make_policy("sjf"), slots, engine="batched")
        DeepRMImage().observe(BatchedEngine.from_jobset(jobs, slots).snapshot())
    return time.perf_counter() - t0


@click.command("compile", cls=Command)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes compiling at once (default: the CPUs, at most 4).",
)
def compile_cmd(workers: int | None) -> None:
    """Compile the simulator's kernels now (once per installation; later runs load them).

    A first simulation otherwise compiles the kernel it needs (about 10 s each, said on one
    line before it starts); make venv runs this once, in parallel.
    """
    workers = workers or min(4, os.cpu_count() or 1)
    click.echo(
        f"compiling the simulator's kernels in {workers} processes (once per "
        "installation, about a minute)..."
    )
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(compile_part, part): part for part in PARTS}
        for future in as_completed(futures):
            part = futures[future]
            click.echo(f"  {PARTS[part]}: {future.result():.1f} s")
    click.echo(f"compiled in {time.perf_counter() - t0:.0f} s")
