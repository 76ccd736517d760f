"""``schedlab generate``: synthetic jobsets from a registered generator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from schedlab.cli.options import (
    Command,
    RegistryName,
    count_option,
    loads_option,
    output_option,
    param_option,
    seed_option,
)
from schedlab.registry import generators


@click.command("generate", cls=Command)
@click.argument("generator", type=RegistryName(generators))
@loads_option("Target offered load (repeatable, or comma-separated): 0.7 or 70%.")
@click.option(
    "--rate",
    "rates",
    multiple=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Mean arrivals per step λ instead of --load (repeatable), e.g. 0.7.",
)
@count_option("--jobsets", 100, "Jobsets per load.")
@seed_option("Seed of the whole collection.")
@param_option("Generator parameter, e.g. -p variant=paper -p arrivals=poisson.")
@click.option(
    "--model",
    "model_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="model.json of the `fitted` generator (written by `schedlab fit`; = -p model=PATH).",
)
@output_option("JobSet Parquet file to write.")
def generate_cmd(
    generator: str,
    loads: list[float],
    rates: tuple[float, ...],
    jobsets: int,
    seed: int,
    params: dict[str, Any],
    model_path: Path | None,
    output: Path,
) -> None:
    """Generate synthetic jobsets with GENERATOR at one or more offered loads.

    GENERATOR is a name of `schedlab list generators` (plug-ins included) or
    package.module:attr."""
    from schedlab.jobset import offered_load

    if bool(loads) == bool(rates):
        msg = "give either --load or --rate"
        raise click.UsageError(msg)
    if model_path is not None:
        if generator.lower() != "fitted":
            msg = f"--model is a parameter of the `fitted` generator, not of {generator!r}"
            raise click.UsageError(msg)
        params["model"] = str(model_path)
    gen = generators.create(generator, params, where="-p")
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
