"""A stable colour per policy: the same policy has the same colour in every report, however many
policies a report holds.

:data:`COLORS` holds 32 colours: seaborn's ``"colorblind"`` ten, its ``"dark"`` ten (the same
hues, darker: told apart by lightness and by the policy's dash pattern), and twelve evenly
spaced ``husl`` hues at a middle lightness. Built-in policies (job orders, their common queue
disciplines, the learned policies) have a fixed colour (:data:`FIXED`), chosen so that the
policies of the shipped studies (the DeepRM study, the KTH replay) are far apart; any other name
takes the colour its CRC-32 picks. When two policies of one report want the same colour, the
later one (fixed names first, then in order) takes the next free one, so a report never shows
two policies in one colour; only then can a name's colour differ between reports.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import seaborn as sns

Color = tuple[float, float, float]

COLORS: tuple[Color, ...] = tuple(
    (float(c[0]), float(c[1]), float(c[2]))
    for c in (
        *sns.color_palette("colorblind", 10),
        *sns.color_palette("dark", 10),
        *sns.color_palette("husl", 12, desat=0.8),
    )
)
"""The colours policies take (indices of :data:`FIXED` and of the hash)."""

FIXED = {
    "random": 0,
    "fcfs": 1,
    "sjf": 2,
    "wfp3": 3,
    "packer": 4,
    "cpf": 5,
    "srjf": 6,
    "tetris": 7,
    "deeprm": 8,
    "hrrn": 9,
    "fcfs+easy": 10,
    "f1": 11,
    "sjf+easy": 12,
    "fcfs+strict": 13,
    "f1+easy": 14,
    "fcfs+conservative": 15,
    "wfp3+easy": 16,
    "deeprm-plus": 17,
    "unicep+easy": 18,
    "unicep": 19,
}
"""Index in :data:`COLORS` of each built-in policy name (the base heuristics keep the colours
they had before this table; a policy named ``deeprm...`` shares DeepRM's yellow unless taken)."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")

LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
"""Line styles cycled over policies where lines can coincide (CDFs, timelines, baselines)."""


def preferred(policy: str) -> int:
    """The index in :data:`COLORS` that ``policy`` asks for: :data:`FIXED`, DeepRM's for a
    ``deeprm...`` name, else its CRC-32 (stable across processes and Python versions)."""
    if policy in FIXED:
        return FIXED[policy]
    if policy.startswith("deeprm") and not policy.startswith("deeprm-plus"):
        return FIXED["deeprm"]
    return zlib.crc32(policy.encode("utf-8")) % len(COLORS)


def policy_palette(policies: Sequence[str]) -> dict[str, Color]:
    """One colour per policy (module docstring), in the given order; distinct for up to
    ``len(COLORS)`` policies, then cycling."""
    taken: dict[int, str] = {}
    index: dict[str, int] = {}
    fixed_first = sorted(policies, key=lambda p: p not in FIXED)  # stable: order kept within
    for p in fixed_first:
        i = preferred(p)
        for step in range(len(COLORS)):
            j = (i + step) % len(COLORS)
            if j not in taken:
                break
        else:
            j = i
        taken[j] = p
        index[p] = j
    return {p: COLORS[index[p]] for p in policies}


def line_style(palette: Mapping[str, Any], policy: str) -> Any:
    """The dash pattern of ``policy``: by its place in ``palette``, the same in every plot."""
    return LINESTYLES[list(palette).index(policy) % len(LINESTYLES)]
