"""Liu et al.'s Uniform, Bernoulli and Beta arrival patterns (ICPP'20, §5, design.md §3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats

from schedlab.cli import main
from schedlab.jobset import JobSet, offered_load
from schedlab.loaders.generators.liu import (
    LiuBernoulliGenerator,
    LiuBetaGenerator,
    LiuGenerator,
    LiuUniformGenerator,
)
from schedlab.registry import generators
from tests.loader_helpers import assert_seed_reproducible

PATTERNS: list[type[LiuGenerator]] = [
    LiuUniformGenerator,
    LiuBernoulliGenerator,
    LiuBetaGenerator,
]


def _n_jobsets(gen: LiuGenerator, load: float, jobs: int = 60_000) -> int:
    """Jobsets holding about ``jobs`` jobs: enough for a realised load within ~0.6% (1 sd)."""
    return math.ceil(jobs / (gen.window * gen.rate_for_load(load)))


def _gaps(js: JobSet) -> np.ndarray:
    """Steps between consecutive arrivals within each jobset.

    A gap ``i`` is seen only if both its ends fall in the window, with weight ``w − i``: tests of
    the interval law use a long window (20,000 steps) so this bias (``E[I²] / w``) is negligible.
    """
    return (
        js.jobs.select(pl.col("arrival").diff().over("jobset").alias("gap"))
        .drop_nulls()
        .get_column("gap")
        .to_numpy()
    )


@pytest.mark.parametrize("cls", PATTERNS)
@pytest.mark.parametrize("load", [0.3, 0.7, 1.3, 1.9])
def test_realised_load_matches_target(cls: type[LiuGenerator], load: float) -> None:
    gen = cls()
    n = _n_jobsets(gen, load)
    js = gen.generate(load, n_jobsets=n, seed=23)
    assert offered_load(js)["load"].item() == pytest.approx(load, rel=0.03)
    assert len(js) == pytest.approx(n * 1000 * load / 1.845, rel=0.03)


@pytest.mark.parametrize("cls", PATTERNS)
def test_paper_defaults_give_load_0_1085(cls: type[LiuGenerator]) -> None:
    gen = cls()
    assert (gen.a, gen.b, gen.window) == (1, 33, 1000)
    assert gen.interval_mean() == pytest.approx(17.0)
    assert gen.natural_rate() == pytest.approx(1 / 17)
    assert gen.natural_load() == pytest.approx(1.845 / 17)
    assert gen.rate_for_load(gen.natural_load()) == pytest.approx(1 / 17)


def test_uniform_intervals_at_the_natural_load_are_uniform_on_1_to_33() -> None:
    gen = LiuUniformGenerator(window=20_000)
    gaps = _gaps(gen.generate(gen.natural_load(), n_jobsets=25, seed=1))
    assert gaps.size > 25_000
    values, counts = np.unique(gaps, return_counts=True)
    assert values.tolist() == list(range(1, 34))
    assert stats.chisquare(counts).pvalue > 0.001  # equal expected counts
    assert gaps.mean() == pytest.approx(17.0, abs=0.15)
    assert gaps.var() == pytest.approx((33**2 - 1) / 12, rel=0.03)


def test_uniform_parameters_move_the_support() -> None:
    gen = LiuUniformGenerator(a=3, b=8, window=5000)
    assert gen.natural_load() == pytest.approx(1.845 / 5.5)
    gaps = _gaps(gen.generate(gen.natural_load(), n_jobsets=10, seed=2))
    assert set(np.unique(gaps).tolist()) == set(range(3, 9))


@pytest.mark.parametrize(("p", "mean"), [(0.5, 17.0), (0.2, 7.4)])
def test_bernoulli_intervals_at_the_natural_load_are_two_point(p: float, mean: float) -> None:
    gen = LiuBernoulliGenerator(p=p, window=20_000)
    assert gen.interval_mean() == pytest.approx(mean)
    assert gen.interval_var() == pytest.approx(32**2 * p * (1 - p))
    gaps = _gaps(gen.generate(gen.natural_load(), n_jobsets=20, seed=3))
    assert set(np.unique(gaps).tolist()) == {1, 33}
    assert (gaps == 33).mean() == pytest.approx(p, abs=0.01)
    assert gaps.mean() == pytest.approx(mean, rel=0.02)
    assert gaps.var() == pytest.approx(gen.interval_var(), rel=0.04)


@pytest.mark.parametrize(("alpha", "beta"), [(2.0, 2.0), (0.5, 3.0)])
def test_beta_intervals_have_the_beta_mean_and_variance(alpha: float, beta: float) -> None:
    gen = LiuBetaGenerator(alpha=alpha, beta=beta, window=20_000)
    s = alpha + beta
    assert gen.interval_mean() == pytest.approx(1 + 32 * alpha / s)
    assert gen.interval_var() == pytest.approx(32**2 * alpha * beta / (s**2 * (s + 1)))
    x = gen.draw_intervals(np.random.default_rng(4), (200_000,))
    assert x.min() >= 1
    assert x.max() <= 33
    assert x.mean() == pytest.approx(gen.interval_mean(), rel=0.005)
    assert x.var() == pytest.approx(gen.interval_var(), rel=0.02)
    assert stats.kstest((x - 1) / 32, stats.beta(alpha, beta).cdf).pvalue > 0.001
    # arrival steps round the continuous times down: the gaps keep the mean
    gaps = _gaps(gen.generate(gen.natural_load(), n_jobsets=20, seed=4))
    assert gaps.mean() == pytest.approx(gen.interval_mean(), rel=0.02)


def test_beta_defaults_are_symmetric_and_smoother_than_uniform() -> None:
    beta, uniform = LiuBetaGenerator(), LiuUniformGenerator()
    assert (beta.alpha, beta.beta) == (2.0, 2.0)
    assert beta.interval_var() == pytest.approx(51.2)
    assert beta.interval_var() < uniform.interval_var() < LiuBernoulliGenerator().interval_var()


@pytest.mark.parametrize("cls", PATTERNS)
def test_length_biased_draws(cls: type[LiuGenerator]) -> None:
    """The first arrival's interval is length-biased: E[I*] = E[I²] / E[I]."""
    gen = cls()
    x = gen.draw_intervals(np.random.default_rng(5), (200_000,), size_biased=True)
    m = gen.interval_mean()
    assert x.mean() == pytest.approx((gen.interval_var() + m**2) / m, rel=0.01)
    assert x.min() >= 1
    assert x.max() <= 33


