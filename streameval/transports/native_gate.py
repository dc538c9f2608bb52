"""Which received frames enter a live episode: the native ones (docs/methods.md#native-frames).

A stream-mode server plays at its own rate and may pad it with repeated or interpolated frames;
every frame it sends is classified as it arrives (``metrics/native_frames.py``, one frame of
look-ahead), and only native frames are admitted to the episode, numbered without holes. So
perception, the key alignment, the recording and every score see the frames the model
generated, and a doubling server is scored as its honest twin.

The episode's video clock is the model's native rate, fixed after the first frames
(``DECIDE_AFTER``): the announced fps, or the announced fps over the cadence period when the
native frames came at that rate (a server that announces 32 and sends every frame twice runs
at 16; one whose profile says 16 and sends 32 a second, every frame twice, at 16 too). The
episode starts once that rate is known (``decided``): its first native frames wait for it.
Step and request modes ask for every frame by index (a repeated index is already dropped as a
duplicate), so all their frames are native and the rate is the announced one from the start.

Every received frame's class and arrival time is kept (``record``): ``scores.json``'s
``runtime`` block counts them, and the recording keeps them so a replay reports the same.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from streameval.metrics.native_frames import NATIVE, FrameClassifier, class_string, thumbnail
from streameval.protocol.wire import Frame

DECIDE_AFTER = 24
"""Received frames after which the native rate is fixed (1.5 s at 16 fps; a cadence shows
within about 10 frames of motion, and the rest measure the native frames' rate)."""
RECORD_KEY = "received_frames"
"""``EpisodeInfo.extra`` key (and recording meta field) of what the gate kept."""
LIVE_KEY = "native_counts"
"""``EpisodeInfo.extra`` key of the running [native, repeat, interpolated] counts (one list,
updated in place while the episode runs: the dashboard shows it)."""


class NativeGate:
    """Classifies received frames and hands over the native ones, in order, once the
    episode's native rate is known. ``classify=False``: every frame is native."""

    def __init__(self, announced_fps: float, *, classify: bool) -> None:
        self.announced_fps = announced_fps
        self.classify = classify
        self._classifier = FrameClassifier(settle=DECIDE_AFTER)
        self._held: deque[tuple[Frame, float]] = deque()  # waiting for their class
        self._waiting: list[tuple[Frame, float]] = []  # native, waiting for the rate
        self.classes: list[int] = []
        self.arrivals: list[float] = []
        self.live_counts = [0, 0, 0]  # native, repeat, interpolated so far
        self.period: int | None = None if classify else 1

    @property
    def decided(self) -> bool:
        return self.period is not None

    @property
    def native_fps(self) -> float:
        """The episode's video clock: the announced rate over the cadence period."""
        return self.announced_fps / (self.period or 1)

    def push(self, frame: Frame, t_arrival: float) -> list[tuple[Frame, float]]:
        """A received frame; returns the native frames that may enter the episode now."""
        if not self.classify:
            self._record(NATIVE, frame, t_arrival)
            return self._release()
        self._held.append((frame, t_arrival))
        for cls in self._classifier.push(thumbnail(frame.image)):
            self._record(cls, *self._held.popleft())
        if not self.decided and len(self.classes) >= DECIDE_AFTER:
            self.decide()
        return self._release()

    def flush(self) -> list[tuple[Frame, float]]:
        """The stream ended: the last frame's class, the rate decided with what came, and
        every native frame still waiting."""
        for cls in self._classifier.flush():
            self._record(cls, *self._held.popleft())
        if not self.decided:
            self.decide()
        return self._release()

    def decide_now(self) -> list[tuple[Frame, float]]:
        """Fix the rate with what came (no frame for a while): the native frames waiting."""
        if not self.decided:
            self.decide()
        return self._release()

    def decide(self) -> None:
        """Fix the native rate: the announced rate, or the announced over the cadence period
        (a server that announced its padded rate), whichever the native frames' arrival
        rate so far is closer to (a profile may state the model's rate while the server pads
        it; a server may announce the padded rate)."""
        cadence = self._classifier.cadence
        self.period = 1
        if cadence is None or cadence.period == 1:
            return
        natives = [t for t, c in zip(self.arrivals, self.classes, strict=True) if c == NATIVE]
        span = natives[-1] - natives[0] if len(natives) >= 2 else 0.0
        if span <= 0:
            return
        measured = (len(natives) - 1) / span
        padded = self.announced_fps / cadence.period
        if abs(math.log(measured / padded)) < abs(math.log(measured / self.announced_fps)):
            self.period = cadence.period

    def first_held(self) -> int | None:
        """The server index of the earliest frame received and not yet handed over (waiting
        for its class or for the rate), None when none is: for the chunk log, such a frame is
        still to come."""
        indices = [f.index for f, _ in self._waiting] + [f.index for f, _ in self._held]
        return min(indices) if indices else None

    def _record(self, cls: int, frame: Frame, t_arrival: float) -> None:
        self.classes.append(cls)
        self.arrivals.append(t_arrival)
        self.live_counts[cls] += 1
        if cls == NATIVE:
            self._waiting.append((frame, t_arrival))

    def _release(self) -> list[tuple[Frame, float]]:
        if not self.decided:
            return []
        out, self._waiting = self._waiting, []
        return out

    def record(self, session_times: dict[str, float | None]) -> dict[str, Any]:
        """What the episode keeps (``EpisodeInfo.extra[RECORD_KEY]``, the recording's meta):
        each received frame's class letter and arrival, the native rate's period, and the
        session's moments (connect, configure, ready, first key; perf_counter seconds)."""
        import numpy as np

        return {
            "classes": class_string(np.asarray(self.classes, dtype=np.uint8)),
            "arrivals": list(self.arrivals),
            "period": self.period or 1,  # announced fps / native rate
            "announced_fps": self.announced_fps,
            "session_times": dict(session_times),
        }
