"""The Lublin–Feitelson model (Lublin & Feitelson 2003, "The workload on parallel supercomputers:
modeling the characteristics of rigid jobs"): its published parameters, as the reference code
``m_lublin99.c`` draws them, at a target load."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import special, stats

from schedlab.cli import main
from schedlab.errors import ParameterError
from schedlab.evaluation.spec import load_spec
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders import check_generator
from schedlab.loaders.generators.estimates import MODAL_SECONDS
from schedlab.loaders.generators.lublin import (
    LublinGenerator,
    capped_gamma,
    draw_runtimes,
    draw_sizes,
)
from schedlab.loaders.generators.lublin_model import (
    BATCH,
    CLASSES,
    COMBINED,
    INTERACTIVE,
    JobClass,
    daily_weights,
    mean_interval,
    mean_runtime,
    mean_work,
    size_pmf,
    table,
)
from schedlab.registry import generators
from tests.loader_helpers import assert_seed_reproducible
from tests.spec_helpers import spec_toml, write_spec

POWERS = [2**k for k in range(8)]
DOCS = Path(__file__).parents[3] / "docs" / "workloads.md"


@pytest.fixture(scope="module")
def week_jobs() -> tuple[LublinGenerator, JobSet]:
    """100 weeks from midnight at load 0.7: ~210,000 jobs, 30,000 of them batch."""
    gen = LublinGenerator(start_hour=0.0)
    return gen, gen.generate(0.7, n_jobsets=100, seed=7)


def _class(js: JobSet, job: JobClass) -> tuple[np.ndarray, np.ndarray]:
    rows = js.jobs.filter(pl.col("category") == job.name)
    return rows["procs"].to_numpy().astype(np.int64), rows["duration"].to_numpy()


def test_cli_writes_processors_in_seconds(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    args = ["generate", "lublin", "--load", "0.7", "--jobsets", "3", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    js = JobSet.read_parquet(out)
    assert (js.resources, js.meta.capacity, js.meta.units) == (("procs",), (128.0,), ("processor",))
    assert js.meta.time_step_seconds == 1.0
    assert js.meta.arrival_window == 7 * 86_400
    assert js.meta.provenance["generator"] == "lublin"
    assert 0.8 < js.meta.provenance["knob"][0]["aarr_factor"] < 1  # load 0.7 > natural 0.40
    assert set(js.jobs["category"].unique()) == {"batch", "interactive"}


def test_same_seed_same_jobsets() -> None:
    assert_seed_reproducible(LublinGenerator(window=86_400), 0.7, n_jobsets=3)


@pytest.mark.parametrize(
    "params",
    [{"load_knob": "time", "job_classes": "combined"}, {"start_hour": 8.5, "processors": 256}],
)
def test_conforms_with_other_parameters(params: dict[str, object]) -> None:
    check_generator("lublin", params=params)


def test_published_parameters() -> None:
    assert (BATCH.serial_prob, BATCH.pow2_prob, BATCH.uprob) == (0.2927, 0.6686, 0.875)
    runtime = [BATCH.a1, BATCH.b1, BATCH.a2, BATCH.b2, BATCH.pa, BATCH.pb]
    assert runtime == [6.57, 0.823, 639.1, 0.0156, -0.003, 0.6986]
    assert (INTERACTIVE.aarr, INTERACTIVE.barr, INTERACTIVE.arar) == (6.5510, 0.6621, 0.9797)
    assert (COMBINED.anum, COMBINED.bnum) == (8.1737, 3.9631)
    # the unscaled model on its 128 processors: jobs a day, and offered load
    per_day = {c.name: 86_400 / mean_interval(c) for c in CLASSES.values()}
    assert per_day == pytest.approx(
        {"batch": 24.57, "interactive": 139.51, "combined": 94.81}, abs=0.01
    )
    assert LublinGenerator().load_for_rate(164.08 / 86_400) == pytest.approx(0.4005, abs=1e-4)
    combined = LublinGenerator(job_classes="combined")
    assert combined.rate_for_load(0.7221) * 86_400 == pytest.approx(94.81, rel=1e-3)


@pytest.mark.parametrize("job", [BATCH, INTERACTIVE, COMBINED])
def test_analytic_sizes_and_runtimes_match_draws(job: JobClass) -> None:
    rng = np.random.default_rng(3)
    sizes = draw_sizes(rng, job, 128, 200_000)
    pmf = size_pmf(job, 128)
    assert pmf.sum() == pytest.approx(1.0)
    empirical = np.bincount(sizes, minlength=129) / sizes.size
    assert 0.5 * np.abs(empirical - pmf).sum() < 0.01  # total variation
    runtime = draw_runtimes(rng, job, sizes)
    assert runtime.min() >= 1
    assert runtime.max() <= math.exp(12)
    expected = np.sum(pmf * mean_runtime(job, np.arange(129)))
    assert runtime.mean() == pytest.approx(expected, rel=0.05)
    assert np.mean(sizes * runtime) == pytest.approx(mean_work(job, 128), rel=0.05)


@pytest.mark.parametrize("job", [BATCH, INTERACTIVE])
def test_sizes_serial_and_powers_of_two(
    week_jobs: tuple[LublinGenerator, JobSet], job: JobClass
) -> None:
    sizes, _ = _class(week_jobs[1], job)
    n = sizes.size
    assert n > 30_000
    sd = math.sqrt(0.25 / n)
    assert np.mean(sizes == 1) == pytest.approx(job.serial_prob, abs=4 * sd)
    pow2 = np.isin(sizes, POWERS).mean()
    assert pow2 == pytest.approx(size_pmf(job, 128)[POWERS].sum(), abs=4 * sd)
    assert pow2 >= job.serial_prob + job.pow2_prob - 4 * sd  # others may round to one too
    assert sizes.max() == (128 if job is BATCH else 45)  # 2**uhi: 2**7, 2**5.5


@pytest.mark.parametrize("job", [BATCH, INTERACTIVE])
def test_runtimes_grow_with_size(week_jobs: tuple[LublinGenerator, JobSet], job: JobClass) -> None:
    sizes, runtime = _class(week_jobs[1], job)
    rho, p = stats.spearmanr(sizes, runtime)
    assert rho > 0.05
    assert p < 1e-9
    # p = pa · size + pb: the first (short) gamma is drawn less often for larger jobs
    assert np.median(runtime[sizes >= 16]) > 1.5 * np.median(runtime[sizes == 1])
    assert np.mean(runtime[sizes >= 16] > 3600) > np.mean(runtime[sizes == 1] > 3600) + 0.01


def test_daily_cycle(week_jobs: tuple[LublinGenerator, JobSet]) -> None:
    gen, js = week_jobs
    hour = js.jobs["arrival"].to_numpy() % 86_400 // 3600
    counts = np.bincount(hour, minlength=24)
    rates = gen.class_rates(gen.rate_for_load(0.7))
    weights = sum(r * daily_weights(c) for r, c in zip(rates, gen.classes(), strict=True))
    expected = np.asarray(weights).reshape(24, 2).sum(axis=1)
    peak, night = slice(11, 16), slice(2, 6)
    ratio = counts[peak].sum() / counts[night].sum()
    assert ratio > 5  # 11:00-16:00 against 02:00-06:00
    assert ratio == pytest.approx(expected[peak].sum() / expected[night].sum(), rel=0.2)
    assert np.argmax(counts) in range(12, 16)


@pytest.mark.parametrize("knob", ["aarr", "time"])
@pytest.mark.parametrize(("load", "weeks"), [(0.3, 300), (1.2, 150)])
def test_realised_load_matches_target(knob: str, load: float, weeks: int) -> None:
    gen = LublinGenerator(load_knob=knob)  # type: ignore[arg-type]
    # bursty arrivals: the pooled load of 300 weeks has a relative sd of 1.5-2.8% (30 seeds,
    # whose mean is within 0.1% of the target at both loads and knobs)
    js = gen.generate(load, n_jobsets=weeks, seed=12)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.08)
    expected_jobs = weeks * gen.window * gen.rate_for_load(load)
    assert len(js) == pytest.approx(expected_jobs, rel=0.08)
    assert gen.load_for_rate(gen.rate_for_load(load)) == pytest.approx(load, rel=1e-9)


def test_knobs() -> None:
    aarr, time = LublinGenerator(), LublinGenerator(load_knob="time")
    unscaled = (BATCH, INTERACTIVE)
    natural = aarr.load_for_rate(sum(1 / mean_interval(c) for c in unscaled))
    assert aarr.knob(aarr.rate_for_load(natural)) == pytest.approx((1.0, 1.0))
    assert time.knob(time.rate_for_load(2 * natural)) == pytest.approx((1.0, 0.5))
    assert time.rate_for_load(0.9) == pytest.approx(3 * time.rate_for_load(0.3))  # linear
    # the time knob keeps the classes' shares, the aarr knob moves them
    shares = {
        (k.load_knob, x): k.class_rates(k.rate_for_load(x))
        for k in (aarr, time)
        for x in (0.3, 1.2)
    }
    share = {k: v[0] / v.sum() for k, v in shares.items()}
    assert share["time", 0.3] == pytest.approx(share["time", 1.2])
    assert abs(share["aarr", 0.3] - share["aarr", 1.2]) > 0.01
    # a fixed start time of day with a window of whole days: the same rate as a random one
    at_five = LublinGenerator(start_hour=5.0)
    assert at_five.rate_for_load(0.7) == pytest.approx(aarr.rate_for_load(0.7))
    # two hours from noon, the busiest: gaps stretched more than over whole days
    noon = LublinGenerator(start_hour=12.0, window=7200, load_knob="time")
    assert noon.knob(noon.rate_for_load(0.7))[1] > 1.5 * time.knob(time.rate_for_load(0.7))[1]


@pytest.mark.parametrize(("a", "b"), [(6.35, 0.85), (18.0, 0.85)])
def test_capped_gamma_draws_the_truncated_law(a: float, b: float) -> None:
    x = capped_gamma(np.random.default_rng(5), a, b, 13.0, 20_000)
    assert x.max() <= 13.0
    top = special.gammainc(a, 13.0 / b)  # 0.99 (redrawn above the cap) or 0.35 (inverse CDF)
    assert stats.kstest(x, lambda v: special.gammainc(a, v / b) / top).pvalue > 0.001


def test_estimates_are_in_seconds() -> None:
    js = LublinGenerator(estimate="modal", window=86_400).generate(0.7, n_jobsets=5, seed=2)
    estimate, duration = js.jobs["estimate"].to_numpy(), js.jobs["duration"].to_numpy()
    assert (estimate >= duration).all()
    fits = estimate <= MODAL_SECONDS[-1]
    assert np.isin(estimate[fits], MODAL_SECONDS).all()


def test_bad_parameters() -> None:
    with pytest.raises(ParameterError, match="processors"):
        generators.make("lublin", processors=4)
    with pytest.raises(ValueError, match="processors must be an int >= 8"):
        LublinGenerator(processors=4)
    with pytest.raises(ValueError, match=r"start_hour must be in \[0, 24\)"):
        LublinGenerator(start_hour=24.0)
    with pytest.raises(ValueError, match=r"beyond the aarr knob.*load_knob='time'"):
        LublinGenerator().rate_for_load(5000.0)
    assert LublinGenerator(load_knob="time").rate_for_load(5000.0) > 0
    with pytest.raises(ValueError, match="gamma scales"):
        JobClass(**{**{f: getattr(BATCH, f) for f in BATCH.__slots__}, "barr": 1.2})  # type: ignore[arg-type]


def test_docs_table_is_the_code() -> None:
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    rows = table()
    assert len(rows) == 17
    for row in rows:
        (line,) = (x for x in lines if x.startswith(f"| `{row['parameter']}` |"))
        values = [float(cell) for cell in line.strip("|").split("|")[2:]]
        assert values == [row[c] for c in CLASSES], line


def test_spec_rates_become_loads_through_the_knob(tmp_path: Path) -> None:
    text = spec_toml('"sjf"', name="t", reference="sjf", loads="[0.5]", jobsets=2)
    text = text.replace('"deeprm"', '"lublin"').replace("loads = [0.5]", "rates = [0.002, 0.004]")
    (w,) = load_spec(write_spec(tmp_path, text)).workloads
    gen = LublinGenerator()
    assert w.loads == pytest.approx((gen.load_for_rate(0.002), gen.load_for_rate(0.004)))
    assert w.loads[1] < 0.98 * 2 * w.loads[0]  # not proportional: the aarr knob moves the mix
