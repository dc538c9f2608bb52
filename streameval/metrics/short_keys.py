"""How long a key must last for the control columns to score it (docs/methods.md#shortest-keys).

A segment is scored over its stable zone: the span less its first 3 s after a switch and its last
1 s before the next key (docs/methods.md#control-segments). A key shorter than that plus a few
frames leaves fewer than ``MIN_WINDOW_SAMPLES`` samples in the zone: its accuracy, purity and
stability are ``not_applicable``, and so is the response latency of the switch into it (no
steady state to reach). These helpers say how long is long enough, so that the reason a column
carries and the line a run prints before it starts name the key length that would be scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from streameval.constants import MIN_WINDOW_SAMPLES, STABLE_SKIP_HEAD_S, STABLE_SKIP_TAIL_S
from streameval.metrics.segments import check_fps, segment_span, segment_spans
from streameval.protocol.schedule import Schedule

# a signal sample is the flow from frame i to i + 2: an episode of N frames has N - 2 samples
_SIGNAL_STRIDE = 2


def shortest_key_s(fps: float) -> float:
    """Seconds of the shortest key whose stable zone holds ``MIN_WINDOW_SAMPLES`` samples when
    it is neither the first nor the last key (the longest need): 3 s + 1 s + 2 frames, found
    through ``segment_span`` itself so that the float edges are the ones scoring sees."""
    fps = check_fps(fps)
    n = max(1, math.floor((STABLE_SKIP_HEAD_S + STABLE_SKIP_TAIL_S) * fps))
    while len(segment_span(1, "W", 0, n, False, n, fps).stable) < MIN_WINDOW_SAMPLES:
        n += 1
    return n / fps


def seconds_up(seconds: float) -> str:
    """``seconds`` rounded up to the hundredth (a length it names is always long enough)."""
    return f"{math.ceil(seconds * 100.0 - 1e-9) / 100.0:.2f} s"


def key_length_text(fps: float) -> str:
    """``"keys of at least 4.13 s at 16 fps"``: the phrase reasons and warnings share."""
    return f"keys of at least {seconds_up(shortest_key_s(fps))} at {fps:g} fps"


@dataclass(frozen=True, slots=True)
class ShortKeys:
    """The keyed segments of a planned episode whose stable zone is too short to score."""

    short: int
    keyed: int
    fps: float
    shortest_s: float

    def line(self) -> str:
        """One line for before the run starts (short: the dashboard's event log is narrow; the
        columns it means are in docs/methods.md#shortest-keys)."""
        return (
            f"{self.short} of {self.keyed} keys too short for the control columns "
            f"({self.shortest_s:g} s; they need {key_length_text(self.fps)})"
        )


def schedule_short_keys(schedule: Schedule) -> ShortKeys | None:
    """The short segments of a planned episode, scored as the run will score them (same
    frames, same windows; the last two frames have no signal sample); None when every key can
    be scored."""
    frame_keys = schedule.frame_keys()
    n_signals = max(0, len(frame_keys) - _SIGNAL_STRIDE)
    spans = [s for s in segment_spans(frame_keys, n_signals, schedule.fps) if s.scored]
    short = [s for s in spans if len(s.stable) < MIN_WINDOW_SAMPLES]
    if not short:
        return None
    shortest = min(s.end - s.start for s in short) / schedule.fps
    return ShortKeys(len(short), len(spans), schedule.fps, shortest)


def planned_short_keys(keys: Sequence[str], seconds_per_key: float, fps: float) -> ShortKeys | None:
    """``schedule_short_keys`` of ``keys`` held ``seconds_per_key`` each at ``fps``."""
    return schedule_short_keys(Schedule.per_key(keys, seconds_per_key, fps))
