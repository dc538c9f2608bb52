"""Key segments of an episode and the signal samples each one is scored on (SPEC §2).

Signal i is the flow from frame i to frame i + 2 and belongs to the segment of frame i, at time
``t_i = i / fps``. A segment's *stable zone* drops its first 3 s (unless it is the first
segment) and its last 1 s (unless it is the last), so that the transient after a key switch and
the run-up to the next one are not scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from streameval.constants import STABLE_SKIP_HEAD_S, STABLE_SKIP_TAIL_S
from streameval.protocol.keys import FAMILY, NO_KEY, Family, UnknownKeyError, parse_key
from streameval.protocol.schedule import segments_from_keys

# A boundary that is a whole sample in exact arithmetic (e.g. 3 s at 10/3 fps) may land a hair
# off it in floating point; snapping within this tolerance keeps it on the whole sample.
_BOUNDARY_SNAP = 1e-9


@dataclass(frozen=True, slots=True)
class SegmentSpan:
    """One maximal run of a key, with the signal samples that belong to it.

    ``start``/``end`` are frames (end exclusive). ``full`` is every signal index of the segment
    (used to smooth the response for latency, SPEC §4); ``stable`` is the stable zone (SPEC §2).
    Both are clipped to the signals that exist. ``family`` is None for the no-key run ``"-"``,
    which is kept for numbering and for the first/last rules but never scored.
    """

    index: int
    key: str
    family: Family | None
    start: int
    end: int
    full: range
    stable: range

    @property
    def scored(self) -> bool:
        """True for a commanded key (W S A D L R); ``"-"`` segments are never scored."""
        return self.family is not None


def check_fps(fps: float) -> float:
    """Return ``fps`` as a float, or raise ValueError naming it (it must be finite and > 0)."""
    value = float(fps)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"fps must be finite and > 0, got {fps!r}")
    return value


def _first_index_at_or_after(x: float) -> int:
    """Smallest integer i with i >= x (x snapped to a whole sample within float noise)."""
    nearest = round(x)
    if abs(x - nearest) <= _BOUNDARY_SNAP * max(1.0, abs(x)):
        return int(nearest)
    return math.ceil(x)


def _clip(lo: int, hi: int, n_signals: int) -> range:
    lo = max(lo, 0)
    hi = min(hi, n_signals)
    return range(lo, max(lo, hi))


def segment_spans(frame_keys: Sequence[str], n_signals: int, fps: float) -> list[SegmentSpan]:
    """Split the per-frame key log into segments and locate their signal samples.

    The stable-zone rule of SPEC §2 is by time (``t_i >= start/fps + 3`` when j > 0,
    ``t_i < end/fps - 1`` when j < n-1); it is evaluated in frame units (``i >= start + 3*fps``,
    ``i < end - fps``), which is the same rule without rounding ``i / fps``.

    Raises ValueError if there are more signals than frame keys (signal i needs the key of
    frame i) and UnknownKeyError for a key outside W S A D L R and ``"-"``.
    """
    fps = check_fps(fps)
    if n_signals < 0:
        raise ValueError(f"n_signals must be >= 0, got {n_signals}")
    if n_signals > len(frame_keys):
        raise ValueError(
            f"{n_signals} signal samples but only {len(frame_keys)} frame keys: "
            "signal i needs the key of frame i"
        )
    keys: list[str] = []
    for frame, raw in enumerate(frame_keys):
        try:
            keys.append(parse_key(raw))
        except UnknownKeyError as err:
            raise UnknownKeyError(f"frame {frame}: {err}") from None
    segments = segments_from_keys(keys)
    last = len(segments) - 1
    return [
        segment_span(j, seg.key, seg.start, seg.end, j == last, n_signals, fps)
        for j, seg in enumerate(segments)
    ]


def segment_span(
    index: int, key: str, start: int, end: int, is_last: bool, n_signals: int, fps: float
) -> SegmentSpan:
    """Segment ``index`` (frames [start, end) of ``key``) with its windows (SPEC §2): the one
    rule ``segment_spans`` applies to every segment, for callers (the online accumulator) that
    track segment boundaries themselves."""
    lo = start
    if index > 0:
        lo = _first_index_at_or_after(start + STABLE_SKIP_HEAD_S * fps)
    hi = end
    if not is_last:
        hi = _first_index_at_or_after(end - STABLE_SKIP_TAIL_S * fps)
    return SegmentSpan(
        index=index,
        key=key,
        family=None if key == NO_KEY else FAMILY[key],
        start=start,
        end=end,
        full=_clip(start, end, n_signals),
        stable=_clip(max(lo, start), min(hi, end), n_signals),
    )