@pytest.mark.parametrize("cls", PATTERNS)
def test_scaled_patterns_keep_their_shape(cls: type[LiuGenerator]) -> None:
    """At load 0.7 the intervals are the pattern scaled to a mean of 1 / rate steps."""
    gen = cls()
    rate = gen.rate_for_load(0.7)
    gaps = _gaps(gen.generate(0.7, n_jobsets=100, seed=6))
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.02)
    cv2 = gen.interval_var() / gen.interval_mean() ** 2
    rounding = 1 / 6 * rate**2  # flooring adds about 1/6 step² of variance
    assert gaps.var() * rate**2 == pytest.approx(cv2 + rounding, rel=0.1)


@pytest.mark.parametrize("cls", PATTERNS)
def test_several_jobs_share_a_step_above_one_arrival_per_step(cls: type[LiuGenerator]) -> None:
    gen = cls()
    rate = gen.rate_for_load(1.9)
    assert rate > 1
    gaps = _gaps(gen.generate(1.9, n_jobsets=30, seed=7))
    assert (gaps == 0).mean() > 0.05
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.02)


@pytest.mark.parametrize("cls", PATTERNS)
def test_arrivals_are_stationary_over_the_window(cls: type[LiuGenerator]) -> None:
    """Window 50 at the natural rate: 50/17 = 2.94 jobs per jobset, spread evenly.

    A renewal process started at step 0 would hold about (1 − CV²) / 2 fewer: 13% for Uniform.
    """
    gen = cls(window=50)
    n = 20_000
    js = gen.generate(gen.natural_load(), n_jobsets=n, seed=8)
    assert len(js) / n == pytest.approx(50 / 17, rel=0.02)
    arrival = js.jobs.get_column("arrival").to_numpy()
    assert (arrival < 25).mean() == pytest.approx(0.5, abs=0.01)
    assert (arrival < 5).mean() == pytest.approx(0.1, abs=0.01)
    assert offered_load(js)["load"].item() == pytest.approx(gen.natural_load(), rel=0.03)


_draws: list[int] = []


@dataclass(frozen=True, kw_only=True, slots=True)
class _Understated(LiuBernoulliGenerator):
    """Bursty two-point intervals whose variance is understated: the first block falls short."""

    name: ClassVar[str] = "understated"

    def interval_var(self) -> float:
        return 0.0

    def draw_intervals(
        self, rng: np.random.Generator, size: tuple[int, ...], *, size_biased: bool = False
    ) -> np.ndarray:
        _draws.append(1)
        return LiuBernoulliGenerator.draw_intervals(self, rng, size, size_biased=size_biased)


def test_short_interval_blocks_are_extended() -> None:
    gen = _Understated(window=50, a=0, b=100, p=0.01)  # mean 1 step, mostly 0
    _draws.clear()
    js = gen.generate(1.845, n_jobsets=2000, seed=9)  # rate 1
    assert len(_draws) > 2  # first interval, first block, then at least one extension
    assert len(js) / 2000 == pytest.approx(50, rel=0.05)
    assert offered_load(js)["load"].item() == pytest.approx(1.845, rel=0.05)


