"""``cache/timing.npz``: a bit-exact round trip, and a damaged archive is one BadInputError
naming the file (the real-time metrics are scored from it, docs/methods.md#real-time-metrics)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streameval.core.episode.timing import TimingCache
from streameval.errors import BadInputError
from streameval.results.cache.timing import load_timing, save_timing


def test_round_trip_is_bit_exact(tmp_path: Path) -> None:
    arrivals = np.array([0.1, np.nan, 0.1 + 1 / 3, 0.9])
    timing = TimingCache(arrivals, np.array([0.05, 0.5]), ["A", "D"])
    save_timing(timing, tmp_path / "timing.npz")
    back = load_timing(tmp_path / "timing.npz", 4)
    assert back.arrivals.tobytes() == arrivals.tobytes()
    assert back.change_times.tolist() == [0.05, 0.5] and back.change_keys == ["A", "D"]


@pytest.mark.parametrize(
    ("arrivals", "times", "keys", "problem"),
    [
        ([0.0, 0.1], [0.0], ["A"], "for 3 frames"),
        ([0.0, 0.1, np.inf], [0.0], ["A"], "finite"),
        ([0.0, 0.1, 0.2], [0.5, 0.1], ["A", "D"], "must not decrease"),
        ([0.0, 0.1, 0.2], [0.0], ["X"], "unknown keys"),
        ([0.0, 0.1, 0.2], [0.0, 0.1], ["A"], "change keys"),
    ],
)
def test_a_damaged_archive_is_bad_input(
    tmp_path: Path, arrivals: list[float], times: list[float], keys: list[str], problem: str
) -> None:
    path = tmp_path / "timing.npz"
    save_timing(TimingCache(np.array(arrivals), np.array(times), keys), path)
    with pytest.raises(BadInputError, match=problem):
        load_timing(path, 3)
