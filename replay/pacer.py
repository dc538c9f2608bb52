"""Fixed-rate pacing for replay: frame i is released at start + i / fps.

Deadlines are computed from the start, never from the previous frame, so a late frame does not
push every later one back (no drift accumulates); a consumer that falls behind simply gets the
next frames without waiting until it has caught up.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from streameval.errors import BadInputError


class Pacer:
    """``await pacer.wait(i)`` returns no earlier than ``start + i / fps`` (monotonic clock).

    ``fps=None`` never waits (as fast as possible). The clock starts at the first ``wait``, so
    the time spent opening a rollout is not counted against the first frames.
    """

    def __init__(self, fps: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        if fps is not None and (not math.isfinite(fps) or fps <= 0):
            raise ValueError(f"pace must be a positive frame rate, got {fps}")
        self.fps = fps
        self._clock = clock
        self._start: float | None = None
        self.late_frames = 0  # frames whose deadline had already passed: the consumer is slower

    def deadline(self, frame_index: int) -> float | None:
        """Clock time at which frame ``frame_index`` is due (None before the first wait)."""
        if self.fps is None or self._start is None:
            return None
        return self._start + frame_index / self.fps

    async def wait(self, frame_index: int) -> None:
        if self.fps is None:
            return
        now = self._clock()
        if self._start is None:
            self._start = now - frame_index / self.fps
        due = self._start + frame_index / self.fps
        delay = due - now
        if delay > 0:
            await asyncio.sleep(delay)
        elif frame_index > 0 and delay < -1.0 / self.fps:
            self.late_frames += 1


def pace_for(
    rollout_fps: float, *, realtime: bool = False, fps: float | None = None
) -> float | None:
    """The replay rate the CLI asked for: ``--realtime`` = the rollout's fps, ``--fps N`` = N."""
    if realtime and fps is not None:
        raise BadInputError("--realtime and --fps are exclusive")
    if realtime:
        return rollout_fps
    return fps
