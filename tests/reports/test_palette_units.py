"""A stable colour per policy, the unit a report shows times in, and time axes people read."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from schedlab.evaluation.clock import Clock
from schedlab.reports.palette import COLORS, FIXED, policy_palette, preferred
from schedlab.reports.time_axis import TimeAxis
from schedlab.reports.units import display_scale

KTH = [
    "fcfs",
    "fcfs+strict",
    "fcfs+easy",
    "fcfs+conservative",
    "sjf+easy",
    "wfp3+easy",
    "unicep+easy",
    "f1+easy",
    "sjf",
]
DEMO = [
    "random",
    "fcfs",
    "sjf",
    "packer",
    "tetris",
    "hrrn",
    "wfp3",
    "unicep",
    "f1",
    "deeprm-0.7",
    "deeprm-1.3",
]


def test_built_in_policies_keep_one_colour_in_every_report() -> None:
    assert len(set(FIXED.values())) == len(FIXED)  # the table gives each its own colour
    kth, demo = policy_palette(KTH), policy_palette(DEMO)
    assert len(set(kth.values())) == len(KTH)
    assert len(set(demo.values())) == len(DEMO)
    for p in set(KTH) & set(DEMO):
        assert kth[p] == demo[p] == COLORS[FIXED[p]]
    assert policy_palette(["sjf"])["sjf"] == kth["sjf"]
    assert demo["deeprm-0.7"] == COLORS[FIXED["deeprm"]]  # a DeepRM policy takes DeepRM's


def test_any_name_has_a_stable_colour_and_a_report_never_repeats_one() -> None:
    assert preferred("my-policy") == preferred("my-policy")
    alone = policy_palette(["my-policy"])["my-policy"]
    assert policy_palette(["sjf", "my-policy"])["my-policy"] == alone  # no clash: same colour
    many = [f"p{i}" for i in range(len(COLORS))]
    assert len(set(policy_palette(many).values())) == len(COLORS)
    more = policy_palette([*many, "one-more"])  # beyond the palette: colours repeat, no error
    assert len(more) == len(COLORS) + 1


@pytest.mark.parametrize(
    ("value", "unit", "name"),
    [
        (353_943.0, "s", "d"),
        (6_837.0, "s", "h"),
        (600.0, "s", "min"),
        (30.0, "s", "s"),
        (None, "s", "s"),
        (4.2, "steps", "steps"),
    ],
)
def test_display_scale_picks_a_unit_for_the_values(
    value: float | None, unit: str, name: str
) -> None:
    assert display_scale(value, unit).name == name


def test_time_axes_show_dates_hours_or_steps() -> None:
    kth = TimeAxis(Clock(step=1.0, origin=844_079_881.0, zone="Europe/Stockholm"), 30 * 86_400)
    assert kth.dated
    assert kth.label() == "Date (Europe/Stockholm)"
    (first,) = kth.values(np.array([0.0]))
    assert str(first).startswith("1996-09-30T12:38:01")  # 10:38 UTC, summer time in Stockholm
    ax = Figure().subplots()
    kth.format(ax)
    assert ax.get_xlabel() == "Date (Europe/Stockholm)"
    hours = TimeAxis(Clock(step=10.0), 720.0)  # 2 hours of 10 s steps
    assert hours.unit == ("minutes", 6.0)
    assert hours.label() == "Time (minutes since the start)"
    assert hours.span_text(360.0) == "1 hour"
    assert TimeAxis(Clock(step=1.0), 10 * 86_400).unit[0] == "days"
    steps = TimeAxis(Clock(step=None), 50.0)
    assert steps.label() == "Time (steps)"
    assert steps.span_text(12) == "12 steps"
    np.testing.assert_array_equal(steps.values(np.array([3.0])), [3.0])
