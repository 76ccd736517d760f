"""The ``schedlab`` command line: generate, simulate, report, demo (``schedlab --help``).

Options are shared across subcommands: ``-o/--output`` names what is written, ``--seed`` the
seed, ``--jobsets`` jobsets per load, ``--load`` a target offered load (repeatable; ``0.7`` or
``70%``), ``--policy`` a policy spec (repeatable; ``sjf``, ``tetris:knob=0.3``).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from schedlab import __version__
from schedlab.errors import SchedlabError
from schedlab.registry import generators, loaders, make_policy, parse_spec, policies

HEURISTIC_ORDER = ("random", "fcfs", "sjf", "packer", "tetris", "hrrn")
DEMO_LOADS = tuple(round(0.1 + 0.2 * i, 1) for i in range(10))  # 10% .. 190%


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn schedlab's own errors into one-line CLI errors (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (SchedlabError, ValueError, OSError) as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _parse_load(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list:
    loads = []
    for raw in (v for value in values for v in value.split(",") if v.strip()):
        text = raw.strip()
        try:
            load = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            msg = f"{raw!r} is not a load (use 0.7 or 70%)"
            raise click.BadParameter(msg) from None
        if load <= 0:
            msg = f"load must be > 0, got {raw!r}"
            raise click.BadParameter(msg)
        loads.append(load)
    return loads


def _output_option(
    help_text: str, *, file_okay: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The required ``-o/--output`` option (a file, or a directory with ``file_okay=False``)."""
    kind = click.Path(path_type=Path, file_okay=file_okay)
    return click.option("-o", "--output", type=kind, required=True, help=help_text)