def test_jobs_follow_the_deeprm_model() -> None:
    js = LiuUniformGenerator().generate(0.7, n_jobsets=100, seed=10)
    assert js.resources == ("cpu", "mem")
    assert js.meta.capacity == (10.0, 10.0)
    assert js.meta.arrival_window == 1000
    assert js.meta.length_buckets == {"short": (1, 3), "long": (10, 15)}
    dur = js.jobs.get_column("duration").to_numpy()
    short = dur <= 3
    assert short.mean() == pytest.approx(0.8, abs=0.02)
    assert set(np.unique(dur[short])) == {1, 2, 3}
    assert set(np.unique(dur[~short])) == set(range(10, 16))
    d = js.demands()
    dominant = d >= 5
    assert np.all(dominant.sum(axis=1) == 1)
    assert set(np.unique(d[dominant])) == set(range(5, 11))
    assert set(np.unique(d[~dominant])) == {1, 2}
    arrival = js.jobs.get_column("arrival")
    assert arrival.min() >= 0
    assert arrival.max() <= 999


def test_job_model_parameters_pass_through() -> None:
    gen = LiuBetaGenerator(n_resources=3, variant="paper", long_durations=(20, 20))
    js = gen.generate(0.5, n_jobsets=20, seed=11)
    assert js.resources == ("r0", "r1", "r2")
    assert js.meta.capacity == (20.0, 20.0, 20.0)
    assert set(js.jobs.get_column("duration").unique().to_list()) == {1, 2, 3, 20}
    assert offered_load(js)["load"].item() == pytest.approx(0.5, rel=0.1)


def test_provenance_records_pattern_load_and_rate() -> None:
    gen = LiuBernoulliGenerator(p=0.25)
    js = gen.generate_sweep([gen.natural_load(), 0.9], n_jobsets=10, seed=12)
    prov = js.meta.provenance
    assert prov["generator"] == "liu-bernoulli"
    assert prov["params"]["p"] == 0.25
    assert (prov["params"]["a"], prov["params"]["b"]) == (1, 33)
    assert prov["params"]["arrivals"] == "renewal"
    assert prov["params"]["window"] == 1000
    assert prov["loads"] == [gen.natural_load(), 0.9]
    assert prov["rates"] == pytest.approx([1 / 9, 0.9 / 1.845])
    assert prov["seed"] == 12


def test_arrivals_cannot_be_overridden() -> None:
    with pytest.raises(TypeError, match="arrivals"):
        LiuUniformGenerator(arrivals="poisson")


@pytest.mark.parametrize(
    ("gen", "match"),
    [
        (LiuUniformGenerator(a=5, b=4), r"liu-uniform: need 0 <= a <= b and b > 0"),
        (LiuUniformGenerator(a=-1), r"need 0 <= a <= b .* got a=-1, b=33"),
        (LiuUniformGenerator(a=0, b=0), r"need 0 <= a <= b and b > 0"),
        (LiuBernoulliGenerator(p=1.5), r"liu-bernoulli: need 0 <= p <= 1 .* got p=1.5"),
        (LiuBernoulliGenerator(a=0, p=0.0), r"a mean interval > 0"),
        (LiuBetaGenerator(alpha=0.0), r"liu-beta: need alpha > 0 and beta > 0, got 0.0, 2.0"),
        (LiuBetaGenerator(beta=-1.0), r"need alpha > 0 and beta > 0"),
    ],
)
def test_bad_parameters_are_rejected(gen: LiuGenerator, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        gen.generate(0.5, n_jobsets=2, seed=0)
    with pytest.raises(ValueError, match=match):
        gen.natural_load()


@pytest.mark.parametrize("cls", PATTERNS)
def test_same_seed_same_jobset_different_seed_differs(cls: type[LiuGenerator]) -> None:
    assert_seed_reproducible(cls(), 0.8, n_jobsets=20)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("liu-uniform", LiuUniformGenerator),
        ("liu-bernoulli", LiuBernoulliGenerator),
        ("liu-beta", LiuBetaGenerator),
    ],
)
def test_registry_makes_the_generators(name: str, cls: type[LiuGenerator]) -> None:
    gen = generators.make(name)
    assert type(gen) is cls
    assert gen.name == name
    assert generators.make(name.upper(), b=40).b == 40


def test_cli_generates_liu_patterns(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    args = ["generate", "liu-beta", "--load", "0.5", "--jobsets", "4", "--seed", "3"]
    params = ["-p", "alpha=0.5", "-p", "beta=3", "-p", "window=200"]
    result = CliRunner().invoke(main, [*args, *params, "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    js = JobSet.read_parquet(out)
    prov = js.meta.provenance
    assert prov["generator"] == "liu-beta"
    assert (prov["params"]["alpha"], prov["params"]["beta"]) == (0.5, 3)
    assert js.meta.arrival_window == 200
    assert prov["loads"] == [0.5]
    assert prov["rates"] == pytest.approx([0.5 / 1.845])
    expected = LiuBetaGenerator(alpha=0.5, beta=3, window=200).generate(0.5, n_jobsets=4, seed=3)
    assert js.jobs.equals(expected.jobs)
