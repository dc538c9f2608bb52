"""moving_average: centered, zero-padded, divided by k everywhere
(docs/methods.md#motion-stability)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval.metrics.control.smoothing import moving_average


def naive_moving_average(x: list[float], k: int) -> list[float]:
    """The full convolution with k taps of 1/k, centred: max(n, k) values (numpy "same")."""
    n = len(x)
    if n == 0:
        return []
    full = [sum(x[j] / k for j in range(n) if 0 <= m - j < k) for m in range(n + k - 1)]
    offset = (min(n, k) - 1) // 2
    return full[offset : offset + max(n, k)]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7, 8, 12])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 13, 40])
def test_matches_naive(k: int, n: int) -> None:
    x = np.random.default_rng(k * 100 + n).normal(size=n)
    got = moving_average(x, k)
    want = naive_moving_average(x.tolist(), k)
    assert got.shape == ((max(n, k),) if n else (0,))
    assert all(
        math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-14) for a, b in zip(got, want, strict=True)
    )


@pytest.mark.parametrize("k", [1, 4, 7, 8])
def test_is_numpy_same_convolution_when_long_enough(k: int) -> None:
    x = np.random.default_rng(k).normal(size=50)
    assert np.array_equal(moving_average(x, k), np.convolve(x, np.ones(k) / k, mode="same"))


def test_ends_are_divided_by_k() -> None:
    got = moving_average(np.ones(10), 4)
    assert got.tolist()[:2] == [0.5, 0.75]
    assert got[-1] == 0.75


def test_short_input_keeps_the_window_length() -> None:
    # The reference's stability scan runs over these k values when the zone is shorter
    # (docs/methods.md#motion-stability).
    got = moving_average(np.array([3.0, 3.0, 3.0]), 5)
    assert got.tolist() == pytest.approx([1.2, 1.8, 1.8, 1.8, 1.2])


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_window(k: object) -> None:
    with pytest.raises(ValueError, match="window"):
        moving_average(np.ones(3), k)  # type: ignore[arg-type]


def test_rejects_2d() -> None:
    with pytest.raises(ValueError, match="1-D"):
        moving_average(np.ones((2, 2)), 2)