def _param_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The repeatable ``-p/--param KEY=VALUE`` option, passed to a constructor or loader."""
    return click.option(
        "--param", "-p", "params", multiple=True, metavar="KEY=VALUE", help=help_text
    )


def _cluster_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--slots", default=10, show_default=True, help="Visible job slots M.")(fn)
    return click.option("--horizon", default=20, show_default=True, help="Horizon T (steps).")(fn)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedlab")
def main() -> None:
    """Evaluate cluster job schedulers on synthetic workloads and real traces."""


@main.command("generate")
@click.argument("generator", type=click.Choice(generators.names(), case_sensitive=False))
@click.option(
    "--load",
    "loads",
    multiple=True,
    callback=_parse_load,
    help="Target offered load (repeatable, or comma-separated): 0.7 or 70%.",
)
@click.option(
    "--rate",
    "rates",
    multiple=True,
    type=float,
    help="Mean arrivals per step λ instead of --load (repeatable), e.g. 0.7.",
)
@click.option("--jobsets", default=100, show_default=True, help="Jobsets per load.")
@click.option("--seed", default=0, show_default=True, help="Seed of the whole collection.")
@_param_option("Generator parameter, e.g. -p variant=paper -p arrivals=poisson.")
@click.option(
    "--model",
    "model_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="model.json of the `fitted` generator (written by `schedlab fit`; = -p model=PATH).",
)
@_output_option("JobSet Parquet file to write.")
@_friendly
def generate_cmd(
    generator: str,
    loads: list[float],
    rates: tuple[float, ...],
    jobsets: int,
    seed: int,
    params: tuple[str, ...],
    model_path: Path | None,
    output: Path,
) -> None:
    """Generate synthetic jobsets with GENERATOR at one or more offered loads."""
    from schedlab.jobset import offered_load

    if bool(loads) == bool(rates):
        msg = "give either --load or --rate"
        raise click.UsageError(msg)
    _, kwargs = parse_spec(generator + ":" + ",".join(params))
    if model_path is not None:
        if generator.lower() != "fitted":
            msg = f"--model is a parameter of the `fitted` generator, not of {generator!r}"
            raise click.UsageError(msg)
        kwargs["model"] = str(model_path)
    try:
        gen = generators.make(generator, **kwargs)
    except TypeError as exc:
        msg = f"generator {generator!r}: {exc}"
        raise ValueError(msg) from exc
    if rates:
        js = gen.generate_rates(list(rates), n_jobsets=jobsets, seed=seed)
        loads = js.meta.provenance["loads"]
    else:
        js = gen.generate_sweep(loads, n_jobsets=jobsets, seed=seed)
    js.write_parquet(output)
    realised = offered_load(js)["load"].item() if len(js) else 0.0
    click.echo(
        f"wrote {output}: {len(js)} jobs in {len(js.jobset_ids)} jobsets "
        f"({len(js.meta.empty_jobsets)} empty), loads {loads}, "
        f"pooled realised load {realised:.3f}"
    )


@main.command("fit")
@click.argument("jobs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--censored-column",
    help="Boolean column of still-running (right-censored) jobs "
    "(default: a `censored` column if present).",
)
@click.option(
    "--family",
    "families",
    multiple=True,
    help="Duration family to compare (repeatable; default: all).",
)
@click.option(
    "--select",
    "selection",
    type=click.Choice(["aic", "bic"]),
    default="aic",
    show_default=True,
    help="Criterion choosing the duration family.",
)
@click.option(
    "--demand-classes",
    default=4,
    show_default=True,
    help="Duration classes the demand table is conditioned on (1: none).",
)
@click.option("--window", type=int, help="Arrival window (steps) of generated jobsets.")
@click.option(
    "--holdout",
    default=0.3,
    show_default=True,
    help="Share of the observed time held out (the end) for out-of-sample checks.",
)
@click.option(
    "--subsample",
    default=200_000,
    show_default=True,
    help="Completed jobs used for the KS/AD distances.",
)
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Run the heuristics on trace windows and on synthetic jobsets.",
)
@click.option("--check-jobsets", default=30, show_default=True, help="Jobsets per side.")
@click.option("--check-load", type=float, help="Offered load of the check (default: matched).")
@click.option("--seed", default=0, show_default=True, help="Seed of subsamples and the check.")
@_cluster_options
@_output_option("Directory for model.json and the fit report.", file_okay=False)
@_friendly
def fit_cmd(
    jobs: Path,
    censored_column: str | None,
    families: tuple[str, ...],
    selection: str,
    demand_classes: int,
    window: int | None,
    holdout: float,
    subsample: int,
    check: bool,
    check_jobsets: int,
    check_load: float | None,
    seed: int,
    slots: int,
    horizon: int,
    output: Path,
) -> None:
    """Fit a workload model to the JobSet JOBS; write OUTPUT/model.json and a fit report.

    Generate from it with `schedlab generate fitted --model OUTPUT/model.json --load 0.9 ...`.
    """
    from schedlab.evaluation.fitting.check import heuristic_check
    from schedlab.evaluation.fitting.workload import fit
    from schedlab.jobset import JobSet
    from schedlab.loaders.workload.families import FAMILIES
    from schedlab.reports.fit_report import write_fit_report
    from schedlab.simulator.config import ClusterConfig

    t0 = time.perf_counter()
    js = JobSet.read_parquet(jobs)
    result = fit(
        js,
        censored=censored_column,
        families=families or FAMILIES,
        selection=selection,  # type: ignore[arg-type]
        demand_classes=demand_classes,
        window=window,
        holdout=holdout,
        subsample=subsample,
        seed=seed,
    )
    model_path = output / "model.json"
    result.save(model_path)
    m = result.model
    click.echo(
        f"fitted {len(js):,} jobs in {time.perf_counter() - t0:.1f} s: durations "
        f"{m.durations.family} ({selection.upper()}), arrivals "
        f"{result.arrivals.filter(result.arrivals['selected'])['model'][0]}; "
        f"wrote {model_path}"
    )
    outcome = None
    if check:
        config = ClusterConfig(slots=slots, horizon=horizon)
        outcome = heuristic_check(
            js, model_path, n_jobsets=check_jobsets, load=check_load, seed=seed, config=config
        )
        click.echo(
            f"check at load {outcome.load:.3g}: Kendall tau of the heuristics' order "
            f"trace vs synthetic = {outcome.kendall_tau:.2f} by mean slowdown, "
            f"{outcome.kendall_tau_ranks:.2f} by average rank"
        )
    paths = write_fit_report(result, output, check=outcome, title=f"Workload fit of {jobs.name}")
    click.echo(f"report: {paths['html']}  (Markdown: {paths['md']})")


@main.command("load")
@click.argument("loader", type=click.Choice(loaders.names(), case_sensitive=False))
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--time-step", default=1.0, show_default=True, help="Seconds per time step.")
@click.option("--start", type=float, help="Keep arrivals from this many s after the first.")
@click.option("--end", type=float, help="Keep arrivals before this many s after the first.")
@click.option("--machines", default=1, show_default=True, help="Cluster size in machines.")
@click.option("--slots-per-machine", type=float, help="Rescale a machine to N units/resource.")
@click.option("--sample", type=int, help="Keep a random sample of N jobs.")
@click.option("--seed", default=0, show_default=True, help="Seed of --sample.")
@click.option("--jobset-window", type=float, help="Split into jobsets of this many seconds.")
@click.option("--jobset-size", type=int, help="Split into jobsets of this many jobs.")
@click.option("--strict", is_flag=True, help="Fail on the first malformed row.")
@_param_option("Format option, e.g. -p granularity=job (see the loader's docstring).")
@click.option("--no-cache", is_flag=True, help="Parse again even if a cached conversion exists.")
@_output_option("JobSet Parquet file to write.")
@_friendly
def load_cmd(
    loader: str,
    path: Path,
    time_step: float,
    start: float | None,
    end: float | None,
    machines: int,
    slots_per_machine: float | None,
    sample: int | None,
    seed: int,
    jobset_window: float | None,
    jobset_size: int | None,
    strict: bool,
    params: tuple[str, ...],
    no_cache: bool,
    output: Path,
) -> None:
    """Load a trace at PATH with LOADER into a JobSet, reporting every dropped or fixed row."""
    import polars as pl

    from schedlab.jobset import offered_load
    from schedlab.loaders.traces.load import load_trace
    from schedlab.loaders.traces.transform import TraceOptions

    options = TraceOptions(
        time_step=time_step, start=start, end=end, machines=machines,
        slots_per_machine=slots_per_machine, sample=sample, seed=seed,
        jobset_window=jobset_window, jobset_size=jobset_size, strict=strict,
    )  # fmt: skip
    _, kwargs = parse_spec(loader + ":" + ",".join(params))
    t0 = time.perf_counter()
    result, cached = load_trace(loader, path, options=options, use_cache=not no_cache, **kwargs)
    js = result.jobs
    js.write_parquet(output)
    click.echo(result.report.summary())
    spans = js.jobs.group_by("jobset").agg(pl.col("arrival").max() - pl.col("arrival").min() + 1)
    span = int(spans.get_column("arrival").sum()) if len(js) else 0
    load = offered_load(js)["load"].item() if len(js) else 0.0
    click.echo(
        f"{len(js):,} jobs in {len(js.jobset_ids)} jobsets, span {span:,} steps of "
        f"{time_step:g} s, offered load {load:.3f} on capacity "
        f"{dict(zip(js.resources, js.meta.capacity, strict=True))}"
    )
    how = "from the cache" if cached else "parsed"
    click.echo(f"wrote {output} ({how}, {time.perf_counter() - t0:.1f} s)")


@main.group("traces")
def traces_group() -> None:
    """Public traces: fetch them from their official locations."""


@traces_group.command("fetch")
@click.argument("dataset")
@click.option(
    "--files",
    "files",
    multiple=True,
    default=("batch_task",),
    show_default=True,
    help="Files of the dataset to fetch (repeatable).",
)
@click.option(
    "--dest",
    type=click.Path(path_type=Path),
    default=Path("traces-data"),
    show_default=True,
    help="Directory to download into.",
)
@click.option("--base-url", help="Fetch from this location instead of the official ones.")
@_friendly
def fetch_cmd(dataset: str, files: tuple[str, ...], dest: Path, base_url: str | None) -> None:
    """Download DATASET (e.g. alibaba2018), resuming and verifying published checksums."""
    from schedlab.traces.fetch import fetch

    for path in fetch(dataset, files, dest=dest, base_url=base_url):
        click.echo(f"verified {path}")


@main.command("simulate")
@click.argument("jobs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    "policy_specs",
    multiple=True,
    metavar="SPEC",
    help="Policy spec, repeatable (default: every heuristic). "
    f"Known: {', '.join(policies.names())}.",
)
@_cluster_options
@_output_option("Results Parquet file to write.")
@_friendly
def simulate_cmd(
    jobs: Path, policy_specs: tuple[str, ...], slots: int, horizon: int, output: Path
) -> None:
    """Simulate policies on every jobset of JOBS and write per-job results."""
    results = _simulate(jobs, policy_specs or HEURISTIC_ORDER, slots, horizon)
    results.write_parquet(output)
    click.echo(f"wrote {output}: {results.table.height} job results for {results.policies}")


def _simulate(jobs: Path, specs: tuple[str, ...], slots: int, horizon: int) -> Any:
    from tqdm import tqdm

    from schedlab.jobset import JobSet
    from schedlab.results import Results
    from schedlab.simulator.config import ClusterConfig
    from schedlab.simulator.run import simulate

    js = JobSet.read_parquet(jobs)
    config = ClusterConfig(slots=slots, horizon=horizon)
    parts = []
    for spec in tqdm(specs, desc="simulating", unit="policy", disable=None):
        t0 = time.perf_counter()
        parts.append(simulate(js, [make_policy(spec)], config))
        tqdm.write(f"  {spec}: {len(js)} jobs in {time.perf_counter() - t0:.2f} s")
    return Results.concat(parts)


@main.command("report")
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("out"),
    show_default=True,
    help="Directory for the report.",
)
@click.option("--seed", type=int, help="Seed of the bootstrap (default: the experiment's, or 0).")
@click.option("--reference", help="Reference policy (default: the spec's, or the first policy).")
@_friendly
def report_cmd(results: Path, output: Path, seed: int | None, reference: str | None) -> None:
    """Render RESULTS (a results Parquet file or an experiment directory) as HTML and Markdown.

    CSV tables and PNG figures are written beside the report.
    """
    if results.is_dir():
        from schedlab.reports.experiment import write_experiment_report

        paths = write_experiment_report(results, output, seed=seed, reference=reference)
    else:
        from schedlab.reports.render import write_report
        from schedlab.results import Results

        res = Results.read_parquet(results)
        paths = write_report(res, output, seed=seed or 0, reference=reference)
    click.echo(f"report: {paths['html']}  (Markdown: {paths['md']})")


@main.group("experiment")
def experiment_group() -> None:
    """Experiments from a spec file (TOML): workloads x loads x policies, resumable."""


@experiment_group.command("run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_output_option("Experiment directory; runs already done there are skipped.", file_okay=False)
@click.option("--workers", type=int, help="Worker processes (default: the CPU count).")
@_friendly
def experiment_run_cmd(spec: Path, output: Path, workers: int | None) -> None:
    """Run every (workload, load, policy) of SPEC not yet done into OUTPUT."""
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec

    outcome = run_experiment(load_spec(spec), output, workers=workers)
    _experiment_summary(outcome)
    _fail_on_failures(outcome)


def _experiment_summary(outcome: Any) -> None:
    """Print what an experiment run did."""
    click.echo(
        f"{outcome.n_runs} runs: {outcome.ran} run now, {outcome.skipped} already done, "
        f"{len(outcome.failures)} failed ({outcome.wall_s:.1f} s) -> {outcome.out_dir}"
    )


def _fail_on_failures(outcome: Any) -> None:
    """Exit with status 1, listing the runs that failed, if any did."""
    if outcome.failures:
        lines = "\n".join(f"  {rid}: {err}" for rid, err in sorted(outcome.failures.items()))
        msg = (f"{len(outcome.failures)} runs failed (tracebacks in "
               f"{outcome.out_dir / 'errors'}):\n{lines}")  # fmt: skip
        raise click.ClickException(msg)


@main.command("demo")
@click.option("--jobsets", default=100, show_default=True, help="Jobsets per load.")
@click.option("--seed", default=0, show_default=True, help="Seed of workload and bootstrap.")
@click.option(
    "--load",
    "loads",
    multiple=True,
    callback=_parse_load,
    help="Offered loads (default 10%..190% in steps of 20%).",
)
@_cluster_options
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("out"),
    show_default=True,
    help="Directory for jobsets, results and report.",
)
@_friendly
def demo_cmd(
    jobsets: int, seed: int, loads: list[float], slots: int, horizon: int, output: Path
) -> None:
    """The DeepRM study: every heuristic (and shipped DeepRM checkpoints) at loads 10%–190%.

    Writes the study as an experiment spec (OUTPUT/spec.toml), runs it with the experiment
    runner into OUTPUT and writes the report there.
    """
    from schedlab.evaluation.demo import demo_spec
    from schedlab.evaluation.runner import run_experiment
    from schedlab.evaluation.spec import load_spec
    from schedlab.io import write_text_atomic
    from schedlab.reports.experiment import write_experiment_report

    t0 = time.perf_counter()
    text = demo_spec(jobsets=jobsets, seed=seed, loads=list(loads or DEMO_LOADS), slots=slots,
                     horizon=horizon)  # fmt: skip
    write_text_atomic(output / "spec.toml", text)
    outcome = run_experiment(load_spec(output / "spec.toml"), output)
    _experiment_summary(outcome)
    paths = write_experiment_report(output, output)
    click.echo(json.dumps({k: str(v) for k, v in paths.items() if k in ("html", "md")}))
    click.echo(f"done in {time.perf_counter() - t0:.1f} s. Open the report: {paths['html']}")
    _fail_on_failures(outcome)


TRAIN_OPTIONS = {
    "workload": "workload",
    "load": "load",
    "jobsets": "n_jobsets",
    "rollouts": "rollouts",
    "iterations": "iterations",
    "objective": "objective",
    "seed": "seed",
    "gamma": "gamma",
    "lr": "lr",
    "hidden": "hidden",
    "slots": "slots",
    "horizon": "horizon",
    "backlog": "backlog",
    "window": "window",
    "eval_jobsets": "eval_jobsets",
    "eval_every": "eval_every",
    "checkpoint_every": "checkpoint_every",
    "threads": "threads",
}
"""CLI option -> TrainConfig field."""


@main.command("train")
@click.argument("algorithm", type=click.Choice(["deeprm"], case_sensitive=False))
@click.option(
    "--workload",
    default="deeprm",
    show_default=True,
    type=click.Choice(generators.names(), case_sensitive=False),
    help="Generator of the training and validation jobsets.",
)
@click.option("--load", "load", default="0.7", show_default=True, help="Offered load: 0.7 or 70%.")
@click.option("--jobsets", default=100, show_default=True, help="Training jobsets.")
@click.option("--rollouts", default=20, show_default=True, help="Episodes per jobset (N).")
@click.option("--iterations", default=1000, show_default=True, help="Training iterations.")
@click.option(
    "--objective",
    type=click.Choice(["slowdown", "completion"]),
    default="slowdown",
    show_default=True,
    help="Reward: -sum 1/T_j (slowdown) or -|J| (completion time) per step.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the whole run.")
@click.option("--gamma", default=1.0, show_default=True, help="Discount over decisions.")
@click.option("--lr", default=1e-3, show_default=True, help="RMSProp learning rate.")
@click.option("--hidden", default=20, show_default=True, help="Hidden units of the MLP.")
@_cluster_options
@click.option("--backlog", default=60, show_default=True, help="Backlog jobs shown.")
@click.option("--window", default=50, show_default=True, help="Arrival window (steps).")
@click.option("--eval-jobsets", default=100, show_default=True, help="Validation jobsets.")
@click.option("--eval-every", default=1, show_default=True, help="Validate every N iterations.")
@click.option("--checkpoint-every", default=10, show_default=True, help="Save last.pt every N.")
@click.option("--threads", default=1, show_default=True, help="torch threads.")
@_param_option("Generator parameter, e.g. -p variant=paper.")
@click.option("--resume", is_flag=True, help="Continue the run in OUTPUT where it stopped.")
@_output_option("Run directory (config, curves, checkpoints, report).", file_okay=False)
@click.pass_context
@_friendly
def train_cmd(
    ctx: click.Context,
    algorithm: str,
    params: tuple[str, ...],
    resume: bool,
    output: Path,
    **options: Any,
) -> None:
    """Train a learned policy (ALGORITHM: deeprm) and write its run directory.

    With --resume, options not given on the command line are taken from the saved run.
    """
    from schedlab.policies.reinforce import TrainConfig, train

    loads = _parse_load(ctx, None, (str(options["load"]),))  # type: ignore[arg-type]
    if len(loads) != 1:
        msg = f"train takes one --load, got {loads}"
        raise click.BadParameter(msg)
    options["load"] = loads[0]
    fields = {TRAIN_OPTIONS[k]: v for k, v in options.items()}
    fields["workload_params"] = parse_spec("x:" + ",".join(params))[1]
    saved = output / "config.json"
    if resume and saved.exists():
        base = json.loads(saved.read_text())["train_config"]
        given = {
            TRAIN_OPTIONS[k]
            for k in TRAIN_OPTIONS
            if ctx.get_parameter_source(k) is not click.core.ParameterSource.DEFAULT
        }
        if not params:
            given.discard("workload_params")
        else:
            given.add("workload_params")
        fields = {**base, **{k: v for k, v in fields.items() if k in given}}
    config = TrainConfig(**fields)
    result = train(config, output, resume=resume, progress=True)
    click.echo(
        f"trained {algorithm} in {result.seconds:.0f} s: best validation "
        f"{config.objective} {result.best_value:.3f} at iteration {result.best_iteration} "
        f"(SJF {result.baselines.get('sjf', float('nan')):.3f}, Tetris* "
        f"{result.baselines.get('tetris', float('nan')):.3f}) -> {output / 'best.pt'}; "
        f"report: {output / 'report.html'}"
    )


@main.command("list")
@click.argument("kind", type=click.Choice(["policies", "generators"]), default="policies")
def list_cmd(kind: str) -> None:
    """List registered policies or generators."""
    registry = policies if kind == "policies" else generators
    width = max(len(e.name) for e in registry)
    for entry in registry:
        click.echo(f"{entry.name:{width}s}  {entry.summary}")
