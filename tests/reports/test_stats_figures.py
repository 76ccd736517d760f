"""The per-jobset figure draws every jobset as a dot, jittered by a seeded generator: a report
renders the same figure every time (seaborn's stripplot jitter has no seed)."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from schedlab.reports.stats_figures import plot_jobset_values


def _render(df: pl.DataFrame) -> tuple[bytes, list[np.ndarray]]:
    fig, ax = plt.subplots()
    plot_jobset_values(
        df, metric="slowdown", order=["sjf", "fcfs"], palette={"sjf": "C0", "fcfs": "C1"}, ax=ax
    )
    dots = [c.get_offsets() for c in ax.collections if len(c.get_offsets())]
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue(), dots


def test_jobset_dots_are_jittered_the_same_every_time() -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"policy": ["fcfs"] * 30 + ["sjf"] * 30, "slowdown": rng.uniform(1, 9, 60)})
    first, dots = _render(df)
    again, _ = _render(df)
    assert first == again
    assert [d.shape[0] for d in dots] == [30, 30]
    for x, d in enumerate(dots):  # sjf left, fcfs right; each dot near its policy
        assert np.abs(d[:, 0] - x).max() <= 0.25
        assert np.ptp(d[:, 0]) > 0.1
