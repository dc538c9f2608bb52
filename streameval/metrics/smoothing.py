"""Moving average used by Motion Stability and Response Latency (SPEC §4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def moving_average(x: ArrayLike, k: int) -> NDArray[np.float64]:
    """Centered k-sample moving average with zero-padded ends, same length as ``x``.

    This is ``np.convolve(x, np.ones(k) / k, mode="same")``, as in the reference (SPEC §4): the
    ends are divided by k even though fewer than k real samples fall in the window, so they dip.
    Sample i averages ``x[i - k//2 : i + (k-1)//2 + 1]``.

    numpy's ``mode="same"`` returns ``max(len(x), k)`` samples; when ``x`` is shorter than the
    window we return ``len(x)`` samples of the same centered, zero-padded average instead, so the
    output always lines up with the input.
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"moving_average window must be a positive integer, got {k!r}")
    k = int(k)
    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"moving_average expects a 1-D signal, got shape {values.shape}")
    n = values.size
    if n == 0:
        return np.empty(0, dtype=np.float64)
    kernel = np.ones(k, dtype=np.float64) / k
    if n >= k:
        same: NDArray[np.float64] = np.convolve(values, kernel, mode="same")
        return same
    full: NDArray[np.float64] = np.convolve(values, kernel, mode="full")
    offset = (k - 1) // 2
    return full[offset : offset + n].copy()
