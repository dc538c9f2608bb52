"""The wall-time part of an episode cache (``cache/timing.npz``): when each frame arrived and
when each action change was sent.

The real-time metrics (docs/methods.md#real-time-metrics) are kernels over these arrays and
the flow signals, so ``rescore`` reproduces them bit for bit; the interactivity block's own
figures are measured once, by the pipeline, and only copied. Arrays are float64 seconds of
one monotonic clock (``time.perf_counter`` live; the recorded times in a replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from streameval.core.arrays import F64
from streameval.core.atomic import savez_atomic
from streameval.errors import BadInputError
from streameval.inputs.npz import load_npz, member
from streameval.protocol.keys import KEYS, NO_KEY

CACHE_FILE = "timing.npz"


@dataclass
class TimingCache:
    """``arrivals`` (T,): frame i's arrival, NaN when it has none (never received, or a
    rollout without times); ``change_times`` (K,) and ``change_keys`` (K,): every change of
    the held key, in send order (the first key sent counts as a change)."""

    arrivals: F64
    change_times: F64
    change_keys: list[str]

    def save(self, path: Path) -> None:
        arrays = {
            "arrivals": self.arrivals,
            "change_times": self.change_times,
            "change_keys": np.array(self.change_keys, dtype="<U1"),
        }
        savez_atomic(path, arrays)

    @classmethod
    def load(cls, path: Path, frames: int) -> TimingCache:
        """Read and check the archive of an episode of ``frames`` frames."""
        data = load_npz(path)
        arrivals = member(data, "arrivals", path, ndim=1, kind="f")
        times = member(data, "change_times", path, ndim=1, kind="f")
        keys = member(data, "change_keys", path, ndim=1, kind="U")
        if arrivals.size != frames:
            raise BadInputError(path, f"arrivals: {arrivals.size} for {frames} frames")
        if times.size != keys.size:
            raise BadInputError(path, f"{times.size} change times for {keys.size} change keys")
        if np.isinf(arrivals).any() or not np.isfinite(times).all():
            raise BadInputError(path, "times must be finite (NaN only for a frame not received)")
        if times.size and np.any(np.diff(times) < 0):
            raise BadInputError(path, "change times must not decrease")
        bad = set(keys.tolist()) - {*KEYS, NO_KEY}
        if bad:
            raise BadInputError(path, f"unknown keys {sorted(bad)[:5]} in change_keys")
        return cls(
            arrivals.astype(np.float64, copy=False),
            times.astype(np.float64, copy=False),
            [str(k) for k in keys],
        )
