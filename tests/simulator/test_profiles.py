"""Conservative backfilling's per-machine profiles (:mod:`schedlab.simulator.cluster.profiles`)
under random reservations taken and given back as time passes: each stays the free-capacity
function it should be, with no two equal neighbouring segments, and the level index updated
over the changed interval equals the one rebuilt from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.simulator.cluster import profiles


def free_at(prof: tuple[np.ndarray, ...], i: int, x: int) -> np.ndarray:
    times, vals, cnt = prof[0], prof[1], prof[2]
    return vals[i, profiles.locate(times, i, int(cnt[i]), x)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_changes_keep_the_profile_canonical_and_the_index_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    capacity = np.array([8.0, 4.0])
    m, now = 2, 0
    times, vals, cnt, theta, low = profiles.new(capacity, m, now)
    held: list[tuple[int, int, int, np.ndarray]] = []  # machine, start, end, demand
    for _ in range(400):
        now += int(rng.integers(0, 3))
        if held and rng.random() < 0.45:  # give one back, from now on
            i, a, b, need = held.pop(int(rng.integers(len(held))))
            if b <= now:
                continue
            a, sign = max(a, now), -1.0
        else:
            i, a = int(rng.integers(m)), now + int(rng.integers(0, 20))
            b = a + int(rng.integers(1, 15))
            need = rng.integers(0, 3, size=2).astype(np.float64)
            held.append((i, a, b, need))
            sign = 1.0
        times, vals = profiles.change(times, vals, cnt, theta, low, i, a, b, need, sign, now)
        prof = (times, vals, cnt)
        for x in range(now, now + 40):  # the function: capacity less what is held at x
            want = capacity - sum(
                (n for j, s, e, n in held if j == i and max(s, now) <= x < e), np.zeros(2)
            )
            np.testing.assert_array_equal(free_at(prof, i, x), want)
        c = int(cnt[i])
        assert not any(np.array_equal(vals[i, k - 1], vals[i, k]) for k in range(1, c))
        rebuilt = low.copy()
        profiles.index(times, vals, cnt, i, theta, rebuilt, now)
        np.testing.assert_array_equal(low[:, i], rebuilt[:, i])
