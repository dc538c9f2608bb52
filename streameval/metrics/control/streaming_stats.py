"""Order statistics and valid-sample positions kept up to date as samples arrive.

The online control accumulator (``online.py``) needs, at every provisional update,
the P75 of |channel| over every valid sample so far (latency's ``v_ref``,
docs/methods.md#response-latency) and the positions of the valid samples around one key switch.
Recomputing either over the prefix is O(episode) per update; here each new sample costs O(log n) (a
two-heap order statistic) and O(1) amortised (a growing position buffer), and reading them costs
O(1) and O(log n).

The percentile is numpy's default ("linear") method computed from the same two order
statistics with numpy's own interpolation formula, so it equals ``np.percentile`` exactly,
not only to rounding (a test checks equality).
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from numpy.typing import NDArray


def numpy_lerp(a: float, b: float, t: float) -> float:
    """``numpy.lib._function_base_impl._lerp``: a + (b - a)·t, from the far end when
    t >= 0.5 (numpy does this for monotonicity); the same float operations, so the same bits."""
    diff = b - a
    if t >= 0.5:
        return b - diff * (1.0 - t)
    return a + diff * t


class StreamingPercentile:
    """The ``q``-th percentile (numpy's linear method) of every value added so far.

    ``low`` is a max-heap (negated) of the smallest ``floor(q/100·(n-1)) + 1`` values, ``high``
    a min-heap of the rest: the two order statistics the linear method interpolates between
    are the top of each.
    """

    def __init__(self, q: float) -> None:
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {q!r}")
        self.fraction = q / 100.0
        self._low: list[float] = []
        self._high: list[float] = []

    def __len__(self) -> int:
        return len(self._low) + len(self._high)

    def add(self, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"only finite values have a percentile, got {value!r}")
        if self._low and value <= -self._low[0]:
            heapq.heappush(self._low, -value)
        else:
            heapq.heappush(self._high, value)
        wanted = math.floor(self.fraction * (len(self) - 1)) + 1
        while len(self._low) > wanted:
            heapq.heappush(self._high, -heapq.heappop(self._low))
        while len(self._low) < wanted:
            heapq.heappush(self._low, -heapq.heappop(self._high))

    def extend(self, values: NDArray[np.float64]) -> None:
        for v in values.tolist():
            self.add(v)

    def value(self) -> float | None:
        """The percentile, or None before the first value."""
        n = len(self)
        if n == 0:
            return None
        h = self.fraction * (n - 1)
        below = -self._low[0]
        above = self._high[0] if self._high else below
        return numpy_lerp(below, above, h - math.floor(h))


class ValidPositions:
    """Indices of the samples finite in both channels, appended as the samples arrive.

    Only samples up to the last finite one are taken: a trailing run of NaN may be frames
    still in perception, filled at a later update (perception delivers frames in order, so a
    NaN followed by a finite sample is final: a dropped frame).
    """

    def __init__(self) -> None:
        self._buf = np.empty(1024, dtype=np.intp)
        self.n = 0  # valid positions held
        self.seen = 0  # samples examined (the prefix whose validity is final)

    def view(self) -> NDArray[np.intp]:
        return self._buf[: self.n]

    def update(self, sx: NDArray[np.float64], srad: NDArray[np.float64]) -> NDArray[np.intp]:
        """Take the samples that arrived since the last call; return the new valid indices."""
        tail = np.isfinite(sx[self.seen :]) & np.isfinite(srad[self.seen :])
        finite = np.flatnonzero(tail)
        if finite.size == 0:
            return finite
        new = finite + self.seen
        if self.n + new.size > self._buf.size:
            grown = np.empty(max(2 * self._buf.size, self.n + new.size), dtype=np.intp)
            grown[: self.n] = self._buf[: self.n]
            self._buf = grown
        self._buf[self.n : self.n + new.size] = new
        self.n += new.size
        self.seen = int(new[-1]) + 1
        return new
