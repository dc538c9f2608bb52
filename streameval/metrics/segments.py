"""Key segments of an episode and the signal samples each one is scored on
(docs/methods.md#control-segments).

Signal i is the flow from frame i to frame i + 2 and belongs to the segment of frame i, at time
``t_i = i / fps``. A segment's *stable zone* drops its first 3 s (unless it is the first
segment) and its last 1 s (unless it is the last), so that the transient after a key switch and
the run-up to the next one are not scored.

The zone follows the reference's own expressions (docs/methods.md#control-segments): segment j spans
``lo``..``hi`` seconds, ``a = lo + 3.0`` (j > 0), ``b = hi - 1.0`` (j < n-1), and sample i is in the
zone when ``a <= i/fps <= b`` — inclusive at both ends and compared in float64 exactly as written,
so a sample sitting on ``lo + 3`` falls whichever side the rounding puts it, as in the reference.
With an action log ``lo``/``hi`` are the segment's first frame and end frame over fps; without
one (``equal_split_spans``) the time of the *last signal sample* is split equally among the keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from streameval.constants import EQUAL_SPLIT_KEYS, STABLE_SKIP_HEAD_S, STABLE_SKIP_TAIL_S
from streameval.errors import UnknownKeyError
from streameval.protocol.keys import FAMILY, NO_KEY, Family, parse_key
from streameval.protocol.schedule import segments_from_keys


@dataclass(frozen=True, slots=True)
class SegmentSpan:
    """One maximal run of a key, with the signal samples that belong to it.

    ``start``/``end`` are frames (end exclusive). ``full`` is every signal index of the segment;
    ``stable`` is the stable zone (docs/methods.md#control-segments). Both are clipped to the
    signals that exist. ``lo_s``/``hi_s`` are the segment's span in seconds (``lo_s`` is the switch
    time t0 of Response Latency) and ``length_s`` its latency window L. ``family`` is None for the
    no-key run ``"-"``, which is kept for numbering and for the first/last rules but never scored.
    """

    index: int
    key: str
    family: Family | None
    start: int
    end: int
    full: range
    stable: range
    lo_s: float = 0.0
    hi_s: float = 0.0
    length_s: float = 0.0

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


def _clip(lo: int, hi: int, n_signals: int) -> range:
    lo = max(lo, 0)
    hi = min(hi, n_signals)
    return range(lo, max(lo, hi))


def _time_range(t: np.ndarray, a: float, b: float, *, closed_right: bool = True) -> range:
    """Indices i with ``a <= t[i] <= b`` (or ``< b``); ``t`` is increasing, so they are a range."""
    inside = (t >= a) & ((t <= b) if closed_right else (t < b))
    idx = np.flatnonzero(inside)
    if idx.size == 0:
        return range(0)
    return range(int(idx[0]), int(idx[-1]) + 1)


def _stable(t: np.ndarray, j: int, last: int, lo_s: float, hi_s: float) -> range:
    a = lo_s + STABLE_SKIP_HEAD_S if j > 0 else lo_s
    b = hi_s - STABLE_SKIP_TAIL_S if j < last else hi_s
    return _time_range(t, a, b)


def _family(key: str) -> Family | None:
    return None if key == NO_KEY else FAMILY[key]


def _parse_keys(raw_keys: Sequence[str], what: str) -> list[str]:
    keys: list[str] = []
    for i, raw in enumerate(raw_keys):
        try:
            keys.append(parse_key(raw))
        except UnknownKeyError as err:
            raise UnknownKeyError(f"{what} {i}: {err}") from None
    return keys


def sample_times(n_signals: int, fps: float) -> np.ndarray:
    """``t_i = i / fps`` for every signal sample, a float64 division as the reference does."""
    return np.arange(n_signals, dtype=np.float64) / fps


def segment_spans(frame_keys: Sequence[str], n_signals: int, fps: float) -> list[SegmentSpan]:
    """Split the per-frame key log into segments and locate their signal samples.

    Segment j spans ``lo = start/fps`` to ``hi = end/fps``; its latency window L is
    ``(end - start)/fps``. Raises ValueError if there are more signals than frame keys (signal
    i needs the key of frame i) and UnknownKeyError for a key outside W S A D L R and ``"-"``.
    """
    fps = check_fps(fps)
    if n_signals < 0:
        raise ValueError(f"n_signals must be >= 0, got {n_signals}")
    if n_signals > len(frame_keys):
        raise ValueError(
            f"{n_signals} signal samples but only {len(frame_keys)} frame keys: "
            "signal i needs the key of frame i"
        )
    keys = _parse_keys(frame_keys, "frame")
    segments = segments_from_keys(keys)
    last = len(segments) - 1
    return [
        segment_span(j, seg.key, seg.start, seg.end, j == last, n_signals, fps)
        for j, seg in enumerate(segments)
    ]


def segment_span(
    index: int, key: str, start: int, end: int, is_last: bool, n_signals: int, fps: float
) -> SegmentSpan:
    """Segment ``index`` (frames [start, end) of ``key``) with its windows
    (docs/methods.md#control-segments): the one rule ``segment_spans`` applies to every segment, for
    callers (the online accumulator) that track segment boundaries themselves. Only the segment's
    own sample times are computed (the zone lies inside the segment), so the cost is one segment's
    length."""
    lo_s, hi_s = start / fps, end / fps
    full = _clip(start, end, n_signals)
    t = np.arange(full.start, full.stop, dtype=np.float64) / fps
    local = _stable(t, index, index if is_last else index + 1, lo_s, hi_s)
    stable = range(full.start + local.start, full.start + local.stop) if local else range(0)
    return SegmentSpan(
        index=index,
        key=key,
        family=_family(key),
        start=start,
        end=end,
        full=full,
        stable=stable,
        lo_s=lo_s,
        hi_s=hi_s,
        length_s=(end - start) / fps,
    )


def equal_split_spans(keys: Sequence[str], n_signals: int, fps: float) -> list[SegmentSpan]:
    """Segments of a delivery without an action log, split as the reference splits it.

    ``dur`` is the time of the last signal sample, ``(n_signals - 1)/fps``; segment j of n
    spans ``lo = (j·dur)/n`` to ``hi = ((j+1)·dur)/n`` and its latency window is ``dur/n``.
    A sample belongs to the segment with ``lo <= t_i < hi`` (the last segment keeps ``t = dur``).
    ``start``/``end`` are the first and one-past-the-last sample of that span. Keys may repeat
    (e.g. WSW); each entry is one segment.
    """
    fps = check_fps(fps)
    if n_signals < 1:
        raise ValueError(f"an equal split needs at least one signal sample, got {n_signals}")
    if not keys:
        raise ValueError("an equal split needs at least one key")
    canon = _parse_keys(keys, "key")
    t = sample_times(n_signals, fps)
    dur = float(t[-1])
    n = len(canon)
    last = n - 1
    spans: list[SegmentSpan] = []
    for j, key in enumerate(canon):
        lo_s, hi_s = (j * dur) / n, ((j + 1) * dur) / n
        full = _time_range(t, lo_s, hi_s, closed_right=j == last)
        start = full.start if full else int(np.searchsorted(t, lo_s))
        spans.append(
            SegmentSpan(
                index=j,
                key=key,
                family=_family(key),
                start=start,
                end=full.stop if full else start,
                full=full if full else range(start, start),
                stable=_stable(t, j, last, lo_s, hi_s),
                lo_s=lo_s,
                hi_s=hi_s,
                length_s=dur / n,
            )
        )
    return spans


def equal_split_keys(meta: Mapping[str, object]) -> list[str] | None:
    """The keys of a delivery without an action log — its segments are the reference's equal
    split of the signal time — read from an episode's metadata (``EpisodeInfo.extra`` while it
    runs, the cache's meta after); None for an episode with per-frame keys."""
    keys = meta.get(EQUAL_SPLIT_KEYS)
    return [str(k) for k in keys] if isinstance(keys, list | tuple) and keys else None
