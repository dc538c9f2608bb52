"""Append-only numpy buffers: per-frame data with O(1) amortised appends and no Python lists
of floats (a few bytes per frame). Shared by the online accumulator and the pipeline's track."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

INITIAL_CAPACITY = 256


class GrowableArray:
    """A 1-D numpy buffer with amortised doubling: O(n) memory, O(1) amortised append."""

    __slots__ = ("_buf", "_n")

    def __init__(self, dtype: type[np.generic]) -> None:
        self._buf: NDArray[np.generic] = np.empty(INITIAL_CAPACITY, dtype=dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def capacity(self) -> int:
        return int(self._buf.size)

    def extend(self, values: NDArray[np.generic]) -> None:
        need = self._n + values.size
        if need > self._buf.size:
            capacity = self._buf.size
            while capacity < need:
                capacity *= 2
            grown = np.empty(capacity, dtype=self._buf.dtype)
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown
        self._buf[self._n : need] = values
        self._n = need

    def last(self) -> float | None:
        """The last value appended, None when empty."""
        return float(self._buf[self._n - 1]) if self._n else None

    def view(self) -> NDArray[np.generic]:
        """The filled part (a view: copy it before keeping it past the next ``extend``)."""
        return self._buf[: self._n]

    def clear(self) -> None:
        self._buf = np.empty(INITIAL_CAPACITY, dtype=self._buf.dtype)
        self._n = 0
