"""Numbers at the boundary: finite, of the right kind, and inside a range a real input can have.

The ranges are wide enough for every real model and narrow enough that nothing downstream
(schedules, pacing, the motion-type fit, ``math.fsum``) can overflow, loop for hours or wait
for days. One table names them, so a user who hits one reads the same bound everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from streameval.errors import BadInputError


def finite_float(x: object) -> float | None:
    """``x`` as a float when it is a finite JSON number (not a bool), else None: what a
    ``scores.json`` reader and the model aggregates accept as a measured value."""
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


@dataclass(frozen=True, slots=True)
class Range:
    """A closed interval ``[low, high]`` with what the number is, for messages."""

    what: str
    low: float
    high: float

    def check(self, value: object, source: object) -> float:
        """``value`` as a float inside the range, or ``BadInputError`` naming ``source``."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadInputError(source, f"{self.what} {value!r} is not a number")
        number = float(value)
        if not math.isfinite(number) or not self.low <= number <= self.high:
            raise BadInputError(
                source, f"{self.what} {value!r} is outside [{self.low:g}, {self.high:g}]"
            )
        return number


# Video frame rate (frames per video second). Below 1 fps a 20 s key is under 20 frames and the
# stable zones vanish; above 1,000 fps no world model renders, and the sample counts explode.
FPS = Range("fps", 1.0, 1000.0)
# Video seconds a key is held (worldmark: 20 s).
SECONDS_PER_KEY = Range("seconds per key", 0.1, 3600.0)
# Seconds one model step may take before the episode is ended as incomplete.
STEP_TIMEOUT = Range("step timeout (s)", 0.001, 86400.0)
# Frames of one episode: two hours at 240 fps. Larger is a wrong fps, not a long episode.
MAX_EPISODE_FRAMES = 2 * 3600 * 240
# Frame sides in pixels: the flow needs 16; 16K video is the largest anyone delivers.
FRAME_SIDE = Range("frame side (px)", 16, 16384)
# Any score or detail value in scores.json: finite and small enough that sums of millions of
# them stay finite (1e308 values made the table's fsum overflow). The published schema
# (schemas/scores.schema.json) states these two; a test keeps them equal.
SCORE_MAGNITUDE = 1e12
NORMALIZED = Range("normalized value", 0.0, 100.0)


def check_frame_count(frames: int, source: object) -> int:
    """An episode length that downstream buffers can hold."""
    if not 0 < frames <= MAX_EPISODE_FRAMES:
        raise BadInputError(
            source, f"{frames} frames per episode (expected 1 to {MAX_EPISODE_FRAMES})"
        )
    return frames
