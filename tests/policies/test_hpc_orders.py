"""WFP3, UNICEP and F1: hand-checked scores, and a real KTH window under EASY and conservative
backfilling."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from schedlab.policies.heuristics import F1, UNICEP, WFP3
from schedlab.registry import make_policy, policies
from schedlab.simulator.check import check_discipline, check_schedule
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.run import run_policy

KTH = Path(__file__).resolve().parents[2] / "traces" / "data" / "KTH-SP2-1996-2.swf.gz"


def score(cls: type, *, estimate: int, arrival: int, now: int, size: float) -> float:
    """The compiled score of ``cls`` for one job (features the HPC orders do not read are 0)."""
    return float(cls.score(estimate, arrival, 0, now, 0.0, 0.0, 1.0, size))


def test_wfp3_by_hand() -> None:
    # waited 20 steps on a 10-step request, 8 processors: (20 / 10)^3 * 8 = 64
    assert score(WFP3, estimate=10, arrival=5, now=25, size=8.0) == pytest.approx(64.0)
    assert score(WFP3, estimate=10, arrival=25, now=25, size=8.0) == 0.0


def test_unicep_by_hand() -> None:
    # 30 / (log2(8) * 5) = 2; one processor counts as two: 30 / (1 * 5) = 6
    assert score(UNICEP, estimate=5, arrival=0, now=30, size=8.0) == pytest.approx(2.0)
    assert score(UNICEP, estimate=5, arrival=0, now=30, size=1.0) == pytest.approx(6.0)


def test_f1_by_hand_lower_first() -> None:
    # log10(100) * 4 + 870 * log10(1000) = 8 + 2610, negated (higher score starts first)
    assert score(F1, estimate=100, arrival=1000, now=0, size=4.0) == pytest.approx(-2618.0)
    # arrival 0 counts as 1 (log10 = 0)
    assert score(F1, estimate=10, arrival=0, now=0, size=3.0) == pytest.approx(-3.0)
    assert math.isfinite(score(F1, estimate=1, arrival=0, now=0, size=1.0))


def test_registered_and_listed() -> None:
    assert {"wfp3", "unicep", "f1"} <= set(policies.names(tag="heuristic"))
    assert make_policy("wfp3+easy").queue == "easy"
    assert make_policy("unicep+conservative").queue == "conservative"


@pytest.fixture(scope="module")
def kth_window():
    """The first 2,000,000 s of the bundled KTH-SP2 log (one window, requests as estimates)."""
    from schedlab.loaders.traces.options import TraceOptions
    from schedlab.loaders.traces.swf import read_swf

    return read_swf(KTH, options=TraceOptions(end=2_000_000)).jobs


@pytest.mark.parametrize("spec", ["wfp3+easy", "unicep+conservative", "f1+easy", "wfp3",
                                  "f1+conservative"])  # fmt: skip
@pytest.mark.parametrize("overrun", ["kill", "extend"])
def test_hpc_orders_on_a_kth_window(kth_window, spec: str, overrun: str) -> None:
    config = ClusterConfig(slots=None, overrun=overrun)
    s = run_policy(kth_window, make_policy(spec), config)
    check_schedule(kth_window, s.start, s.machine, overrun=overrun)
    queue = make_policy(spec).queue
    if queue != "greedy":
        check_discipline(kth_window, s.start, queue, reserved=s.reserved, in_arrival_order=False)
