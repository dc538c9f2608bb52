"""Moving average used by Motion Stability and Response Latency
(docs/methods.md#motion-stability, docs/methods.md#response-latency)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def moving_average(x: ArrayLike, k: int) -> NDArray[np.float64]:
    """Centered k-sample moving average, zero-padded: ``np.convolve(x, ones(k)/k, "same")``.

    This is the reference's smoothing exactly (docs/methods.md#motion-stability,
    docs/methods.md#departures-from-the-reference): each output is a sum of products
    ``x_j·(1/k)``, the ends are divided by k even though fewer than k real samples fall in the
    window (so they dip), and sample i averages ``x[i - k//2 : i + (k-1)//2 + 1]``.

    Like numpy's ``mode="same"``, the output has ``max(len(x), k)`` samples: when ``x`` is shorter
    than the window the smoothed series is *longer* than ``x``. The reference's stability scan
    runs over those values, so we keep them rather than trimming to ``len(x)``.
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"moving_average window must be a positive integer, got {k!r}")
    k = int(k)
    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"moving_average expects a 1-D signal, got shape {values.shape}")
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    same: NDArray[np.float64] = np.convolve(values, np.ones(k, dtype=np.float64) / k, mode="same")
    return same
