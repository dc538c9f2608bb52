"""The wall-time part of an episode cache (``cache/timing.npz``): when each frame arrived and
when each action change was sent.

The real-time metrics (docs/methods.md#real-time-metrics) are kernels over these arrays and
the flow signals, so ``rescore`` reproduces them bit for bit; the interactivity block's own
figures are measured once, by the pipeline, and only copied. Arrays are float64 seconds of
one monotonic clock (``time.perf_counter`` live; the recorded times in a replay).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

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
    received: ReceivedFrames | None = None

    def save(self, path: Path) -> None:
        arrays = {
            "arrivals": self.arrivals,
            "change_times": self.change_times,
            "change_keys": np.array(self.change_keys, dtype="<U1"),
        }
        if self.received is not None:
            arrays.update(self.received.arrays())
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
            ReceivedFrames.load(data, path) if "received_classes" in data else None,
        )


SESSION_MOMENTS = ("connect", "configure", "ready", "first_key")
"""The moments of a served session kept in ``session_times`` (NaN: not seen)."""


@dataclass
class ReceivedFrames:
    """Every frame a stream-mode session received, native or not (docs/methods.md#native-frames):
    ``arrivals`` (R,) seconds, ``classes`` (R,) uint8 (0 native, 1 repeat, 2 interpolated),
    ``period`` the cadence the episode's native rate came from (announced fps / period),
    ``session_times`` (4,) the ``SESSION_MOMENTS`` on the arrivals' clock."""

    arrivals: F64
    classes: npt.NDArray[np.uint8]
    period: int
    session_times: F64

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        return {
            "received_arrivals": self.arrivals,
            "received_classes": self.classes,
            "received_period": np.array([self.period], dtype=np.int64),
            "session_times": self.session_times,
        }

    @classmethod
    def load(cls, data: dict[str, npt.NDArray[Any]], path: Path) -> ReceivedFrames:
        arrivals = member(data, "received_arrivals", path, ndim=1, kind="f")
        classes = member(data, "received_classes", path, ndim=1, kind="u")
        period = member(data, "received_period", path, ndim=1, kind="i")
        moments = member(data, "session_times", path, ndim=1, kind="f")
        if arrivals.size != classes.size or period.size != 1 or moments.size != 4:
            raise BadInputError(path, "received frames: arrays of mismatched sizes")
        if (classes.size and int(classes.max()) > 2) or int(period[0]) < 1:
            raise BadInputError(path, "received frames: a class above 2 or a period below 1")
        if not np.isfinite(arrivals).all():
            raise BadInputError(path, "received frames: arrival times must be finite")
        return cls(
            arrivals.astype(np.float64, copy=False),
            classes.astype(np.uint8, copy=False),
            int(period[0]),
            moments.astype(np.float64, copy=False),
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ReceivedFrames | None:
        """From what the live source kept (``transports/native_gate.py``'s ``record``, also a
        recording's meta field); None when it is not one."""
        try:
            letters = str(record["classes"])
            classes = np.array(["nri".index(c) for c in letters], dtype=np.uint8)
            arrivals = np.asarray(record["arrivals"], dtype=np.float64)
            times = record.get("session_times") or {}
            moments = np.array(
                [math.nan if times.get(k) is None else float(times[k]) for k in SESSION_MOMENTS],
                dtype=np.float64,
            )
            period = int(record.get("period", 1))
        except (KeyError, ValueError, TypeError, AttributeError):
            return None
        if arrivals.shape != classes.shape or period < 1:
            return None
        return cls(arrivals, classes, period, moments)
