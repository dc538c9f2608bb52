"""The wall-time part of an episode: when each frame arrived and when each action change was
sent, and every frame a stream-mode session received (docs/methods.md#real-time-metrics).

The real-time metrics are kernels over these arrays and the flow signals, so ``rescore``
reproduces them bit for bit. Arrays are float64 seconds of one monotonic clock
(``time.perf_counter`` live; the recorded times in a replay). Stored as
``cache/timing.npz`` by ``results/cache/timing.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.arrays import F64

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


@dataclass
class TimingCache:
    """``arrivals`` (T,): frame i's arrival, NaN when it has none (never received, or a
    rollout without times); ``change_times`` (K,) and ``change_keys`` (K,): every change of
    the held key, in send order (the first key sent counts as a change)."""

    arrivals: F64
    change_times: F64
    change_keys: list[str]
    received: ReceivedFrames | None = None
