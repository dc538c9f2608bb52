"""The online order statistic equals ``np.percentile`` bit for bit on every prefix, and valid
positions are taken once, holding back a trailing NaN run that may still be filled."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.metrics.control.streaming_stats import StreamingPercentile, ValidPositions


@pytest.mark.parametrize("q", [0.0, 25.0, 50.0, 75.0, 90.0, 100.0])
@pytest.mark.parametrize("seed", range(8))
def test_every_prefix_equals_numpy_percentile_exactly(q: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.abs(rng.normal(size=300)) * [1e-3, 1.0, 1e3][seed % 3]
    if seed % 2:
        x = np.round(x, 1)  # ties
    p = StreamingPercentile(q)
    assert p.value() is None
    for i, v in enumerate(x):
        p.add(float(v))
        assert p.value() == float(np.percentile(x[: i + 1], q)), i


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        StreamingPercentile(75.0).add(float("nan"))


def test_valid_positions_hold_back_a_trailing_nan_run() -> None:
    nan = np.nan
    sx = np.array([0.1, nan, 0.2, 0.3, nan, nan])
    srad = np.array([0.1, 0.1, nan, 0.3, nan, nan])
    pos = ValidPositions()
    assert pos.update(sx, srad).tolist() == [0, 3]
    assert pos.seen == 4  # 4 and 5 may still arrive
    sx[4], srad[4] = 0.5, 0.5  # frame 4 perceived later
    sx = np.append(sx, [0.6, 0.7])
    srad = np.append(srad, [0.6, 0.7])
    assert pos.update(sx, srad).tolist() == [4, 6, 7]
    assert pos.view().tolist() == [0, 3, 4, 6, 7]


def test_valid_positions_grow_past_their_buffer() -> None:
    pos = ValidPositions()
    x = np.arange(5000, dtype=np.float64)
    for n in range(0, 5001, 700):
        pos.update(x[:n], x[:n])
    pos.update(x, x)
    assert pos.view().tolist() == list(range(5000))
